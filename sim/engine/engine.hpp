#pragma once
// Replays an ExecutionGraph on a SimGrid platform built from the cluster description.
// This header is SimGrid-free: only the engine's .cpp files include SimGrid (DESIGN.md).
#include "sim/graph/execution_graph.hpp"
#include "topologies/cluster.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::engine {

enum class NetworkModel : std::uint8_t { lv08, cm02 };

struct ReplayOptions {
  int iterations = 1; // total, warm-up included
  NetworkModel network_model = NetworkModel::lv08;
  bool cross_traffic = true;
  bool show_progress = false; // print a progress line on stderr (for a terminal) during long replays
};

// One op's execution on a stream.
struct Interval {
  double start = 0;
  double end = 0;
  std::uint32_t op = 0;        // index in the rank's program
  std::uint32_t iteration = 0; // 0-based, warm-up included
};

struct RankTimeline {
  std::vector<double> iteration_end;                              // time the rank finished each iteration
  std::array<std::vector<Interval>, graph::kStreamCount> streams; // busy intervals, per stream
  std::vector<double> bytes_sent;                                 // per iteration
};

// One direction of one full-duplex link.
struct LinkLoad {
  std::string name;     // "node3-nic_UP"
  double bandwidth = 0; // bytes/s as configured (before the network model's factor)
  double bytes = 0;     // bytes carried over the whole run
};

struct ReplayResult {
  std::vector<RankTimeline> ranks;
  std::vector<LinkLoad> links;
  double simulated_seconds = 0; // end of the last iteration
  std::uint64_t transfers = 0;  // point-to-point flows simulated
};

// The replay stalled: some ranks wait for something no other rank will ever do.
class DeadlockError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Runs the replay in a child process (SimGrid allows one engine per process) and returns its result.
// Throws DeadlockError, or std::runtime_error if the simulation failed.
ReplayResult replay(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                    const ReplayOptions& options);

// The same, in this process. Call it at most once per process; replay() is what callers want.
ReplayResult replay_in_this_process(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                                    const ReplayOptions& options);

// Binary encoding of a result, used to bring it back from the child process.
std::string encode(const ReplayResult& result);
ReplayResult decode(const std::string& bytes);

} // namespace dtsim::engine
