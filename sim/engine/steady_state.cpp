// Iterations that repeat. A replay of compute, collectives and point-to-point transfers with no stochastic input (no
// stragglers) is a deterministic function of its state at an iteration's start.
// After a few iterations it settles: each iteration is the one before shifted by a constant time (or, with ops that
// run every k-th iteration, each k iterations the k before them). Once every rank's last period of iterations is the
// period before it shifted by one common time, interval for interval, with the same bytes sent by every rank and
// carried by every link, the replay stops, and the rest of the run is that period again, shifted: the report of a
// 12-iteration run then costs the replay of a few.
//
// The check reads only what was recorded. Bytes must agree to kBytesTolerance of their size; times to kTimeTolerance of
// the period's length, not exactly: SimGrid's solver settles each flow's rate and end to its own precision (its
// "precision/timing" and "maxmin/precision"), so a 64-rank ring's ranks were measured drifting 3.4 ns apart an
// iteration of 263 ms (1.3e-8) for as long as it ran, at the same figures every iteration. A run's report with and
// without skipping agrees to that order (the ResNet-50 data-parallel scenario on 64 nodes: 1.5e-7 at most).
#include "sim/engine/steady_state.hpp"
#include "sim/engine/replay.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace dtsim::engine::detail {
namespace {

constexpr double kTimeTolerance = 1e-7;   // of the period's length
constexpr double kBytesTolerance = 1e-12; // relative
constexpr int kLongestPeriod = 8;         // ops that run every k-th iteration, k larger than this: never skipped

double tolerance(double shift) {
  return kTimeTolerance * shift;
}

bool same_bytes(double a, double b) {
  return std::abs(a - b) <= kBytesTolerance * std::max(std::abs(a), std::abs(b));
}

// A stream's intervals of one iteration: they are contiguous and in iteration order.
std::pair<std::size_t, std::size_t> intervals_of(const std::vector<Interval>& stream, std::uint32_t it) {
  const auto [lo, hi] =
      std::equal_range(stream.begin(), stream.end(), Interval{0, 0, 0, it},
                       [](const Interval& a, const Interval& b) { return a.iteration < b.iteration; });
  return {static_cast<std::size_t>(lo - stream.begin()), static_cast<std::size_t>(hi - stream.begin())};
}

// Graphs replayed to the end: stochastic inputs (stragglers' slowdowns that change from iteration to iteration,
// gossip's random peers, parameter servers' arrival-ordered rounds), and D-PSGD's exchanges, whose received bytes are
// counted for the run, not per iteration. A GPU's own speed is the same every iteration, so its iterations repeat.
bool replays_every_iteration(const graph::ExecutionGraph& graph) {
  if (!graph.servers.empty()) return true;
  for (const auto& slowdown : graph.compute_slowdown)
    if (std::adjacent_find(slowdown.begin(), slowdown.end(), std::not_equal_to<>()) != slowdown.end()) return true;
  for (const auto& program : graph.programs)
    for (const auto& op : program.ops)
      if (!std::holds_alternative<graph::Compute>(op.body) && !std::holds_alternative<graph::Collective>(op.body) &&
          !std::holds_alternative<graph::SendRecv>(op.body))
        return true;
  return false;
}

} // namespace

SteadyState::SteadyState(const graph::ExecutionGraph& graph, const ReplayOptions& options, LinkLedger& ledger,
                         const std::vector<RankState>& ranks)
    : graph_(graph), options_(options), ledger_(ledger), ranks_(ranks) {}

void SteadyState::look_for() {
  if (!options_.skip_repeats || replays_every_iteration(graph_)) return;
  int period = 1;
  for (const auto& program : graph_.programs)
    for (const auto& op : program.ops) {
      period = std::lcm(period, static_cast<int>(op.every));
      if (period > kLongestPeriod) return;
    }
  // Two periods after the warm-up are compared; skipping starts after them, so there must be more iterations.
  if (options_.warmup_iterations + 2 * period >= options_.iterations) return;
  period_ = period;
  ranks_through_.assign(options_.iterations, 0);
  ledger_.keep_iterations(options_.iterations);
  for (int r = 0; r < graph_.rank_count(); ++r)
    if (!graph_.program_of(r).ops.empty()) ++ranks_with_programs_;
}

void SteadyState::rank_finished_iteration(std::uint32_t it) {
  if (stopped() || ++ranks_through_[it] < ranks_with_programs_) return;
  // Every rank is through `it`: the link bytes of iterations older than the two periods compared are no longer needed
  // one by one (their sum is in the ledger's totals).
  if (it >= static_cast<std::uint32_t>(2 * period_)) ledger_.forget_iteration(it - 2 * period_);
  if (it + 1 >= static_cast<std::uint32_t>(options_.iterations)) return; // the last one: nothing left to skip
  double shift = 0;
  if (repeats(it, shift)) {
    stop_after_ = it;
    repeat_shift_ = shift;
  }
}

