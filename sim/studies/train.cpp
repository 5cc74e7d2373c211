#include "sim/studies/train.hpp"
#include "sim/studies/train_shapes.hpp"

#include "sim/engine/child_process.hpp"
#include "sim/engine/job_replay.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/report/energy.hpp"
#include "sim/report/format.hpp"
#include "sim/scenario/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dtsim::studies {
namespace {

using lifecycle::TrialResult;
using nlohmann::json;

// A trial's seed from the run's seed and its number (SplitMix64's finalizer: neighbouring trials draw unrelated
// streams).
std::uint64_t trial_seed(std::uint64_t seed, std::uint64_t trial) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (trial + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TrialResult trial_from_json(const json& j) {
  TrialResult t;
  t.wall = j.at("wall_seconds");
  t.useful = j.at("useful_seconds");
  t.checkpoint_time = j.at("checkpoint_seconds");
  t.lost = j.at("lost_seconds");
  t.down = j.at("down_seconds");
  t.failures = j.at("failures");
  t.failures_by_source = j.at("failures_by_component").get<std::vector<int>>();
  t.preemptions = j.at("preemptions");
  t.checkpoints = j.at("checkpoints");
  t.restarts = j.at("restarts");
  t.resizes = j.at("resizes");
  t.failovers = j.at("failovers");
  t.degraded = j.at("degraded_seconds");
  t.cost = j.at("cost_usd");
  t.energy_kwh = j.at("energy_kwh");
  t.co2_kg = j.at("co2_kg");
  return t;
}

// What a trial can afford: every wait of the replay is one SimGrid activity (about a microsecond and a half on this
// project's 2-core machine), and each Weibull unit keeps a clock of its own.
constexpr double kMaxEventsPerTrial = 1e8;
constexpr double kMaxWeibullUnits = 1e7;

// Refuses, before anything is simulated, a run that could not finish: Weibull units past what a trial can track,
// and interruptions so frequent that a restart would almost never complete before the next one.
void check_run_inputs(const scenario::Scenario& s) {
  const auto& run = s.lifecycle;
  for (std::size_t i = 0; i < run.failures.size(); ++i) {
    const auto& f = run.failures[i];
    if (f.distribution == lifecycle::Distribution::weibull && f.units_per_node * s.cluster.nodes > kMaxWeibullUnits)
      throw scenario::ScenarioError(
          s.origin, fmt::format("/failures/sources/{}/units_per_node", i),
          fmt::format("{:.0f} Weibull units ({} a node on {} nodes) are more than a trial follows one by one ({:.0f}); "
                      "use \"exponential\" (the units then superpose into one process)",
                      f.units_per_node * s.cluster.nodes, f.units_per_node, s.cluster.nodes, kMaxWeibullUnits));
  }
  const double rate = lifecycle::interruption_rate(run.failures, run.spot, s.cluster.nodes);
  double detection = 0;
  for (const auto& f : run.failures)
    detection = std::max(detection, f.detection);
  const double restart =
      detection + run.restart.reschedule + run.restart.startup + run.restart.startup_per_gpu * s.world_size();
  // A restart of R seconds completes before the next interruption with probability exp(-rate R).
  if (rate * restart > 10)
    throw scenario::ScenarioError(
        s.origin, run.failures.empty() ? "/spot" : "/failures",
        fmt::format("the job is interrupted every {} on average and a restart takes {}: it would almost never run "
                    "again (a restart completes with probability exp(-{:.0f}))",
                    report::format_seconds(1 / rate), report::format_seconds(restart), rate * restart));
}

// Refuses a run whose trials would take too long to replay: its checkpoints and expected interruptions.
void check_run_events(const scenario::Scenario& s, const lifecycle::JobTimes& job, double mtbi) {
  const double useful = static_cast<double>(job.steps) * job.iteration;
  const double checkpoints = job.checkpoints ? static_cast<double>(job.steps / job.interval_steps) : 0;
  const double interruptions = std::isfinite(mtbi) ? 2 * useful / mtbi : 0;
  if (checkpoints + interruptions <= kMaxEventsPerTrial) return;
  throw scenario::ScenarioError(
      s.origin, checkpoints > interruptions ? "/checkpoint/interval" : "/training/steps",
      fmt::format("a trial would replay about {:.3g} checkpoints and interruptions ({} steps of {}), more than {:.0e}; "
                  "{}",
                  checkpoints + interruptions, job.steps, report::format_seconds(job.iteration), kMaxEventsPerTrial,
                  checkpoints > interruptions ? "a longer checkpoint interval would fit" : "a shorter run would fit"));
}

} // namespace

json to_json(const TrialResult& t) {
  return {{"wall_seconds", t.wall},
          {"useful_seconds", t.useful},
          {"checkpoint_seconds", t.checkpoint_time},
          {"lost_seconds", t.lost},
          {"down_seconds", t.down},
          {"failures", t.failures},
          {"failures_by_component", t.failures_by_source},
          {"preemptions", t.preemptions},
          {"checkpoints", t.checkpoints},
          {"restarts", t.restarts},
          {"resizes", t.resizes},
          {"failovers", t.failovers},
          {"degraded_seconds", t.degraded},
          {"cost_usd", t.cost},
          {"energy_kwh", t.energy_kwh},
          {"co2_kg", t.co2_kg},
          {"goodput", goodput(t)}};
}

TrialStats trial_stats(std::vector<double> values) {
  TrialStats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values)
    sum += v;
  s.mean = sum / static_cast<double>(values.size());
  const auto rank = [&](double p) { // nearest rank: the smallest value with at least p of them at or below it
    const auto n = static_cast<double>(values.size());
    return values[static_cast<std::size_t>(std::max(1.0, std::ceil(p * n)) - 1)];
  };
  s.p50 = rank(0.50), s.p90 = rank(0.90), s.p99 = rank(0.99);
  return s;
}

