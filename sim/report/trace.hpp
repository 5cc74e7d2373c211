#pragma once
// A run's timeline in the Chrome trace-event format, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"
#include "topologies/cluster.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <vector>

namespace dtsim::report {

// What the trace keeps (`dtsim run --trace-ranks`, `--trace-iterations`).
struct TraceOptions {
  std::vector<int> ranks;      // ascending; empty: every simulated rank (up to max_ranks)
  std::vector<int> iterations; // 0-based, the warm-up included; ascending; empty: every iteration
  // Without `ranks`: at most this many simulated ranks, spread evenly over the job (the first and the last among
  // them), so that a thousand-GPU run does not write a trace no viewer opens; 0: every one.
  std::size_t max_ranks = 0;
};

// The ranks the trace keeps: `ranks`, or the simulated ones (sampled down to max_ranks), ascending.
std::vector<int> traced_ranks(const engine::ReplayResult& replay, const TraceOptions& options);

// One process per node and in it one thread per stream of each of its GPUs ("GPU 3 compute"); every op a complete
// event with what it moved or computed in its args (bytes, FLOPs, the collective's operation, algorithm, protocol
// and group); an arrow from each send to its receive (flow events); a "network" process with the utilization of the
// 16 busiest links as counters (from the replay's link samples, where it took them), and each node's planned memory
// per GPU as a counter. Times in microseconds, rounded to whole nanoseconds, and each op's duration no longer than
// its end's rounded time less its start's, so that ops back to back on a thread never overlap in a viewer's
// arithmetic. A collective's args carry the algorithm and protocol it ran (`automatic` resolved as NCCL would).
nlohmann::json chrome_trace(const plan::Plan& plan, const engine::ReplayResult& replay,
                            const topologies::ClusterSpec& cluster, const TraceOptions& options = {});

// A one-iteration timeline of up to eight of a chrome_trace's ranks, spread over the job, for the HTML report: the
// events of its last iteration, times in ms from that iteration's first start, each with what it is ("compute",
// "tensor-parallel communication", "pipeline transfers", ...).
nlohmann::json timeline_sample(const nlohmann::json& trace);

} // namespace dtsim::report
