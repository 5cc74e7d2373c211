// The closed-form price of a model-parallel layout (layout_price.hpp says what it combines and what it leaves out).
#include "sim/plan/layout_price.hpp"
#include "sim/graph/estimate.hpp"
#include "sim/plan/gpu_speed.hpp"
#include "sim/plan/model_parallel.hpp"
#include "sim/plan/pipeline_schedule.hpp"
#include "sim/plan/stage_partition.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim::plan {

using calibration::Stretch;
using collectives::Operation;

// One shape's costs per pipeline unit, for one micro-batch on one rank.
struct LayoutPricer::Shape {
  struct Unit {
    Stretch forward, backward;                      // kernels at burst clocks, the host in steady state
    double tensor_forward = 0, tensor_backward = 0; // closed-form tensor-parallel collectives
    double balance = 0;      // forward and backward kernel seconds: what the planner balances stages by
    double output_bytes = 0; // its last op's activations as sent to the next stage
    detail::UnitFootprint memory;
  };
  std::vector<Unit> units;
  std::map<int, std::vector<std::vector<std::size_t>>> chunks; // model chunks -> each chunk's units
};

namespace {

// A pass over a unit's ops on a launch timeline run twice: the second pass starts with the host's lead (or lag) the
// first left, as in the middle of an iteration.
Stretch steady_pass(const std::vector<PricedOp>& ops) {
  calibration::LaunchTimeline timeline;
  for (const auto& op : ops)
    op.run(timeline);
  Stretch second;
  for (const auto& op : ops)
    second += op.run(timeline);
  return second;
}

// ZeRO-3's pass over one stage's units, as the planner orders its comm stream: each unit's weights all-gathered once
// the compute two units back is done (one unit computing, one prefetched) and the stream is free, its compute once
// they are in, and on the last backward its gradients reduce-scattered after it, ahead of the next unit's gather.
struct ShardedPass {
  std::vector<double> forward, backward, gather, reduce; // per unit in pass order (`reduce` in backward's)
  double time(const std::vector<double>& compute, bool reducing) const {
    double comm = 0, now = 0;
    std::vector<double> done(compute.size(), 0.0);
    for (std::size_t u = 0; u < compute.size(); ++u) {
      comm = std::max(comm, u >= 2 ? done[u - 2] : 0.0) + gather[u];
      now = std::max(now, comm) + compute[u];
      done[u] = now;
      if (reducing) comm = std::max(comm, now) + reduce[u];
    }
    return std::max(now, comm);
  }
};

// What a unit's costs depend on: every field of each of its layers but the name, and of the block only whether there
// is one (recomputation reruns blocks). A field added to models::Layer belongs here.
std::vector<double> signature(const std::vector<models::Layer>& layers, const std::vector<std::size_t>& unit) {
  std::vector<double> key;
  for (auto i : unit) {
    const auto& l = layers[i];
    const auto n = [](auto v) { return static_cast<double>(v); };
    key.insert(key.end(), {n(l.kind),
                           l.forward_flops,
                           l.backward_flops,
                           n(l.parameters),
                           n(l.input_elements),
                           n(l.output_elements),
                           n(l.gemm.m),
                           n(l.gemm.n),
                           n(l.gemm.k),
                           n(l.gemm.count),
                           n(l.attention.sequence),
                           n(l.attention.heads),
                           n(l.attention.head_dim),
                           n(l.attention.causal),
                           n(l.attention.dropout),
                           n(l.moe.experts),
                           n(l.moe.top_k),
                           l.moe.capacity_factor,
                           n(l.sparse_gradient),
                           n(l.saved_elements),
                           n(l.saved_fixed_bytes),
                           n(l.block >= 0),
                           n(l.tensor_split),
                           n(l.memory_op),
                           n(l.bias),
                           n(l.vocabulary_columns)});
  }
  return key;
}

Stretch scaled(const Stretch& s, double k) {
  return {s.seconds * k, s.math_seconds * k, s.joules * k};
}

} // namespace

