#pragma once
// The per-rank execution graph: what each GPU rank does in one training iteration, as ops on three streams
// with dependencies (compute and communication, as CUDA streams; input, the host's data loader). A plain
// value type built by sim/plan and replayed by sim/engine; it is testable without SimGrid and a different
// engine could replay it.
//
// Replay semantics (as CUDA streams): the ops of one stream run one at a time in program order; an op
// also waits for every op in `deps` (same rank, earlier in the program, usually on the other stream).
// Ranks synchronize only through communication (collectives, send/recv). Iterations repeat the
// program; a rank starts iteration i+1 when all of its ops of iteration i are done. An op with `every` = k runs in
// iterations k-1, 2k-1, ... only (local SGD's model averaging every H steps) and is skipped, done at once, otherwise.
// Parameter servers are not ranks: they answer the ranks' PushPull ops as ExecutionGraph::servers says.
#include "sim/collectives/schedule.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace dtsim::graph {

// `input` is the host's data loading (DataLoader workers decoding and augmenting the next batch): it runs beside
// the GPU's streams, and the rank's next iteration starts only once its batch is ready. `p2p` carries a pipeline's
// activations and their gradients between stages (Megatron-LM posts them on their own NCCL communicator), so a
// stage waiting for its neighbour does not hold up the data-parallel collectives on `comm`.
// `tensor` carries the tensor-parallel collectives Megatron-Core overlaps with the GEMMs that produce or consume them
// (--tp-comm-overlap: userbuffers' own streams).
// `host`: a framework's background thread on the CPU (Horovod's fusion cycle), Compute ops only, as `input`.
// `p2p_back`: a pipeline's gradients going back a stage when sends overlap compute (Megatron-LM's overlap_p2p_comm):
// each direction then posts its next receive as soon as its last send is issued and waits for it only where the data
// is needed, so a receive from the next stage never queues behind one from the previous stage. Both ends of a
// transfer post it on the same stream, and streams match their sends and receives apart.
// `pull`: the summed gradients coming back from parameter servers, broadcast inside the node (BytePS), while `comm`
// reduces and pushes the later buckets: BytePS runs each stage of its pipeline in a loop of its own
// (byteps/common/core_loops.cc), so a bucket's broadcast never holds up the next bucket's reduce.
enum class Stream : std::uint8_t {
  compute = 0,
  comm = 1,
  input = 2,
  p2p = 3,
  tensor = 4,
  host = 5,
  p2p_back = 6,
  pull = 7
};
inline constexpr int kStreamCount = 8;
// A pair's transfers on one stream as one number: sends and receives match in order per (from, to, stream), in the
// engine's mailboxes and in the estimate alike.
inline std::uint64_t p2p_channel(int from, int to, Stream stream, int ranks) {
  return (static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(ranks) + static_cast<std::uint64_t>(to)) *
             kStreamCount +
         static_cast<std::uint64_t>(stream);
}
std::string_view to_string(Stream s);

// A kernel on the compute stream, or the data loader's work on the input stream. Its duration was priced by the plan;
// flops and bytes are kept for reports and for engines that price ops themselves.
struct Compute {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
  // Kernels the plan priced with the kernel cost model: the part of `seconds` the SM clock sets and the energy of
  // their work (calibration/sustained_clock.hpp), from which the plan sets the clock its rank sustains. 0 for work
  // priced otherwise (measured trace kernels, the host's loading, closed-form communication).
  double math_seconds = 0;
  double joules = 0;
};

// A collective over a group, replayed step by step from its schedule (sim/collectives).
struct Collective {
  collectives::Operation op = collectives::Operation::all_reduce;
  collectives::Algorithm algorithm = collectives::Algorithm::ring;   // `automatic` is resolved by the engine
  collectives::Protocol protocol = collectives::Protocol::automatic; // NCCL's protocol; resolved by the engine
  int group = 0;                                                     // index into ExecutionGraph::groups
  double bytes = 0;                   // buffer size as nccl-tests counts it (collectives::Request::bytes)
  int root = 0;                       // position of the root (broadcast, reduce, send_recv)
  bool aggregate = false;             // fidelity: each phase as one set of concurrent flows (collectives::aggregate)
  double reduce_seconds_per_byte = 0; // GPU time to reduce one byte of input (from the GPU profile)
  // Coarse fidelity: the ranks whose traffic this op's flows carry (bytes already counts them all). NCCL's choices
  // (algorithm, protocol, channels) follow one rank's bytes, and its per-rank rate cap and connections scale by it.
  double stands_for = 1;
  // The members launch it together, when one of them signals (BytePS's local ranks: its root tells the others when a
  // pulled partition is in), so no member's kernel holds SMs while it waits for another's. Otherwise each member's
  // NCCL kernel holds its channels' SMs from its own launch, waiting included.
  bool launched_together = false;
  // all_to_all_v: bytes from position i to j at [i * n + j]; shared by the ops that carry the same one (every member
  // of an expert group posts its layer's: 128 experts' matrices copied per rank took gigabytes).
  std::shared_ptr<const std::vector<double>> matrix;
};

// Point-to-point transfer; the peer posts the matching op with `send` flipped. A send is posted and done at once
// (NCCL's isend: the transfer starts when the peer's receive is posted, the sender goes on); the receive ends when
// the data is in. Sends and receives between two ranks match in the order they are posted.
struct SendRecv {
  int peer = 0;
  double bytes = 0;
  bool send = true;
};

