#pragma once
// The per-rank execution graph: what each GPU rank does in one training iteration, as ops on three streams
// with dependencies (compute and communication, as CUDA streams; input, the host's data loader). A plain
// value type built by sim/plan and replayed by sim/engine; it is testable without SimGrid and a different
// engine could replay it.
//
// Replay semantics (as CUDA streams): the ops of one stream run one at a time in program order; an op
// also waits for every op in `deps` (same rank, earlier in the program, usually on the other stream).
// Ranks synchronize only through communication (collectives, send/recv). Iterations repeat the
// program; a rank starts iteration i+1 when all of its ops of iteration i are done.
#include "sim/collectives/schedule.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace dtsim::graph {

// `input` is the host's data loading (DataLoader workers decoding and augmenting the next batch): it runs beside
// the GPU's streams, and the rank's next iteration starts only once its batch is ready.
enum class Stream : std::uint8_t { compute = 0, comm = 1, input = 2 };
inline constexpr int kStreamCount = 3;
std::string_view to_string(Stream s);

// A kernel on the compute stream, or the data loader's work on the input stream. Its duration was priced by the plan;
// flops and bytes are kept for reports and for engines that price ops themselves.
struct Compute {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
};

// A collective over a group, replayed step by step from its schedule (sim/collectives).
struct Collective {
  collectives::Operation op = collectives::Operation::all_reduce;
  collectives::Algorithm algorithm = collectives::Algorithm::ring; // `automatic` is resolved by the engine
  int group = 0;                                                   // index into ExecutionGraph::groups
  double bytes = 0;                   // buffer size as nccl-tests counts it (collectives::Request::bytes)
  int root = 0;                       // position of the root (broadcast, reduce, send_recv)
  bool aggregate = false;             // fidelity: each phase as one set of concurrent flows (collectives::aggregate)
  double reduce_seconds_per_byte = 0; // GPU time to reduce one byte of input (from the GPU profile)
  std::vector<double> matrix;         // all_to_all_v: bytes from position i to j at [i * n + j]
};

// Point-to-point transfer; the peer posts the matching op with `send` flipped.
struct SendRecv {
  int peer = 0;
  double bytes = 0;
  bool send = true;
};

using OpBody = std::variant<Compute, Collective, SendRecv>;

struct Op {
  std::string name; // shown in traces: "layer3.2.conv2 bwd", "allreduce bucket 4"
  Stream stream = Stream::compute;
  OpBody body;
  std::vector<std::uint32_t> deps; // indices of earlier ops of the same program
};

// One program; ranks with the same role share it (all ranks of plain data parallelism do).
struct Program {
  std::vector<Op> ops;
};

struct ExecutionGraph {
  std::vector<Program> programs;
  std::vector<std::uint32_t> rank_program; // program index of each rank
  std::vector<std::vector<int>> groups;    // communicator groups: the ranks of each, in ring order

  int rank_count() const { return static_cast<int>(rank_program.size()); }
  const Program& program_of(int rank) const { return programs.at(rank_program.at(rank)); }
};

// Checks structural rules (deps point backwards, groups and peers exist, ranks of a group agree on
// the sequence of collectives they post). Throws std::invalid_argument naming the op at fault.
void validate(const ExecutionGraph& graph);

} // namespace dtsim::graph