double goodput(const lifecycle::TrialResult& t) {
  return t.wall > 0 ? t.useful / t.wall : 0;
}

std::int64_t run_steps(const scenario::Scenario& s, std::string* from, std::string_view other_ways) {
  if (s.lifecycle.steps > 0) {
    if (from) *from = "training.steps";
    return s.lifecycle.steps;
  }
  if (s.dataset.samples <= 0)
    throw scenario::ScenarioError(s.origin, "/training/steps",
                                  fmt::format("missing; a whole run needs its length: {}\"steps\" (iterations), or "
                                              "\"dataset\" with \"samples\" per epoch and \"epochs\"",
                                              other_ways));
  const std::int64_t batch = s.global_batch();
  const std::int64_t per_epoch = (s.dataset.samples + batch - 1) / batch;
  if (from)
    *from = fmt::format("{} epoch{} of {} samples in global batches of {}", s.dataset.epochs,
                        s.dataset.epochs == 1 ? "" : "s", s.dataset.samples, batch);
  return per_epoch * s.dataset.epochs;
}

lifecycle::CheckpointSize checkpoint_size(const scenario::Scenario& s) {
  // Each parameter's weights and optimizer states once, however the ranks shard or replicate them: PyTorch's
  // distributed checkpoint and Megatron-Core's save each shard once and spread replicas' writes over the ranks.
  const auto bytes = plan::model_state_bytes(s.training.optimizer, s.model.precision);
  lifecycle::CheckpointSize size;
  size.total = static_cast<double>(s.model.workload.parameter_count()) * (bytes.weights + bytes.optimizer());
  size.per_node = size.total / s.cluster.nodes;
  size.per_gpu = size.total / s.world_size();
  return size;
}

scenario::Scenario while_draining(const scenario::Scenario& s, double* drain_rate) {
  const auto& st = s.lifecycle.storage;
  const auto nodes = s.cluster.nodes;
  const double nic = s.cluster.nic.bandwidth; // the node's NICs together
  double rate = st.write_bandwidth;
  if (st.aggregate_write > 0) rate = std::min(rate, st.aggregate_write / nodes);
  if (st.shares_nic) rate = std::min(rate, nic / 2);
  if (drain_rate) *drain_rate = rate;
  auto draining = s;
  if (st.shares_nic) draining.cluster.nic.bandwidth *= 1 - rate / nic;
  return draining;
}

