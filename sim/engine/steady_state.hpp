#pragma once
// Engine-private: iterations that repeat (steady_state.cpp). An observer of the replay: told as each rank finishes an
// iteration, it compares the last periods of what the ranks' timelines and the link ledger recorded, and once they
// repeat it says the replay may stop; the result is then extended to every iteration.
#include "sim/engine/engine.hpp"
#include "sim/engine/replay_observers.hpp"
#include "sim/graph/execution_graph.hpp"

#include <cstdint>
#include <vector>

namespace dtsim::engine::detail {

struct RankState; // replay.hpp

class SteadyState {
public:
  // `ranks` are read when iterations end, not here: the replay fills them once its programs are indexed.
  SteadyState(const graph::ExecutionGraph& graph, const ReplayOptions& options, LinkLedger& ledger,
              const std::vector<RankState>& ranks);

  // Decides whether the graph can settle (no stochastic input, a short period, iterations to spare) and, when it
  // can, has the ledger keep each iteration apart.
  void look_for();
  bool watching() const { return period_ > 0; }
  // The last rank to finish `it` checks whether the last period repeats the one before it.
  void rank_finished_iteration(std::uint32_t it);
  bool stopped() const { return stop_after_ >= 0; }
  // The replayed iterations, then their repeats.
  void extend(ReplayResult& result) const;

private:
  bool repeats(std::uint32_t last, double& shift) const;

  const graph::ExecutionGraph& graph_;
  const ReplayOptions& options_;
  LinkLedger& ledger_;
  const std::vector<RankState>& ranks_;
  int period_ = 0;               // iterations a repeat spans (ops that run every k-th iteration: k); 0: never skip
  std::int64_t stop_after_ = -1; // the last iteration replayed, once the steady state is found
  double repeat_shift_ = 0;      // how much later each period repeats the one before it
  int ranks_with_programs_ = 0;
  std::vector<int> ranks_through_; // per iteration: ranks that have finished it
};

} // namespace dtsim::engine::detail