// Concurrent transfers with several peers, all posted at once (D-PSGD's exchange with its neighbours); the peers post
// the mirror image.
struct Transfer {
  int peer = 0;
  double bytes = 0;
  bool send = true;
};
struct Exchange {
  std::vector<Transfer> transfers;
};

// A one-sided push into a peer's inbox: the peer posts nothing and takes it whenever it comes (GoSGD's gossip,
// AD-PSGD). peers[i] is the peer of iteration i (-1: none that iteration); the list repeats if shorter than the
// run. With reply_bytes > 0 the peer's inbox answers with that many bytes (AD-PSGD's pairwise averaging: the peer's
// model comes back) and the op ends once the answer is in.
struct Push {
  std::vector<int> peers;
  double bytes = 0;
  double reply_bytes = 0;
};

// A worker's round trip to the parameter servers: its share of the gradient to each shard at once, then each
// shard's parameters back (the pull). When a server answers is its schedule's business (Server). A bucket pushed in
// partitions is one shard a partition, each with a key of its own: pushes to one server queue, answers come back as
// each partition's round closes.
struct Shard {
  int server = 0; // index into ExecutionGraph::servers
  double push_bytes = 0;
  double pull_bytes = 0;
  int key = 0; // added to PushPull::key: the partition's own key (0 where the shards split one key)
};
struct PushPull {
  std::vector<Shard> shards;
  int key = 0; // which part of the model (a gradient bucket): servers aggregate and count rounds per key
  // The stream goes on once the pushes are posted, and the op ends when its answers are in, so several buckets'
  // partitions are in flight at once (BytePS's push and pull loops, byteps/common/core_loops.cc). Otherwise the
  // stream waits for the answers, as a framework's blocking push_pull call does.
  bool overlapped = false;
};

using OpBody = std::variant<Compute, Collective, SendRecv, Exchange, Push, PushPull>;

// Which parallel dimension an op's communication serves, for the report's split of exposed communication.
enum class Axis : std::uint8_t { data, tensor, pipeline, expert, context };
std::string_view to_string(Axis a);

struct Op {
  std::string name; // shown in traces: "layer3.2.conv2 bwd", "allreduce bucket 4"
  Stream stream = Stream::compute;
  OpBody body;
  std::vector<std::uint32_t> deps; // indices of earlier ops of the same program
  std::uint32_t every = 1;         // runs in every `every`-th iteration only (the last of each period)
  Axis axis = Axis::data;          // communication ops: the dimension they serve; compute ops priced as
                                   // communication (closed-form tensor-parallel collectives) say so too
};

// Compute work its GPU's speed sets (compute_slowdown): the compute stream's kernels, not communication priced as
// compute (closed-form tensor-parallel collectives) nor the data loader's work beside the GPU.
inline bool paced_by_gpu(const Op& op) {
  return op.stream == Stream::compute && op.axis == Axis::data;
}

// One program; ranks with the same role share it (all ranks of plain data parallelism do).
// An empty program: the rank is not simulated (in coarse fidelity one rank stands for its tensor-parallel group).
struct Program {
  std::vector<Op> ops;
};

// When a parameter-server shard answers a push (Ho et al. 2013):
//   synchronous   once the round has (pushers - backup) gradients, or every pusher still running (BSP; with backup
//                 workers, Chen et al. 2016, the late gradients of a closed round are dropped and answered at once)
//   asynchronous  at once (ASP)
//   bounded       at once, unless the pusher is more than `staleness` updates ahead of the slowest (SSP, Petuum)
enum class ServerSchedule : std::uint8_t { synchronous, asynchronous, bounded };

struct Server {
  int endpoint = 0; // the GPU whose host runs it (its node's NIC carries the traffic)
  ServerSchedule schedule = ServerSchedule::synchronous;
  int staleness = 0;
  int backup = 0;
  double aggregate_seconds_per_byte = 0; // synchronous: summing each pushed byte into the round's gradient
  double update_seconds_per_byte = 0;    // applying the optimizer to a byte of the shard (after a round, or a push)
  double channel_rate = 0; // bytes/s a worker's push to it and its answer move at most (an RPC channel); 0: no cap
};

struct ExecutionGraph {
  std::vector<Program> programs;
  std::vector<std::uint32_t> rank_program; // program index of each rank
  std::vector<std::vector<int>> groups;    // communicator groups: the ranks of each, in ring order
  std::vector<Server> servers;             // parameter-server shards (PushPull ops address them)
  // Per rank, per iteration (a row of one: every iteration): the factor its compute ops take longer by (paced_by_gpu:
  // its GPU's speed, stragglers); empty (or an empty row): 1.
  std::vector<std::vector<double>> compute_slowdown;
  // Coarse fidelity: the ranks whose network traffic each simulated rank's carries (its tensor-parallel peers behind
  // the same NIC, whose ops are Collective::stands_for that many). Each GPU's own PCIe link to its NIC carries their
  // traffic too, so the platform widens it by this; 1 at every other fidelity.
  double nic_share = 1;

  int rank_count() const { return static_cast<int>(rank_program.size()); }
  const Program& program_of(int rank) const { return programs.at(rank_program.at(rank)); }
};

// Checks structural rules (deps point backwards, groups and peers exist, ranks of a group agree on
// the sequence of collectives they post). Throws std::invalid_argument naming the op at fault.
void validate(const ExecutionGraph& graph);

} // namespace dtsim::graph
