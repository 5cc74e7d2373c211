// What each strategy makes of the gradients and the model (Kako et al. 2021's parameter exchange):
//   allreduce         each bucket all-reduced (compressed formats that cannot be summed are all-gathered)
//   parameter_server  each bucket pushed to the shards, split by size, and the shard's parameters pulled back; the
//                     servers run the optimizer (Li et al. 2014, "Scaling distributed machine learning with the
//                     parameter server"). Hierarchical: reduced to each node's first GPU first, which alone talks to
//                     the servers, then broadcast in the node (BytePS, Jiang et al. 2020). With period > 1 the model
//                     itself goes to the servers every `period` steps (SparkNet's averaging through the driver).
//   dpsgd             the model exchanged with the graph neighbours while the gradient is computed; the step mixes
//                     them (x_{k+1} = sum_j W_ij x_j - lr g(x_k), Lian et al. 2017)
//   adpsgd            the model pushed to a random peer, whose model comes back (Lian et al. 2018), beside compute
//   gossip            with probability p the model (and its sum weight) pushed to a random peer (Blot et al. 2016)
//   local_sgd         the model all-reduced every H steps (Lin et al. 2020, "Don't use large mini-batches")
//   easgd             the model sent to the centre variable's server every tau steps and the centre pulled back
//                     (Zhang et al. 2015)
#include "sim/collectives/detail.hpp"
#include "sim/plan/data_parallel.hpp"
#include "sim/strategies/compression.hpp"
#include "sim/strategies/mixing.hpp"

#include <fmt/format.h>

