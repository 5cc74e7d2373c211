#pragma once
// Replays an ExecutionGraph on a SimGrid platform built from the cluster description.
// This header is SimGrid-free: only the engine's .cpp files include SimGrid (DESIGN.md).
#include "io/error.hpp"
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
  int iterations = 1;        // total, warm-up included
  int warmup_iterations = 0; // of those, the first ones, which the steady state is not looked for in
  // Stop replaying once iterations repeat exactly (steady_state.cpp) and extend the result to `iterations`: on for
  // graphs with no stochastic input (no stragglers, no random gossip peers, no parameter servers).
  bool skip_repeats = true;
  // Sample every tracked link's carried bytes during the replay (ReplayResult::link_samples), for a trace's
  // utilization counters.
  bool sample_links = false;
  NetworkModel network_model = NetworkModel::lv08;
  bool cross_traffic = true;
  bool show_progress = false; // print a progress line on stderr (for a terminal) during long replays
  // The most memory the simulation process may take, in bytes (0: no limit): checked against the estimate before the
  // replay (footprint.hpp), and against the child's resident memory while it runs. `memory_limit_text` says where
  // the figure comes from, for messages ("--max-memory", or 3/4 of this machine's memory).
  double memory_limit = 0;
  std::string memory_limit_text;
};

// One op's execution on a stream.
struct Interval {
  double start = 0;
  double end = 0;
  std::uint32_t op = 0;        // index in the rank's program
  std::uint32_t iteration = 0; // 0-based, warm-up included
};

struct RankTimeline {
  bool simulated = true;             // false: the rank had no program (another rank stood for it, coarse fidelity)
  std::vector<double> iteration_end; // time the rank finished each iteration
  std::array<std::vector<Interval>, graph::kStreamCount> streams; // busy intervals, per stream
  std::vector<double> bytes_sent;                                 // per iteration
  double bytes_received = 0;     // over the run, from parameter servers and gossip peers (collectives: see bytes_sent)
  std::uint64_t pushes_sent = 0; // gossip / AD-PSGD pushes to peers
  std::uint64_t pushes_received = 0; // ... and from peers
};

// One gradient a parameter server applied (recorded by the first shard, for the first key of each iteration: one
// record per worker iteration).
struct AppliedUpdate {
  double time = 0;
  int worker = 0;
  // Iterations the slowest running worker was behind this worker when it read the parameters this gradient was
  // computed on (0 under BSP; at most s under SSP).
  int staleness = 0;
  int update_lag = 0; // updates the shard applied between that read and this gradient's (Lian et al. 2015's tau)
};

struct ServerStats {
  int endpoint = 0;
  double bytes_received = 0;
  double bytes_sent = 0;
  std::uint64_t pushes = 0;           // gradients received
  std::uint64_t dropped = 0;          // late gradients of closed rounds (backup workers)
  std::vector<double> round_ends;     // synchronous: when each round of the first key closed
  std::vector<AppliedUpdate> updates; // first shard only
};

// One direction of one full-duplex link.
struct LinkLoad {
  std::string name;     // "node3-nic_UP"
  double bandwidth = 0; // bytes/s as configured (before the network model's factor)
  double bytes = 0;     // bytes carried over the whole run
};

// Each tracked link's bytes carried since the start (SimGrid's link-load plugin: the integral of the rate its flows
// get), read when an op ends, at least `interval` apart; the interval doubles (every other sample dropped) whenever
// the samples reach their cap, so any run keeps between half the cap and the cap. They cover the iterations
// replayed: those that repeat them are not.
struct LinkSamples {
  std::vector<double> times;
  std::vector<double> bytes; // times.size() x links.size(): sample-major, links in ReplayResult::links order
};

struct ReplayResult {
  std::vector<RankTimeline> ranks;
  std::vector<LinkLoad> links;
  LinkSamples link_samples; // with ReplayOptions::sample_links
  std::vector<ServerStats> servers;
  double simulated_seconds = 0; // end of the last iteration
  std::uint64_t transfers = 0;  // point-to-point flows simulated (repeated iterations: as if replayed)
  // Iterations the replay ran: all of them, or fewer when the last `repeat_period` of those repeated the
  // `repeat_period` before them exactly (every rank's timeline shifted by one time, the same bytes on every link): the
  // rest repeat them and were not replayed.
  int replayed_iterations = 0;
  int repeat_period = 0;
};

// The replay stalled: some ranks wait for something no other rank will ever do.
class DeadlockError : public RunError {
public:
  using RunError::RunError;
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
