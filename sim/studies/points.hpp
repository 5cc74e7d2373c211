#pragma once
// The points runner: simulations run in child processes (SimGrid keeps one engine per process), the plumbing that
// sweep, compare, search, train and validate share.
#include "sim/engine/child_process.hpp"
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::studies {

class ResumeStore; // sim/studies/resume.hpp

// Called as points finish: how many are done of how many.
using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

// One simulation in this process, as a child runs it: the result as JSON text for the parent.
std::string run_here(const scenario::Scenario& s, const MemoryLimit& limit = {});

// A point's job, its output tagged: 'R' and the result's JSON, or 'B' and why the input cannot run (the scenario is
// invalid for the point, the job does not fit in GPU memory, the simulation would pass its memory limit: what
// `dtsim run` exits 2 for). Any other failure is thrown, as before.
engine::ChildJob point_job(std::function<std::string()> simulate);

// Why a point's outcome cannot be read back (empty: it can); what --resume checks of a kept one.
std::string unreadable(const engine::ChildOutcome& outcome);

// How a command's points are named and kept: a label per job ("nodes=64") for messages, and with --resume the store
// and each job's key in it.
struct PointBook {
  std::vector<std::string> labels;
  ResumeStore* store = nullptr;
  std::vector<std::string> keys; // with a store
  MemoryLimit limits;            // each child's, watched while it runs
};

// Runs one child per job, `jobs` at a time, reporting progress as points finish. With a store, kept points are read
// back instead of run, and the others kept as they finish. A child that dies without reporting is said on stderr
// with its point's label. Under a sharded store only this shard's points run (the others' outcomes stay empty, failed
// with no message), and the store records the shard's end (ResumeStore::finished_shard) for the command to report.
std::vector<engine::ChildOutcome> run_points(const std::vector<engine::ChildJob>& work, int jobs,
                                             const SweepProgress& progress, const PointBook& book = {});

// A point's result (the child's JSON), or why it failed (and whether because of its input).
template <class Point> void take_outcome(Point& point, engine::ChildOutcome& outcome) {
  point.ok = outcome.ok && !outcome.output.empty() && outcome.output.front() == 'R';
  if (point.ok) {
    point.result = report::run_result_from_json(nlohmann::json::parse(outcome.output.substr(1)));
    return;
  }
  // Ok with the 'B' tag: the job ran and said its input cannot run; or the parent stopped it at its memory limit.
  point.bad_input = outcome.ok || outcome.over_memory;
  point.error = outcome.ok ? outcome.output.substr(1) : std::move(outcome.output);
}

} // namespace dtsim::studies