namespace dtsim::plan::detail {

using collectives::Operation;
using graph::Op;
using graph::Stream;
using strategies::Kind;

bool DataParallelPlanner::worker_steps() const {
  return !strategies::servers_step(strategy_);
}

// Models are exchanged (and pulled from servers) as the workers keep them: fp32 where the optimizer's weights are
// fp32 (fp32, tf32, amp), 16-bit where they are (fp16, bf16, fp8 with their master copy on the side).
double DataParallelPlanner::stored_weight_bytes() const {
  return grad_bytes();
}

double DataParallelPlanner::model_bytes() const {
  return static_cast<double>(s_.model.workload.parameter_count()) * stored_weight_bytes();
}

namespace {

// The matrix PowerSGD factors a layer's gradient as: a GEMM's weight is n rows of parameters / n (k x count, plus a
// bias column where there is one); anything else (norms, biases alone, embeddings: see the note) is a vector.
std::pair<std::int64_t, std::int64_t> weight_matrix(const models::Layer& layer) {
  const auto n = layer.gemm.n;
  if (n > 1 && layer.parameters % n == 0 && layer.parameters / n > 1) return {n, layer.parameters / n};
  return {layer.parameters, 1};
}

} // namespace

int DataParallelPlanner::node_group(int rank) const {
  return 1 + rank / s_.cluster.gpus_per_node;
}

int DataParallelPlanner::worker_nodes() const {
  return (layout_.workers + s_.cluster.gpus_per_node - 1) / s_.cluster.gpus_per_node;
}

// The bytes a bucket goes out as, and the collective that can carry them.
double DataParallelPlanner::wire_bytes(const Bucket& bucket, Operation& op, bool* recompressed) const {
  const auto& spec = s_.training.compression;
  if (spec.kind == strategies::CompressionKind::none) return bucket.bytes;
  double bytes = 0;
  for (std::size_t i : bucket.layers) {
    const auto& layer = s_.model.workload.layers[i];
    const auto [rows, cols] = weight_matrix(layer);
    const auto wire = strategies::wire_format(spec, static_cast<double>(layer.parameters), grad_bytes(), rows, cols);
    bytes += wire.total();
    op = wire.operation;
    if (recompressed) *recompressed = wire.recompressed;
  }
  return bytes;
}

// The compressor's kernel on the compute stream, once the bucket's gradients are in (DGC and PowerSGD's hooks run
// there, delaying the backward that follows).
std::uint32_t DataParallelPlanner::compress(const Bucket& bucket, std::size_t index, std::vector<std::uint32_t> deps) {
  const auto& spec = s_.training.compression;
  OpCost cost;
  for (std::size_t i : bucket.layers) {
    const auto& layer = s_.model.workload.layers[i];
    const auto [rows, cols] = weight_matrix(layer);
    const auto work = strategies::compression_work(spec, static_cast<double>(layer.parameters), grad_bytes(), rows,
                                                   cols, layout_.workers);
    calibration::KernelCost kernel;
    kernel.kind = work.flops > 0 && spec.kind == strategies::CompressionKind::powersgd
                      ? calibration::KernelClass::gemm
                      : calibration::KernelClass::memory;
    kernel.precision = s_.model.precision;
    kernel.flops = work.flops;
    kernel.bytes = work.bytes;
    kernel.name = fmt::format("compress ({})", strategies::to_string(spec.kind));
    // A DDP communication hook: issued from Python.
    kernel.host_seconds = s_.framework.host.python_dispatch + s_.framework.host.launch;
    cost.kernels.push_back(kernel);
  }
  return add_compute(fmt::format("compress bucket {} ({})", index, strategies::to_string(spec.kind)), cost,
                     std::move(deps));
}

std::uint32_t DataParallelPlanner::close_bucket(Bucket& bucket, std::size_t index) {
  std::vector<std::uint32_t> deps{bucket.ready_after};
  const bool compressed = s_.training.compression.kind != strategies::CompressionKind::none;
  if (compressed) deps = {compress(bucket, index, std::move(deps))};
  std::uint32_t id = 0;
  if (strategy_.kind == Kind::parameter_server) {
    id = push_bucket(bucket, index, std::move(deps));
  } else {
    const bool scatter = sharded_optimizer();
    Operation op = scatter ? Operation::reduce_scatter : Operation::all_reduce;
    bool recompressed = false;
    double bytes = wire_bytes(bucket, op, &recompressed);
    dense_bytes_ += bucket.bytes;
    compressed_bytes_ += bytes;
    // An all-gather's buffer is every worker's contribution (nccl-tests' convention).
    if (op == Operation::all_gather) bytes *= layout_.workers;
    const auto name = fmt::format("{} bucket {} ({:.2f} MiB)", collectives::to_string(op), index, bytes / (1 << 20));
    id = add_collective(op, bytes, name, std::move(deps));
    // A compressed all-reduce: after the all-to-all of the chunks (and each worker's averaging, priced with the
    // compressor), the all-gather of the recompressed chunks, as large.
    if (recompressed)
      id = add_collective(Operation::all_gather, bytes,
                          fmt::format("all-gather bucket {} (recompressed, {:.2f} MiB)", index, bytes / (1 << 20)),
                          {id});
  }
  bucket = Bucket{};
  return id;
}

// A bucket to the parameter servers: its gradients (sparse rows of embedding tables, compressed values) out, the
// updated parameters back.
std::uint32_t DataParallelPlanner::push_bucket(const Bucket& bucket, std::size_t index,
                                               std::vector<std::uint32_t> deps) {
  Operation op = Operation::all_reduce;
  double push = wire_bytes(bucket, op);
  double pull = bucket.elements * stored_weight_bytes();
  if (strategy_.sparse_embeddings)
    for (std::size_t i : bucket.layers) {
      const auto& layer = s_.model.workload.layers[i];
      if (!layer.sparse_gradient) continue;
      const double saved = 1 - touched_fraction(layer, s_.model.batch_per_gpu * strategy_.accumulation);
      push -= saved * static_cast<double>(layer.parameters) * grad_bytes() * (push / bucket.bytes);
      pull -= saved * static_cast<double>(layer.parameters) * stored_weight_bytes();
    }
  dense_bytes_ += bucket.bytes;
  compressed_bytes_ += push;
  const auto name = fmt::format("push-pull bucket {} ({:.2f} MiB)", index, push / (1 << 20));
  // A summation service with one pusher has nothing to sum: BytePS with one worker machine runs without its servers
  // (BytePS's docs/best-practice.md: with DMLC_NUM_WORKER=1 "BytePS will not use the parameter servers"), so the
  // node's reduce and broadcast are all there is.
  const int nodes = worker_nodes();
  const bool alone = strategy_.servers.sums_only && (strategy_.servers.hierarchical ? nodes : layout_.workers) == 1;
  const auto send = [&](std::vector<std::uint32_t> after) {
    if (alone) return after.back();
    if (strategy_.servers.partition_bytes > 0) return push_partitions(bucket.bytes, push, pull, name, std::move(after));
    if (strategy_.servers.tensors != strategies::TensorPlacement::split)
      return push_tensors(bucket, push, pull, static_cast<int>(index), name, std::move(after));
    return push_pull(push, pull, static_cast<int>(index), name, std::move(after));
  };
  if (!strategy_.servers.hierarchical) return send(std::move(deps));
  // BytePS: the node's GPUs reduce to the first, which alone pushes and pulls, then broadcasts.
  const int group = node_group(rank_);
  const bool leader = rank_ % s_.cluster.gpus_per_node == 0;
  auto last = add_collective(Operation::reduce, bucket.bytes, fmt::format("reduce bucket {} in node", index),
                             std::move(deps), group);
  const auto reduce = last;
  if (leader) last = send({last});
  const bool partitioned = strategy_.servers.partition_bytes > 0;
  const auto broadcast =
      add_collective(Operation::broadcast, bucket.elements * stored_weight_bytes(),
                     fmt::format("broadcast bucket {} in node", index), {last}, partitioned ? group + nodes : group);
  // Partitions in flight overlap the next buckets: their broadcasts go on a stream of their own (Stream::pull).
  // BytePS's root launches each NCCL call on every GPU of the node together (launched_together): the reduce once
  // every GPU's gradient is ready (its ready table), the broadcast once the leader's pull is in.
  if (partitioned) {
    program_->ops[broadcast].stream = Stream::pull;
    for (auto id : {reduce, broadcast})
      std::get<graph::Collective>(program_->ops[id].body).launched_together = true;
  }
  return broadcast;
}

std::uint32_t DataParallelPlanner::push_pull(double push_bytes, double pull_bytes, int key, std::string name,
                                             std::vector<std::uint32_t> deps) {
  graph::PushPull op;
  op.key = key;
  const auto shards = static_cast<double>(layout_.server_endpoints.size());
  for (std::size_t j = 0; j < layout_.server_endpoints.size(); ++j)
    op.shards.push_back({static_cast<int>(j), push_bytes / shards, pull_bytes / shards});
  return add_op(Op{std::move(name), Stream::comm, op, std::move(deps)});
}

// Parameters that live whole on one server each (TensorFlow's placements): the bucket's gradients go to the servers
// holding their layers, each server its layers' share of the push and of the pull (a bucket of one layer: one
// server), every one in flight at once. A server holding a large layer (VGG-16's first fully connected layer, 74% of
// its parameters) takes that share of every worker's traffic through its one NIC.
std::uint32_t DataParallelPlanner::push_tensors(const Bucket& bucket, double push_bytes, double pull_bytes, int key,
                                                std::string name, std::vector<std::uint32_t> deps) {
  std::map<int, double> elements; // server -> the bucket's parameters it holds
  for (std::size_t i : bucket.layers)
    if (layout_.layer_server[i] >= 0)
      elements[layout_.layer_server[i]] += static_cast<double>(s_.model.workload.layers[i].parameters);
  double total = 0;
  for (const auto& [server, n] : elements)
    total += n;
  if (total <= 0) return push_pull(push_bytes, pull_bytes, key, std::move(name), std::move(deps));
  graph::PushPull op;
  op.key = key;
  for (const auto& [server, n] : elements)
    op.shards.push_back({server, push_bytes * n / total, pull_bytes * n / total});
  // TensorFlow's executor runs each variable's send to its server, and the fetch of its new value, as graph ops of
  // their own as soon as their inputs are ready: no stream orders them, so pushes to different servers are in flight
  // together.
  op.overlapped = true;
  return add_op(Op{std::move(name), Stream::comm, std::move(op), std::move(deps)});
}

// BytePS's partitions: ceil(dense / partition_bytes) parts of the bucket, the iteration's g-th part to server g mod
// servers (round robin: the even spread BytePS's key hash aims for), each a key of its own. The worker puts them all
// out at once; pushes to one server queue behind each other, and each part's sum comes back as its round closes,
// while later parts still go out: the NIC sends and receives at once, where a bucket answered whole waits for its
// last byte in before its first byte goes back.
std::uint32_t DataParallelPlanner::push_partitions(double dense_bytes, double push_bytes, double pull_bytes,
                                                   std::string name, std::vector<std::uint32_t> deps) {
  // At most kMaxPipelineChunks (1024) a bucket, larger ones in larger parts: the replay keeps a transfer in flight per
  // part, and past a thousand parts the pipeline's fill, one part's round trip, is under 0.1% of the bucket's.
  const double parts = collectives::detail::pipeline_chunks(dense_bytes, strategy_.servers.partition_bytes);
  const auto servers = static_cast<int>(layout_.server_endpoints.size());
  graph::PushPull op;
  op.key = next_partition_;
  for (int p = 0; p < static_cast<int>(parts); ++p)
    op.shards.push_back({(next_partition_ + p) % servers, push_bytes / parts, pull_bytes / parts, p});
  op.overlapped = true;
  next_partition_ += static_cast<int>(parts);
  return add_op(
      Op{fmt::format("{} in {} partitions", name, op.shards.size()), Stream::comm, std::move(op), std::move(deps)});
}

// Exchanges that run beside the iteration's compute: posted first on the communication stream, waiting for nothing.
void DataParallelPlanner::add_model_exchange_before() {
  const double model = model_bytes();
  switch (strategy_.kind) {
  case Kind::dpsgd: {
    graph::Exchange exchange;
    if (neighbours_.empty()) neighbours_ = strategies::neighbours(strategy_.graph, layout_.workers);
    for (int peer : neighbours_[rank_]) {
      exchange.transfers.push_back({peer, model, true});
      exchange.transfers.push_back({peer, model, false});
    }
    if (exchange.transfers.empty()) return;
    exchange_ = add_op(Op{"exchange model with neighbours", Stream::comm, exchange, {}});
    return;
  }
  case Kind::gossip: // the model and its sum weight (one fp32)
    add_op(Op{"gossip model to a random peer", Stream::comm, graph::Push{peers_[rank_], model + 4, 0}, {}});
    return;
  case Kind::adpsgd:
    add_op(Op{"average model with a random peer", Stream::comm, graph::Push{peers_[rank_], model, model}, {}});
    return;
  default:
    return;
  }
}

// Model averaging every `period` steps, after the step.
void DataParallelPlanner::add_model_exchange_after(std::uint32_t step) {
  const double model = model_bytes();
  std::uint32_t id = 0;
  if (strategy_.kind == Kind::local_sgd && layout_.workers > 1)
    id = add_collective(Operation::all_reduce, model, "allreduce model (average)", {step});
  else if (strategies::uses_servers(strategy_) && !strategy_.servers.sums_only) // summation servers: gradients only
    id = push_pull(model, model, 0,
                   strategy_.kind == Kind::easgd ? "elastic exchange with the centre" : "push-pull model (average)",
                   {step});
  else
    return;
  program_->ops[id].every = static_cast<std::uint32_t>(strategy_.period);
}

} // namespace dtsim::plan::detail
