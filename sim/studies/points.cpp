// Points run in child processes, tagged by outcome, and kept for --resume.
#include "sim/studies/points.hpp"
#include "sim/studies/resume.hpp"

#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <cmath>

#include <iostream>
#include <string_view>
#include <unistd.h>

namespace dtsim::studies {

std::string run_here(const scenario::Scenario& s, const MemoryLimit& limit) {
  // A point's process replays once (it cannot fork a replay of its own): a compression warm-up's dense stage is
  // dtsim run's (simulate), not a sweep or comparison point's.
  const auto plan = checked_plan(s, limit);
  const auto replay = engine::replay_in_this_process(s.cluster, plan.graph, replay_options(s, limit));
  return report::to_json(report::summarize(s, plan, replay)).dump();
}

namespace {

// The tag, then the text ("R" + text trips GCC 12's -Wrestrict false positive, GCC bug 105651).
std::string tagged(char tag, std::string_view text) {
  std::string out(1, tag);
  out += text;
  return out;
}

} // namespace

engine::ChildJob point_job(std::function<std::string()> simulate) {
  return [simulate = std::move(simulate)]() -> std::string {
    try {
      return tagged('R', simulate());
    } catch (const scenario::ScenarioError& e) {
      return tagged('B', e.what());
    } catch (const plan::PlanError& e) {
      return tagged('B', e.what());
    } catch (const engine::ResourceError& e) {
      return tagged('B', e.what());
    }
  };
}

std::string unreadable(const engine::ChildOutcome& outcome) {
  if (!outcome.ok) return {}; // a failure's text: nothing to read back
  if (outcome.output.empty() || (outcome.output.front() != 'R' && outcome.output.front() != 'B'))
    return "not a point's outcome";
  if (outcome.output.front() == 'B') return {};
  try {
    const auto r = report::run_result_from_json(nlohmann::json::parse(outcome.output.substr(1)));
    // Checked as the reader checks a scenario: a kept point whose figures no simulation gives (an iteration of
    // -1e300 s would win every ranking) is simulated again.
    const auto physical = [](double v) { return std::isfinite(v) && v >= 0; };
    const auto& i = r.iteration;
    if (!(std::isfinite(i.mean) && i.mean > 0 && physical(i.p50) && physical(i.p90) && physical(i.p99) &&
          physical(i.min) && physical(i.max)) ||
        !physical(r.throughput) || !physical(r.price_per_hour) || !physical(r.cost_of_run) ||
        !physical(r.cost_per_epoch) || !physical(r.epoch_seconds))
      return "its figures are not physical (an iteration that is not a positive time, a negative or infinite "
             "throughput, time or cost)";
  } catch (const nlohmann::json::parse_error& e) {
    return fmt::format("its result is not valid JSON (at byte {})", e.byte);
  } catch (const nlohmann::json::exception&) {
    return "its result is not one dtsim wrote (a field missing, or of another type)";
  } catch (const std::exception& e) {
    return fmt::format("its result cannot be read: {}", e.what());
  }
  return {};
}

std::vector<engine::ChildOutcome> run_points(const std::vector<engine::ChildJob>& work, int jobs,
                                             const SweepProgress& progress, const PointBook& book) {
  const auto label = [&](std::size_t i) {
    return i < book.labels.size() ? book.labels[i] : fmt::format("point {}", i + 1);
  };
  std::vector<engine::ChildOutcome> outcomes(work.size());
  std::vector<std::size_t> pending; // indices of the jobs to run
  std::size_t in_shard = 0;
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (book.store && !book.store->in_shard(i)) continue; // another shard's
    ++in_shard;
    if (book.store)
      if (auto kept = book.store->load(book.keys.at(i), label(i), unreadable)) {
        outcomes[i] = std::move(*kept);
        continue;
      }
    if (book.store && book.store->merge_only())
      throw scenario::ScenarioError("merge", "",
                                    fmt::format("{} ({}) is in none of the directories merged: that shard did not "
                                                "finish it; run the shard again with the same --out",
                                                label(i), book.store->shard_text(i)));
    pending.push_back(i);
  }
  const std::size_t kept = in_shard - pending.size();
  if (progress && kept > 0) progress(kept, in_shard);
  std::vector<engine::ChildJob> to_run;
  for (const auto i : pending)
    to_run.push_back(work[i]);
  const auto on_finished = [&](std::size_t j, const engine::ChildOutcome& outcome) {
    const auto i = pending[j];
    if (book.store) book.store->save(book.keys.at(i), label(i), outcome);
    if (outcome.abnormal) // said at once: the table shows it too, but only once every point is done
      std::cerr << fmt::format("{}dtsim: {}: {}\n", ::isatty(STDERR_FILENO) ? "\r\033[K" : "", label(i),
                               outcome.output);
  };
  auto ran = engine::run_in_children(
      to_run, jobs,
      [&](std::size_t done, std::size_t, std::size_t) { progress ? progress(kept + done, in_shard) : void(); },
      on_finished, book.limits);
  for (std::size_t j = 0; j < pending.size(); ++j)
    outcomes[pending[j]] = std::move(ran[j]);
  if (book.store && book.store->sharded()) book.store->finish_shard(in_shard, pending.size());
  return outcomes;
}

} // namespace dtsim::studies
