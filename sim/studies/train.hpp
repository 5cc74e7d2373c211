#pragma once
// `dtsim train`: a whole training run, from the first step to the last, as a distribution over seeded trials. The
// iteration time comes from the per-iteration simulation of the scenario (simulate(), once per cluster shape); the run
// (checkpoints, failures, restarts, spot interruptions) is replayed by the run-level engine, one trial per process.
#include "sim/lifecycle/lifecycle.hpp"
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/points.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::studies {

// Mean and nearest-rank percentiles of one figure over the trials.
struct TrialStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
TrialStats trial_stats(std::vector<double> values);
// One figure of each trial (`field` of a TrialResult), over the trials.
template <class Field> TrialStats trial_stats(const std::vector<lifecycle::TrialResult>& trials, Field field) {
  std::vector<double> values;
  for (const auto& t : trials)
    values.push_back(static_cast<double>(field(t)));
  return trial_stats(std::move(values));
}
// Useful iteration time over wall time.
double goodput(const lifecycle::TrialResult& t);

struct TrainResult {
  std::string name;
  int nodes = 0, gpus = 0;
  std::int64_t steps = 0;
  std::string steps_from; // "training.steps" or "dataset: E epochs of S samples in batches of B"
  lifecycle::JobTimes job;
  lifecycle::CheckpointSize checkpoint_size;
  std::string storage_tier;
  bool young = false;        // the interval is Young's
  double mtbi = 0;           // the job's mean time between interruptions, seconds (infinite: none modeled)
  double mtbr = 0;           // ... between those that roll it back to its checkpoint (fewer under redundancy)
  double expected_waste = 0; // first order, as a fraction of wall time (0 without interruptions)
  std::vector<std::string> failure_components;
  std::vector<lifecycle::TrialResult> trials;
  std::uint64_t seed = 0;
  bool iteration_given = false; // the iteration time was given (--iteration-time), not simulated
  double gpu_watts = 0;         // one GPU's mean draw training (0: its profile has no power figures)
  nlohmann::json scenario;
};

// The run's length in iterations: training.steps, or the dataset's epochs in global batches. Throws ScenarioError
// (naming /training/steps) when the scenario gives neither.
// `other_ways`: how else the caller can be given the length, said first where the scenario has none ("the plan's
// steps or tokens, or in the scenario ").
std::int64_t run_steps(const scenario::Scenario& s, std::string* from = nullptr, std::string_view other_ways = {});

// The bytes of one checkpoint of the scenario's model, and each node's and GPU's share of a fully parallel save.
lifecycle::CheckpointSize checkpoint_size(const scenario::Scenario& s);

// The run's times for the replay from one iteration's results: checkpoints, restarts, the interval (Young's where the
// scenario asks for it). `iteration_draining`: seconds per iteration while an asynchronous checkpoint drains.
lifecycle::JobTimes job_times(const scenario::Scenario& s, double iteration, double iteration_draining,
                              bool* young = nullptr);

// The scenario with each node's NIC rate reduced by what an asynchronous checkpoint's drain takes (its share of
// the NIC: the storage's rate per node, at most half the NIC, max-min's fair share against training's own traffic).
// Also returns the drain's rate per node in `drain_rate` (bytes/s).
scenario::Scenario while_draining(const scenario::Scenario& s, double* drain_rate = nullptr);

// --iteration-time: a measured step time ("6.1s") from 1 ms to a day, or nullopt for an empty text (simulated).
// Throws scenario::ScenarioError naming the flag.
std::optional<double> measured_iteration_time(const std::string& text);

// Whether a whole run takes more than one iteration time: an elastic job's smaller shapes, redundant computation's
// iteration with and without it. train() then simulates them and refuses a given `iteration`.
bool iterates_in_several_shapes(const scenario::Scenario& s);

// Simulates the iteration (and, for an asynchronous checkpoint over the NICs, the iteration while it drains), then
// runs `trials` seeded trials of the whole run, `jobs` at a time in child processes.
// `iteration`: seconds per iteration measured elsewhere (a real run's step time), used instead of simulating it; an
// asynchronous drain then slows nothing.
TrainResult train(const scenario::Scenario& s, int trials, std::uint64_t seed, int jobs,
                  const SweepProgress& progress = {}, const MemoryLimit& limit = {},
                  std::optional<double> iteration = std::nullopt);

nlohmann::json to_json(const lifecycle::TrialResult& trial); // one trial, as the JSON and the child processes carry it

} // namespace dtsim::studies