// Whether iterations (last - period, last] repeat (last - 2 period, last - period], and by how much later.
bool SteadyState::repeats(std::uint32_t last, double& shift) const {
  const auto period = static_cast<std::uint32_t>(period_);
  if (last + 1 < static_cast<std::uint32_t>(options_.warmup_iterations) + 2 * period) return false;
  bool first = true;
  for (std::uint32_t it = last + 1 - period; it <= last; ++it) {
    if (ledger_.iteration_transfers(it) != ledger_.iteration_transfers(it - period)) return false;
    const auto& now = ledger_.iteration_bytes(it);
    const auto& before = ledger_.iteration_bytes(it - period);
    for (std::size_t l = 0; l < ledger_.bytes().size(); ++l)
      if (!same_bytes(l < now.size() ? now[l] : 0, l < before.size() ? before[l] : 0)) return false;
  }
  for (int r = 0; r < graph_.rank_count(); ++r) {
    if (graph_.program_of(r).ops.empty()) continue;
    const auto& timeline = ranks_[r].timeline;
    for (std::uint32_t it = last + 1 - period; it <= last; ++it) {
      const double later = timeline.iteration_end[it] - timeline.iteration_end[it - period];
      if (first) shift = later, first = false;
      if (std::abs(later - shift) > tolerance(shift)) return false;
      if (!same_bytes(timeline.bytes_sent[it], timeline.bytes_sent[it - period])) return false;
      for (const auto& stream : timeline.streams) {
        const auto [lo, hi] = intervals_of(stream, it);
        const auto [lo_before, hi_before] = intervals_of(stream, it - period);
        if (hi - lo != hi_before - lo_before) return false;
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const auto& a = stream[lo + i];
          const auto& b = stream[lo_before + i];
          if (a.op != b.op || std::abs(a.start - b.start - shift) > tolerance(shift) ||
              std::abs(a.end - b.end - shift) > tolerance(shift))
            return false;
        }
      }
    }
  }
  return !first && shift > 0;
}

void SteadyState::extend(ReplayResult& result) const {
  result.replayed_iterations = options_.iterations;
  if (!stopped()) return;
  const auto last = static_cast<std::uint32_t>(stop_after_);
  const auto total = static_cast<std::uint32_t>(options_.iterations);
  const auto period = static_cast<std::uint32_t>(period_);
  result.replayed_iterations = static_cast<int>(last + 1);
  result.repeat_period = period_;
  // Iteration i > last repeats iteration source(i) of the last replayed period, (i - source) / period periods later.
  const auto source = [&](std::uint32_t it) { return last + 1 - period + (it - last - 1) % period; };

  for (int r = 0; r < graph_.rank_count(); ++r) {
    auto& timeline = result.ranks[r];
    if (graph_.program_of(r).ops.empty()) continue; // its zeros already cover every iteration
    timeline.iteration_end.resize(last + 1);
    for (std::uint32_t it = last + 1; it < total; ++it) {
      timeline.iteration_end.push_back(timeline.iteration_end[it - period] + repeat_shift_);
      timeline.bytes_sent[it] = timeline.bytes_sent[source(it)];
    }
    for (auto& stream : timeline.streams) {
      stream.erase(intervals_of(stream, last + 1).first + stream.begin(), stream.end());
      for (std::uint32_t it = last + 1; it < total; ++it) {
        const auto [lo, hi] = intervals_of(stream, it - period);
        std::vector<Interval> repeat(stream.begin() + static_cast<std::ptrdiff_t>(lo),
                                     stream.begin() + static_cast<std::ptrdiff_t>(hi));
        for (auto& interval : repeat) {
          interval.start += repeat_shift_;
          interval.end += repeat_shift_;
          interval.iteration = it;
        }
        stream.insert(stream.end(), repeat.begin(), repeat.end());
      }
    }
    result.simulated_seconds = std::max(result.simulated_seconds, timeline.iteration_end.back());
  }

  // Links and transfers: what the replayed iterations carried (less what the streams began after the last one),
  // then each repeat's.
  result.transfers = 0;
  for (std::uint32_t it = 0; it < total; ++it)
    result.transfers += ledger_.iteration_transfers(it <= last ? it : source(it));
  for (std::size_t l = 0; l < result.links.size(); ++l) {
    double bytes = ledger_.bytes()[l];
    for (std::uint32_t it = last + 1; it < total; ++it) {
      const auto& began = ledger_.iteration_bytes(it);
      const auto& repeat = ledger_.iteration_bytes(source(it));
      bytes += (l < repeat.size() ? repeat[l] : 0) - (l < began.size() ? began[l] : 0);
    }
    result.links[l].bytes = bytes;
  }
}

} // namespace dtsim::engine::detail