ScheduleTimes time_schedule(const std::vector<std::vector<PipelineSlot>>& orders, const std::vector<double>& forward,
                            const std::vector<double>& backward, const std::vector<double>& transfers, int m,
                            bool overlapped) {
  const int p = static_cast<int>(orders.size()), chunks = static_cast<int>(forward.size());
  std::vector<double> forward_end(static_cast<std::size_t>(chunks) * m, -1), backward_end = forward_end;
  ScheduleTimes out{std::vector<double>(p, 0.0), std::vector<double>(chunks, 0.0)};
  std::vector<std::size_t> next(p, 0);
  std::size_t left = 0;
  for (const auto& o : orders)
    left += o.size();
  while (left > 0) {
    bool moved = false;
    for (int s = 0; s < p; ++s)
      for (auto& at = next[s]; at < orders[s].size(); ++at) {
        const auto& slot = orders[s][at];
        const int c = slot.chunk * p + s;
        const int from = slot.forward ? c - 1 : c + 1;
        double start = out.stage_end[s];
        if (from >= 0 && from < chunks) {
          const double ready =
              (slot.forward ? forward_end : backward_end)[static_cast<std::size_t>(from) * m + slot.micro_batch];
          if (ready < 0) break; // not yet: another stage moves first
          const double transfer = transfers[std::min(c, from)];
          start = overlapped ? std::max(start, ready + transfer) : std::max(start, ready) + transfer;
        }
        const double end = start + (slot.forward ? forward[c] : backward[c]);
        (slot.forward ? forward_end : backward_end)[static_cast<std::size_t>(c) * m + slot.micro_batch] = end;
        if (!slot.forward) out.last_backward_end[c] = end;
        out.stage_end[s] = end;
        --left;
        moved = true;
      }
    if (!moved) throw std::logic_error("the pipeline orders wait on each other for ever");
  }
  return out;
}

LayoutPricer::LayoutPricer(const scenario::Scenario& base) : base_(base) {
  const auto& w = base.model.workload;
  if (base.model.trace)
    unsupported_ = "a trace of ops";
  else if (!base.groups.empty())
    unsupported_ = "a cluster of mixed GPUs";
  else if (w.expert_count() > 0)
    unsupported_ = "expert layers";
  else if (base.parallelism.context > 1)
    unsupported_ = "context parallelism";
  else if (base.parallelism.overlap.tensor || base.parallelism.overlap.param_gather)
    unsupported_ = "overlapped tensor-parallel communication or parameter gathers";
  else if (base.training.strategy.kind != strategies::Kind::allreduce)
    unsupported_ = "a strategy other than all-reduce";
  else if (base.training.offload != scenario::Offload::none)
    unsupported_ = "offloading";
  else if (base.lifecycle.spot.enabled && base.lifecycle.spot.policy == lifecycle::SpotPolicy::redundancy)
    unsupported_ = "redundant computation (Bamboo)";
}

LayoutPricer::~LayoutPricer() = default;

LayoutPricer::Shape& LayoutPricer::shape_of(const LayoutSpec& l, const topologies::ClusterSpec& cluster) {
  const auto key = std::make_tuple(l.tensor, l.sequence_parallel, l.micro_batch, static_cast<int>(l.recompute));
  auto& slot = shapes_[key];
  if (slot) return *slot;
  slot = std::make_unique<Shape>();
  const auto& layers = base_.model.workload.layers;
  auto context = CostContext::of(base_);
  context.batch = l.micro_batch;
  context.recompute = l.recompute;
  const auto precision = base_.model.precision;
  const double element = calibration::activation_bytes(precision);
  std::vector<models::Layer> shared;
  for (const auto& layer : layers)
    shared.push_back(shard_layer(layer, l.tensor, l.sequence_parallel, 1));
  std::map<std::pair<int, double>, double> tensor_seconds;
  const auto collective = [&](const TensorCollective& c) {
    const double each_element = c.element_bytes > 0 ? c.element_bytes : element;
    const double bytes = c.elements / c.calls * l.micro_batch * each_element;
    const auto key = std::make_pair(static_cast<int>(c.op), bytes);
    auto found = tensor_seconds.find(key);
    if (found == tensor_seconds.end())
      found =
          tensor_seconds
              .emplace(key, detail::tensor_collective_closed_form(c.op, bytes, l.tensor, cluster, base_.gpu).seconds)
              .first;
    return found->second * c.calls;
  };
  const auto comm_seconds = [&](const TensorComm& comm) {
    double seconds = 0;
    for (const auto& c : {comm.before, comm.after})
      if (c) seconds += collective(*c);
    return seconds;
  };
  // Units alike (a transformer's blocks) are priced once.
  std::map<std::vector<double>, Shape::Unit> alike;
  for (const auto& unit : pipeline_units(base_.model.workload)) {
    auto [found, added] = alike.try_emplace(signature(layers, unit));
    if (!added) {
      slot->units.push_back(found->second);
      continue;
    }
    Shape::Unit& u = found->second;
    std::vector<PricedOp> forward, backward;
    for (auto i : unit) {
      forward.emplace_back(forward_cost(shared[i], context), base_.gpu);
      backward.emplace_back(backward_cost(shared[i], context), base_.gpu);
      for (const auto* op : {&forward.back(), &backward.back()})
        for (const auto& t : op->times)
          u.balance += t.seconds;
      if (l.tensor > 1) {
        u.tensor_forward += comm_seconds(tensor_comm(layers[i], true, l.tensor, l.sequence_parallel));
        u.tensor_backward += comm_seconds(tensor_comm(layers[i], false, l.tensor, l.sequence_parallel));
        // Full recomputation reruns the block's forward, its collectives with it.
        if (l.recompute == scenario::Recompute::full && layers[i].block >= 0)
          u.tensor_backward += comm_seconds(tensor_comm(layers[i], true, l.tensor, l.sequence_parallel));
      }
    }
    std::reverse(backward.begin(), backward.end());
    u.forward = steady_pass(forward);
    u.backward = steady_pass(backward);
    u.output_bytes = static_cast<double>(layers[unit.back()].output_elements) * l.micro_batch * element / l.tensor;
    u.memory = detail::unit_footprint(shared, unit, l.micro_batch, precision, base_.model.attention, l.recompute);
    slot->units.push_back(u);
  }
  return *slot;
}

