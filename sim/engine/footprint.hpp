#pragma once
// What a replay will hold in memory, estimated from its plan before it runs, and the limit it is held to. A
// simulation past the limit is refused with what drives its size; one that grows past it anyway (the estimate is a
// model, not a measurement) is stopped by the parent, which watches each child's resident memory
// (run_in_children). Either way the machine is never exhausted and the user is told why, with exit status 2.
#include "io/error.hpp"
#include "sim/engine/engine.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dtsim::engine {

// Measured on this project's build machine with tools/bench/footprint.sh (peak resident memory of the simulation
// process, GNU time's maxrss, against counts from the plan); see that script for the runs behind each figure.
inline constexpr double kProcessBytes = 40.0 * (1 << 20); // a replay of 4 single-GPU nodes peaks at 36 MB
inline constexpr double kBytesPerRank = 46.0 * (1 << 10); // quickstart at 1,024 to 12,288 nodes: 44 KiB a rank
inline constexpr double kBytesPerInterval = 64;           // GPT-2, 100 to 1,000 iterations of 396 ops: 64 B an op
inline constexpr double kBytesPerGroupSlot = 4;           // each rank's position in each communicator group
inline constexpr double kBytesPerGraphOp = 256;           // an op of a program, with its name and dependencies

struct Footprint {
  std::int64_t ranks = 0;           // the cluster's GPUs (SimGrid hosts)
  std::int64_t simulated_ranks = 0; // those with a program (coarse fidelity lets one rank stand for others)
  int iterations = 0;               // replayed, warm-up included
  double intervals = 0;             // op executions over the run: each keeps one interval of the timeline
  double group_slots = 0;           // communicator groups x ranks
  double graph_ops = 0;             // ops of the distinct programs
  double bytes = 0;                 // the estimated peak resident memory of the simulation process
};

Footprint estimate_footprint(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                             const ReplayOptions& options);

// This machine's physical memory (sysconf), and the limit a simulation is held to unless --max-memory gives another:
// three quarters of it, leaving the rest to the system and the parent process.
double physical_memory();
// The address space this process may take (RLIMIT_AS, ulimit -v), bytes; 0 when unlimited.
double address_space_limit();
double default_memory_limit();

// A simulation that needs more memory than its limit: the user's to change (exit status 2), like bad input.
class ResourceError : public InputError {
public:
  using InputError::InputError;
};

// Bytes as the memory messages write them: "1.5 GiB", "977 MiB".
std::string describe_bytes(double bytes);

// How a limit is described in messages: "16.0 GiB (--max-memory)" or "17.9 GiB (3/4 of this machine's 23.9 GiB;
// --max-memory sets another)", with the share of parallel jobs when there are several.
std::string describe_limit(double limit, bool from_flag, int jobs);

// Throws ResourceError when `footprint.bytes` exceeds `options.memory_limit` (0: no limit), saying what the memory
// goes to, which fields drive it, and how many ranks or iterations would fit.
void check_footprint(const Footprint& footprint, const ReplayOptions& options);

} // namespace dtsim::engine