// Mean time between the interruptions that roll the job back to its checkpoint: what Young's interval weighs, and
// what the report shows.
static double mean_time_between_rollbacks(const scenario::Scenario& s) {
  const auto& run = s.lifecycle;
  return 1 / lifecycle::rollback_rate(run.failures, run.spot, s.cluster.nodes, s.parallelism.pipeline);
}

lifecycle::JobTimes job_times(const scenario::Scenario& s, double iteration, double iteration_draining, bool* young) {
  const auto& run = s.lifecycle;
  lifecycle::JobTimes job;
  job.steps = run_steps(s);
  job.nodes = s.cluster.nodes;
  job.gpus = s.world_size();
  job.iteration = iteration;
  job.iteration_draining = iteration_draining;
  job.failures = run.failures;
  job.spot = run.spot;
  job.price_per_hour = s.cluster.price_per_node_hour;
  job.restart = run.restart.reschedule + run.restart.startup + run.restart.startup_per_gpu * job.gpus;
  job.reschedule = run.restart.reschedule;
  job.warmup_iterations = run.restart.warmup_iterations;
  job.interval_steps = job.steps;
  if (!run.checkpoint.enabled) return job;

  const auto size = checkpoint_size(s);
  const auto& st = run.storage;
  job.async = run.checkpoint.mode == lifecycle::CheckpointMode::async;
  job.checkpoint_load =
      lifecycle::storage_seconds(size.per_node, job.nodes, st.read_bandwidth, st.aggregate_read, st.latency);
  if (job.async) {
    double rate = 0;
    while_draining(s, &rate);
    job.checkpoint_blocking = size.per_gpu / run.checkpoint.snapshot_bandwidth;
    job.checkpoint_drain = size.per_node / rate + st.latency;
  } else {
    job.checkpoint_blocking =
        lifecycle::storage_seconds(size.per_node, job.nodes, st.write_bandwidth, st.aggregate_write, st.latency);
  }
  const double mtbi = mean_time_between_rollbacks(s);
  if (young) *young = !run.checkpoint.interval;
  // An asynchronous snapshot waits for the last one's drain (host memory holds one): no interval is shorter than it.
  job.checkpoint_interval = run.checkpoint.interval.value_or(
      std::max(lifecycle::young_interval(lifecycle::checkpoint_cost(job), mtbi), job.checkpoint_drain));
  job.checkpoints = std::isfinite(job.checkpoint_interval);
  if (job.checkpoints)
    job.interval_steps = std::clamp<std::int64_t>(std::llround(job.checkpoint_interval / iteration), 1, job.steps);
  return job;
}

bool iterates_in_several_shapes(const scenario::Scenario& s) {
  return s.lifecycle.elastic.shrink ||
         (s.lifecycle.spot.enabled && s.lifecycle.spot.policy == lifecycle::SpotPolicy::redundancy);
}

