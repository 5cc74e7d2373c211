// What `dtsim train` prints and writes: the run's inputs, the trials' statistics, every trial as JSON and CSV.
#include "sim/studies/train_report.hpp"

#include "sim/report/format.hpp"
#include "sim/studies/provenance.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtsim::studies {
namespace {

using lifecycle::TrialResult;
using nlohmann::json;

json stats_json(const TrialStats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

} // namespace

std::string format_train(const TrainResult& r) {
  using report::format_bytes;
  using report::format_percent;
  using report::format_seconds;
  const auto& job = r.job;
  std::string out =
      fmt::format("{}: {} GPUs on {} nodes, {} steps ({})\n", r.name, r.gpus, r.nodes, r.steps, r.steps_from);
  out += fmt::format("  iteration      {} ({}", format_seconds(job.iteration),
                     r.iteration_given ? "given by --iteration-time" : "simulated");
  if (job.async && job.iteration_draining > job.iteration)
    out += fmt::format("; {} while a checkpoint drains", format_seconds(job.iteration_draining));
  out += fmt::format("); uninterrupted run {}\n", format_seconds(job.iteration * static_cast<double>(r.steps)));
  if (job.checkpoints || job.checkpoint_blocking > 0) {
    out += fmt::format("  checkpoint     {} ({} per node) to {}, ", format_bytes(r.checkpoint_size.total),
                       format_bytes(r.checkpoint_size.per_node), r.storage_tier);
    out += job.async ? fmt::format("async: snapshot {}, drain {}", format_seconds(job.checkpoint_blocking),
                                   format_seconds(job.checkpoint_drain))
                     : fmt::format("sync: write {}", format_seconds(job.checkpoint_blocking));
    out += fmt::format(", load {}\n", format_seconds(job.checkpoint_load));
  }
  if (std::isfinite(r.mtbi)) {
    out += fmt::format("  interruptions  every {} on average (", format_seconds(r.mtbi));
    for (std::size_t i = 0; i < job.failures.size(); ++i) {
      const double rate = job.failures[i].units_per_node * r.nodes / job.failures[i].mtbf;
      out += fmt::format("{}{} every {}", i ? ", " : "", job.failures[i].component, format_seconds(1 / rate));
    }
    if (job.spot.enabled)
      out += fmt::format("{}spot every {}", job.failures.empty() ? "" : ", ",
                         format_seconds(1 / job.spot.job_rate(r.nodes)));
    out += ")\n";
  } else {
    out += "  interruptions  none modeled (no \"failures\" or \"spot\" section)\n";
  }
  if (job.checkpoints)
    out +=
        fmt::format("  interval       {} ({} steps){}\n", format_seconds(job.checkpoint_interval), job.interval_steps,
                    r.young ? fmt::format(": Young's sqrt(2 C M), C {} the checkpoint's cost to training",
                                          format_seconds(lifecycle::checkpoint_cost(job)))
                            : "");
  else if (r.job.checkpoint_blocking > 0 || r.young)
    out += "  interval       none: with no interruptions, Young's interval is unbounded\n";
  if (r.expected_waste > 0)
    out += fmt::format("  waste          {} of wall time at first order (checkpoints, work redone, restarts)\n",
                       format_percent(r.expected_waste));
  out += fmt::format("  restart        {} (reschedule, start-up) + checkpoint load; {} warm-up iterations\n",
                     format_seconds(job.restart), job.warmup_iterations);
  if (!job.shrunk_iteration.empty()) {
    out += fmt::format("  elastic        shrinks to the replicas left ({} node{} each), reconfiguring in {}; a full "
                       "step's samples take",
                       job.nodes_per_replica, job.nodes_per_replica == 1 ? "" : "s", format_seconds(job.reconfigure));
    for (std::size_t k = 1; k < job.shrunk_iteration.size(); ++k)
      out += fmt::format("{} {} with {} lost", k > 1 ? "," : "", format_seconds(job.shrunk_iteration[k]), k);
    out += fmt::format("; past {} lost it waits\n", job.shrunk_iteration.size() - 1);
  }
  if (const auto& rc = job.redundancy; rc.enabled)
    out +=
        fmt::format("  redundancy     each stage runs its successor's forward too (Bamboo): {} an iteration, {} "
                    "without ({:+.1f}%); after a failover {} (a node running two stages) until the replacement "
                    "rejoins in {}; a preemption next to a stage still down rolls back to the checkpoint, "
                    "every {} on average\n",
                    format_seconds(job.iteration), format_seconds(rc.without), 100 * (job.iteration / rc.without - 1),
                    format_seconds(rc.failover), format_seconds(rc.rejoin), format_seconds(r.mtbr));
  if (job.power.known)
    out += fmt::format("  power          {} a GPU training{}, {} a node training and {} waiting{}; PUE {:g}\n",
                       report::format_power(r.gpu_watts),
                       r.iteration_given ? " (its compute-bound draw: an upper bound, the iteration was given)" : "",
                       report::format_power(job.power.training), report::format_power(job.power.idle),
                       job.energy.host_power > 0 ? "" : " (GPUs alone: no figure for the host)", job.energy.pue);

  out += fmt::format("\n{} trial{} (seed {})\n  {:<22}{:>14} {:>14} {:>14} {:>14}\n", r.trials.size(),
                     r.trials.size() == 1 ? "" : "s", r.seed, "", "mean", "p50", "p90", "p99");
  const auto row = [&](const std::string& label, const TrialStats& s, auto show) {
    out += fmt::format("  {:<22}{:>14} {:>14} {:>14} {:>14}\n", label, show(s.mean), show(s.p50), show(s.p90),
                       show(s.p99));
  };
  const auto duration = [](double v) { return report::format_seconds(v); };
  const auto count = [](double v) { return fmt::format("{:.1f}", v); };
  row("time to train", trial_stats(r.trials, [](const TrialResult& t) { return t.wall; }), duration);
  row("goodput", trial_stats(r.trials, goodput), [](double v) { return report::format_percent(v); });
  if (job.price_per_hour > 0 || job.spot.price_per_hour > 0)
    row("cost", trial_stats(r.trials, [](const TrialResult& t) { return t.cost; }),
        [](double v) { return fmt::format("${:.0f}", v); });
  if (job.power.known) {
    row("energy", trial_stats(r.trials, [](const TrialResult& t) { return t.energy_kwh; }),
        [](double v) { return report::format_energy(v); });
    if (job.energy.grid_intensity > 0)
      row("CO2", trial_stats(r.trials, [](const TrialResult& t) { return t.co2_kg; }),
          [](double v) { return report::format_co2(v); });
  }
  row("checkpoint time", trial_stats(r.trials, [](const TrialResult& t) { return t.checkpoint_time; }), duration);
  row("work lost", trial_stats(r.trials, [](const TrialResult& t) { return t.lost; }), duration);
  row("down", trial_stats(r.trials, [](const TrialResult& t) { return t.down; }), duration);
  row("failures", trial_stats(r.trials, [](const TrialResult& t) { return t.failures; }), count);
  if (job.spot.enabled)
    row("preemptions", trial_stats(r.trials, [](const TrialResult& t) { return t.preemptions; }), count);
  row("restarts", trial_stats(r.trials, [](const TrialResult& t) { return t.restarts; }), count);
  if (job.redundancy.enabled) {
    row("failovers", trial_stats(r.trials, [](const TrialResult& t) { return t.failovers; }), count);
    row("redundant work", trial_stats(r.trials, [](const TrialResult& t) { return t.degraded; }), duration);
  }
  if (!job.shrunk_iteration.empty()) {
    row("resizes", trial_stats(r.trials, [](const TrialResult& t) { return t.resizes; }), count);
    row("on fewer replicas", trial_stats(r.trials, [](const TrialResult& t) { return t.degraded; }), duration);
  }
  row("checkpoints", trial_stats(r.trials, [](const TrialResult& t) { return t.checkpoints; }), count);
  return out;
}

json to_json(const TrainResult& r) {
  const auto& job = r.job;
  json trials = json::array();
  for (const auto& t : r.trials)
    trials.push_back(to_json(t));
  json summary = {
      {"wall_seconds", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.wall; }))},
      {"goodput", stats_json(trial_stats(r.trials, goodput))},
      {"cost_usd", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.cost; }))},
      {"lost_seconds", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.lost; }))},
      {"down_seconds", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.down; }))},
      {"failures", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.failures; }))},
      {"preemptions", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.preemptions; }))},
      {"checkpoints", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.checkpoints; }))},
      {"resizes", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.resizes; }))},
      {"failovers", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.failovers; }))},
      {"degraded_seconds", stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.degraded; }))}};
  if (job.power.known) {
    summary["energy_kwh"] = stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.energy_kwh; }));
    if (job.energy.grid_intensity > 0)
      summary["co2_kg"] = stats_json(trial_stats(r.trials, [](const TrialResult& t) { return t.co2_kg; }));
  }
  const auto finite = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"name", r.name},
          {"nodes", r.nodes},
          {"gpus", r.gpus},
          {"steps", r.steps},
          {"steps_from", r.steps_from},
          {"seed", r.seed},
          {"iteration_seconds", job.iteration},
          {"iteration_given", r.iteration_given},
          {"iteration_draining_seconds", job.iteration_draining},
          {"checkpoint",
           {{"bytes", r.checkpoint_size.total},
            {"bytes_per_node", r.checkpoint_size.per_node},
            {"mode", job.async ? "async" : "sync"},
            {"storage_tier", r.storage_tier},
            {"blocking_seconds", job.checkpoint_blocking},
            {"drain_seconds", job.checkpoint_drain},
            {"load_seconds", job.checkpoint_load},
            {"interval_seconds", finite(job.checkpoint_interval)},
            {"interval_steps", job.interval_steps},
            {"young", r.young},
            {"enabled", job.checkpoints}}},
          {"mean_time_between_interruptions_seconds", finite(r.mtbi)},
          {"mean_time_between_rollbacks_seconds", finite(r.mtbr)},
          {"expected_waste_first_order", r.expected_waste},
          {"restart_seconds", job.restart},
          {"elastic", job.shrunk_iteration.empty() ? json(nullptr)
                                                   : json{{"nodes_per_replica", job.nodes_per_replica},
                                                          {"reconfigure_seconds", job.reconfigure},
                                                          {"seconds_per_step_by_replicas_lost", job.shrunk_iteration}}},
          {"redundancy", !job.redundancy.enabled ? json(nullptr)
                                                 : json{{"iteration_without_seconds", job.redundancy.without},
                                                        {"iteration_after_failover_seconds", job.redundancy.failover},
                                                        {"rejoin_seconds", job.redundancy.rejoin},
                                                        {"stages", job.redundancy.stages},
                                                        {"nodes_per_stage", job.redundancy.nodes_per_stage}}},
          {"power_watts", job.power.known ? json{{"gpu_training", r.gpu_watts},
                                                 {"node_training", job.power.training},
                                                 {"node_idle", job.power.idle},
                                                 {"pue", job.energy.pue}}
                                          : json(nullptr)},
          {"failure_components", r.failure_components},
          {"summary", std::move(summary)},
          {"trials", std::move(trials)},
          {"scenario", r.scenario}};
}

std::string train_csv(const TrainResult& r) {
  std::string out =
      "trial,wall_seconds,useful_seconds,checkpoint_seconds,lost_seconds,down_seconds,failures,"
      "preemptions,checkpoints,restarts,resizes,failovers,degraded_seconds,cost_usd,energy_kwh,co2_kg,goodput\n";
  for (std::size_t i = 0; i < r.trials.size(); ++i) {
    const auto& t = r.trials[i];
    out += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g}\n",
                       i, t.wall, t.useful, t.checkpoint_time, t.lost, t.down, t.failures, t.preemptions, t.checkpoints,
                       t.restarts, t.resizes, t.failovers, t.degraded, t.cost, t.energy_kwh, t.co2_kg, goodput(t));
  }
  return out;
}

json train_document(const TrainResult& result) {
  auto document = to_json(result);
  document["command"] = "train";
  document["provenance"] = provenance(result.scenario);
  return document;
}

} // namespace dtsim::studies