// Each stage computes at the pace of its slowest GPU (gpu_speed.hpp): its tensor-parallel collectives wait for it at
// every layer, and the replicas for the slowest replica's stage at the reduction. Priced once per grid: the search
// prices many layouts of each.
const std::vector<double>& LayoutPricer::stage_paces(const ParallelLayout& grid) {
  const auto key = std::make_tuple(grid.tensor(), grid.pipeline(), grid.data());
  if (const auto found = stage_paces_.find(key); found != stage_paces_.end()) return found->second;
  const auto gpus = gpu_time_factors(grid.world(), base_.stragglers.gpu_speed_sigma, base_.run.seed);
  std::vector<double> paces(static_cast<std::size_t>(grid.pipeline()), 0.0);
  for (int r = 0; r < grid.world(); ++r) {
    double& pace = paces[static_cast<std::size_t>(grid.coord(r).pp)];
    pace = std::max(pace, gpus[static_cast<std::size_t>(r)]);
  }
  return stage_paces_.emplace(key, std::move(paces)).first->second;
}

LayoutPrice LayoutPricer::price(const LayoutSpec& l, const topologies::ClusterSpec& cluster) {
  if (!unsupported_.empty()) throw std::invalid_argument("the closed form does not cover " + unsupported_);
  if (l.tensor <= 1 && l.pipeline <= 1) throw std::invalid_argument("the closed form prices model-parallel layouts");
  auto& shape = shape_of(l, cluster);
  const int p = l.pipeline, v = l.virtual_stages, chunks = p * v, m = l.micro_batches;
  const auto& units = shape.units;

  // The planner's split: the framework's uniform one, or units balanced by their kernel time over the chunks.
  auto split = shape.chunks.find(chunks);
  if (split == shape.chunks.end()) {
    auto counts = framework_split(base_, units.size(), chunks);
    if (counts.empty()) {
      std::vector<double> seconds;
      for (const auto& u : units)
        seconds.push_back(u.balance);
      counts = balanced_split_by_chunk(std::vector<std::vector<double>>(chunks, seconds));
    }
    std::vector<std::vector<std::size_t>> members(chunks);
    for (std::size_t c = 0, next = 0; c < members.size(); ++c)
      for (int k = 0; k < counts[c]; ++k)
        members[c].push_back(next++);
    split = shape.chunks.emplace(chunks, std::move(members)).first;
  }
  const auto& chunk_units = split->second;

  // Where the ranks sit: the base's placement order, the layout's sizes.
  auto spec = base_.parallelism;
  spec.tensor = l.tensor;
  spec.pipeline = p;
  spec.data = l.data;
  spec.expert = 1;
  spec.context = 1;
  spec.micro_batches = m;
  spec.schedule = l.schedule;
  spec.virtual_stages = v;
  spec.sequence_parallel = l.sequence_parallel;
  const ParallelLayout grid(spec);
  const int gpn = cluster.gpus_per_node;
  const int sharers = std::max(1, gpn / l.tensor); // each node's ranks coarse fidelity simulates
  const double nic_share = detail::coarse_nic_share(l.tensor, cluster);
  const auto rank_at = [&](int stage, int dp) {
    GridCoord c;
    c.pp = stage;
    c.dp = dp;
    return grid.rank(c);
  };
  const auto crossing = [&](int a, int b) { return cluster.node_of(a) != cluster.node_of(b); };
  const auto& pace = stage_paces(grid);
  const double reduced = detail::reduced_gradient_bytes(base_, spec);
  // A collective at the graph estimate's price, its bytes through the NIC coarse fidelity shares where it leaves the
  // node, its algorithm NCCL's tuning's (as the planner's requests).
  const auto closed_form = [&](Operation op, double bytes, const std::vector<int>& group, bool crosses) {
    graph::Collective c;
    c.op = op;
    c.stands_for = crosses ? nic_share : 1;
    c.bytes = bytes * c.stands_for;
    c.algorithm = collectives::Algorithm::automatic;
    c.aggregate = true;
    c.reduce_seconds_per_byte = base_.gpu.reduce_seconds_per_byte();
    return graph::collective_seconds(cluster, c, group, sharers);
  };

  LayoutPrice price;
  // Memory, stage by stage, by the planner's own function.
  auto memory = detail::stage_memory_shape(base_, spec, l.zero_stage, l.recompute, l.micro_batch, l.data, l.data);
  memory.capacity = price.capacity_bytes = base_.gpu.memory_bytes;
  std::vector<detail::UnitFootprint> footprints;
  for (const auto& u : units)
    footprints.push_back(u.memory);
  // Each stage's pipeline order, shared by every layout of the same schedule.
  const auto key = std::make_tuple(static_cast<int>(l.schedule), p, m, v);
  auto orders = orders_.find(key);
  if (orders == orders_.end()) {
    std::vector<std::vector<PipelineSlot>> each;
    for (int s = 0; s < p; ++s)
      each.push_back(pipeline_order(l.schedule, p, s, m, v));
    orders = orders_.emplace(key, std::move(each)).first;
  }
  for (int s = 0; s < p; ++s)
    price.memory_bytes =
        std::max(price.memory_bytes,
                 detail::stage_memory_of(s, chunk_units, footprints, memory, orders->second[s], false).total());
  if (!price.fits()) return price; // its iteration is not needed: it cannot run

  // A collective over the data-parallel ranks of stage s, priced once per (node count, operation, bytes, how the
  // members sit on nodes): every stage's group, and every layout's with the same placement, costs the same.
  std::vector<std::vector<int>> members(p), placement(p);
  const auto data_collective = [&](Operation op, double bytes, int stage) {
    auto& group = members[stage];
    if (group.empty()) {
      for (int d = 0; d < l.data; ++d)
        group.push_back(rank_at(stage, d));
      for (int r : group)
        placement[stage].push_back(cluster.node_of(r) - cluster.node_of(group.front()));
    }
    auto key = std::make_tuple(l.nodes, static_cast<int>(op), bytes, sharers, placement[stage]);
    if (const auto found = collectives_.find(key); found != collectives_.end()) return found->second;
    const double seconds = closed_form(op, bytes, group, placement[stage].back() != 0);
    return collectives_.emplace(std::move(key), seconds).first->second;
  };
  // One boundary's transfer, from the last unit of chunk `c` to the next stage.
  const auto transfer = [&](int c) {
    const int from = rank_at(c % p, 0), to = rank_at((c + 1) % p, 0);
    const double bytes = units[chunk_units[c].back()].output_bytes * (crossing(from, to) ? nic_share : 1);
    return graph::transfer_seconds(cluster, from, to, bytes, sharers);
  };
  // Per virtual stage: one micro-batch's forward and backward at its stage's sustained clock (tensor-parallel
  // collectives included), and its units' backward times and gradient bytes, last unit first.
  const bool sharded = l.zero_stage >= 3 && l.data > 1;
  const double weight_bytes = working_weight_bytes(base_.model.precision);
  std::vector<double> forward(chunks, 0.0), backward(chunks, 0.0), transfers(chunks, 0.0), steps(p, 0.0);
  std::vector<std::vector<std::pair<double, double>>> unit_backward(chunks);
  double sharded_last_backward = 0; // what the reductions add to ZeRO-3's last backward
  for (int s = 0; s < p; ++s) {
    Stretch kernels;
    double params = 0;
    int tensors = 0;
    for (int c = s; c < chunks; c += p)
      for (auto u : chunk_units[c]) {
        kernels += units[u].forward;
        kernels += units[u].backward;
        params += units[u].memory.dense;
        tensors += units[u].memory.tensors;
      }
    const PricedOp step(iteration_passes(l.zero_stage >= 1 ? params / l.data : params, tensors, base_), base_.gpu);
    calibration::LaunchTimeline timeline;
    const auto step_stretch = step.run(timeline);
    auto iteration = scaled(kernels, m);
    iteration += step_stretch;
    auto clock = calibration::sustained_clock(base_.gpu, iteration);
    if (!clock.capped) clock = {};
    const auto at_clock = [&](const Stretch& k) { return clock.stretched(k.seconds, k.math_seconds) * pace[s]; };
    steps[s] = at_clock(step_stretch);
    for (int c = s; c < chunks; c += p) {
      if (c + 1 < chunks) transfers[c] = transfer(c);
      ShardedPass pass;
      for (auto u : chunk_units[c]) {
        const auto& unit = units[u];
        const double f = at_clock(unit.forward) + unit.tensor_forward;
        const double b = at_clock(unit.backward) + unit.tensor_backward;
        forward[c] += f;
        backward[c] += b;
        unit_backward[c].emplace(unit_backward[c].begin(), b, unit.memory.dense * reduced);
        if (!sharded) continue;
        pass.forward.push_back(f);
        pass.backward.insert(pass.backward.begin(), b);
        pass.gather.push_back(data_collective(Operation::all_gather, unit.memory.dense * weight_bytes, s));
        pass.reduce.insert(pass.reduce.begin(),
                           data_collective(Operation::reduce_scatter, unit.memory.dense * reduced, s));
      }
      if (sharded) { // ZeRO-3 (one stage, one chunk): each pass with its gathers, the last backward with its reductions
        forward[c] = pass.time(pass.forward, false);
        std::reverse(pass.gather.begin(), pass.gather.end());
        backward[c] = pass.time(pass.backward, false);
        sharded_last_backward = pass.time(pass.backward, true) - backward[c];
      }
    }
  }

  // The schedule, timed.
  const auto timed =
      time_schedule(orders->second, forward, backward, transfers, m, scenario::overlaps_p2p(base_.framework, spec));

  // Each stage's gradients: buckets closed as each chunk's last backward passes their units, each reduced after the one
  // before it; all after backward where they do not overlap it.
  const auto op = l.zero_stage >= 1 ? Operation::reduce_scatter : Operation::all_reduce;
  const bool overlapped = spec.overlap.grad_reduce;
  std::vector<double> ends = timed.stage_end;
  if (sharded) ends[0] += sharded_last_backward;
  for (int s = 0; s < p && l.data > 1 && !sharded; ++s) {
    std::vector<int> order;
    for (int c = s; c < chunks; c += p)
      order.push_back(c);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return timed.last_backward_end[a] < timed.last_backward_end[b]; });
    double comm = 0;
    for (int c : order) {
      double clock = timed.last_backward_end[c] - backward[c], bucket = 0;
      for (std::size_t i = 0; i < unit_backward[c].size(); ++i) {
        clock += unit_backward[c][i].first;
        bucket += unit_backward[c][i].second;
        if (bucket >= base_.training.bucket_bytes || i + 1 == unit_backward[c].size()) {
          comm = std::max(comm, overlapped ? clock : timed.stage_end[s]) + data_collective(op, bucket, s);
          bucket = 0;
        }
      }
    }
    ends[s] = std::max(ends[s], comm);
  }
  // Tied embeddings: their gradients all-reduced between the first and the last stage.
  const auto transformer = scenario::transformer_of(base_.model);
  if (p > 1 && transformer && transformer->tied_embeddings) {
    const int first = rank_at(0, 0), last = rank_at(p - 1, 0);
    const double words = static_cast<double>(transformer->vocabulary * transformer->hidden) / l.tensor;
    const double both = std::max(ends.front(), ends.back()) +
                        closed_form(Operation::all_reduce, words * reduced, {first, last}, crossing(first, last));
    ends.front() = ends.back() = both;
  }
  // The gradient norm (a 4-byte all-reduce over the model's ranks) holds every stage until the last one is done.
  if (base_.clips_gradients()) {
    const double all = *std::max_element(ends.begin(), ends.end());
    std::fill(ends.begin(), ends.end(), all);
  }
  double iteration = 0;
  for (int s = 0; s < p; ++s) {
    double end = ends[s] + steps[s];
    if (l.zero_stage >= 1 && l.zero_stage < 3 && l.data > 1) {
      double params = 0;
      for (int c = s; c < chunks; c += p)
        for (auto u : chunk_units[c])
          params += units[u].memory.dense;
      end += data_collective(Operation::all_gather, params * weight_bytes, s);
    }
    iteration = std::max(iteration, end);
  }
  price.iteration_seconds = iteration;
  return price;
}

} // namespace dtsim::plan