TrainResult train(const scenario::Scenario& s, int trials, std::uint64_t seed, int jobs, const SweepProgress& progress,
                  const MemoryLimit& limit, std::optional<double> given_iteration) {
  TrainResult r;
  r.name = s.name;
  r.nodes = s.cluster.nodes;
  r.gpus = s.world_size();
  r.steps = run_steps(s, &r.steps_from);
  r.seed = seed;
  r.scenario = scenario::to_json(s);
  r.storage_tier = s.lifecycle.storage.tier;
  r.checkpoint_size = checkpoint_size(s);
  for (const auto& f : s.lifecycle.failures)
    r.failure_components.push_back(f.component);

  // The iteration on this cluster shape, and while a checkpoint drains over the same NICs.
  check_run_inputs(s);
  r.iteration_given = given_iteration.has_value();
  double iteration = 0;
  const bool redundancy = s.lifecycle.spot.enabled && s.lifecycle.spot.policy == lifecycle::SpotPolicy::redundancy;
  if (given_iteration && redundancy)
    throw scenario::ScenarioError(s.origin, "/spot/policy",
                                  "redundant computation simulates the iteration with and without it and after a "
                                  "failover; --iteration-time gives only one");
  std::optional<report::RunResult> simulated;
  if (given_iteration) {
    iteration = *given_iteration;
    // No kernels to price the draw by: every GPU at its compute-bound draw, an upper bound.
    r.gpu_watts = s.gpu.power.math;
  } else {
    simulated = simulate(s, false, false, limit).result;
    iteration = simulated->iteration.mean;
    r.gpu_watts = simulated->energy.gpu_watts;
  }
  double draining = iteration;
  // A drain that takes under 0.1% of the NICs slows the iteration by less than that: not simulated again.
  double drain_rate = 0;
  const auto drained = while_draining(s, &drain_rate);
  if (!given_iteration && s.lifecycle.checkpoint.enabled &&
      s.lifecycle.checkpoint.mode == lifecycle::CheckpointMode::async && s.lifecycle.storage.shares_nic &&
      drain_rate > 1e-3 * s.cluster.nic.bandwidth)
    draining = simulate(drained, false, false, limit).result.iteration.mean;
  r.job = job_times(s, iteration, draining, &r.young);
  if (s.lifecycle.elastic.shrink) {
    if (given_iteration)
      throw scenario::ScenarioError(s.origin, "/elastic",
                                    "an elastic job simulates each smaller shape; --iteration-time gives only one");
    r.job.shrunk_iteration = shrunk_iterations(s, iteration, limit);
    r.job.nodes_per_replica = nodes_per_replica(s);
    r.job.reconfigure = s.lifecycle.elastic.reconfigure + s.lifecycle.restart.startup +
                        s.lifecycle.restart.startup_per_gpu * s.world_size();
  }
  if (redundancy) r.job.redundancy = redundancy_times(s, *simulated, limit);
  r.job.power = simulated ? report::node_power(simulated->energy)
                          : lifecycle::node_power(r.gpu_watts, s.gpu.power.idle, s.cluster.gpus_per_node, s.energy);
  if (!simulated && !s.groups.empty()) r.job.power.known = false; // no kernels to weigh each group's draw by
  r.job.energy = s.energy;
  r.mtbi = 1 / lifecycle::interruption_rate(r.job.failures, r.job.spot, r.nodes);
  r.mtbr = mean_time_between_rollbacks(s);
  check_run_events(s, r.job, r.mtbi);
  if (r.job.checkpoints && std::isfinite(r.mtbr))
    r.expected_waste = lifecycle::first_order_waste(lifecycle::checkpoint_cost(r.job), r.job.checkpoint_interval,
                                                    r.mtbr, r.job.restart + r.job.checkpoint_load);

  std::vector<engine::ChildJob> work;
  for (int i = 0; i < trials; ++i)
    work.emplace_back([job = r.job, seed = trial_seed(seed, static_cast<std::uint64_t>(i))] {
      return to_json(engine::replay_job(job, seed)).dump();
    });
  auto outcomes = engine::run_in_children(
      work, jobs,
      [&](std::size_t done, std::size_t total, std::size_t) {
        if (progress) progress(done, total);
      },
      {}, limit);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].ok) throw std::runtime_error(fmt::format("trial {}: {}", i, outcomes[i].output));
    r.trials.push_back(trial_from_json(json::parse(outcomes[i].output)));
  }
  return r;
}

std::optional<double> measured_iteration_time(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto seconds = scenario::parse_quantity(text, scenario::Dimension::duration);
  if (!seconds || *seconds < 1e-3 || *seconds > 86400)
    throw scenario::ScenarioError(
        "--iteration-time", "",
        fmt::format("expected a duration from 1 ms to a day, such as \"6.1s\", got \"{}\"", text));
  return seconds;
}

} // namespace dtsim::studies
