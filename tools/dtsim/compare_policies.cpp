// `dtsim compare --policies`: the same job as whole runs under several training policies (checkpointing, spot or
// on-demand capacity, elastic or waiting), side by side: each policy is a list of --set overrides, run as
// `dtsim train` runs it, with the same seeds, so the differences are the policies' and not the draws'.
#include "sim/report/format.hpp"
#include "sim/studies/provenance.hpp"
#include "sim/studies/series.hpp"
#include "sim/studies/train.hpp"
#include "sim/studies/train_report.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

namespace dtsim::cli {
namespace {

using nlohmann::json;

struct Policy {
  std::string label;
  std::vector<std::string> sets;
};

// "sync: ; async: checkpoint.mode=async, checkpoint.snapshot_bandwidth=20GB/s": a label and its overrides per policy;
// without a label, the overrides name it.
std::vector<Policy> parse_policies(const std::string& text) {
  std::vector<Policy> out;
  for (const auto& item : studies::split_list(text, ';')) {
    const std::string one = studies::trim(item);
    if (one.empty()) continue;
    Policy p;
    std::string sets = one;
    if (const auto colon = one.find(':'); colon != std::string::npos && one.find('=') > colon) {
      p.label = studies::trim(one.substr(0, colon));
      sets = one.substr(colon + 1);
    }
    for (const auto& set : studies::split_list(sets))
      if (const auto given = studies::trim(set); !given.empty()) p.sets.push_back(given);
    if (p.label.empty()) p.label = p.sets.empty() ? "as given" : fmt::format("{}", fmt::join(p.sets, ", "));
    for (const auto& set : p.sets)
      if (set.find('=') == std::string::npos)
        throw scenario::ScenarioError(
            "--policies", "", fmt::format("policy \"{}\": expected PATH=VALUE overrides, got \"{}\"", p.label, set));
    out.push_back(std::move(p));
  }
  if (out.empty())
    throw scenario::ScenarioError("--policies", "", "expected at least one policy: 'LABEL: PATH=VALUE, ...; ...'");
  return out;
}

} // namespace

int compare_policies_command(const CompareArgs& args) {
  const auto policies = parse_policies(args.policies);
  // Every policy's scenario is read first: one that cannot run stops the comparison before anything runs.
  std::vector<scenario::Scenario> scenarios;
  for (const auto& p : policies) {
    auto sets = args.sets;
    sets.insert(sets.end(), p.sets.begin(), p.sets.end());
    scenarios.push_back(load_with_overrides(args.scenario, sets));
    studies::run_steps(scenarios.back());
  }
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  const int jobs = parallel_jobs(args.jobs);
  const auto limit = memory_limit_of(args.max_memory, std::min(jobs, args.trials));
  const std::uint64_t seed = args.seed.value_or(scenarios.front().run.seed);

  std::vector<studies::TrainResult> results;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const ProgressLine progress(fmt::format("compare: policy {} of {}, trials run", i + 1, policies.size()));
    results.push_back(studies::train(
        scenarios[i], args.trials, seed, jobs,
        [&](std::size_t done, std::size_t total) { progress.update(done, total); }, limit));
  }

  std::string out = fmt::format("{}: {} policies as whole runs, {} trial{} each (seed {})\n\n", scenarios.front().name,
                                policies.size(), args.trials, args.trials == 1 ? "" : "s", seed);
  std::vector<std::vector<std::string>> rows{{"policy", "iteration", "time to train", "(p90)", "goodput", "cost",
                                              "energy", "interruptions", "checkpoint every"}};
  std::string csv = "policy,iteration_seconds,wall_seconds_mean,wall_seconds_p90,goodput_mean,cost_usd_mean,"
                    "energy_kwh_mean,interruptions_mean,checkpoint_interval_seconds\n";
  json all = json::array();
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& r = results[i];
    const auto wall = studies::trial_stats(r.trials, [](const lifecycle::TrialResult& t) { return t.wall; });
    const auto good = studies::trial_stats(r.trials, studies::goodput);
    const auto cost = studies::trial_stats(r.trials, [](const lifecycle::TrialResult& t) { return t.cost; });
    const auto kwh = studies::trial_stats(r.trials, [](const lifecycle::TrialResult& t) { return t.energy_kwh; });
    const auto hits =
        studies::trial_stats(r.trials, [](const lifecycle::TrialResult& t) { return t.failures + t.preemptions; });
    const bool priced = r.job.price_per_hour > 0 || r.job.spot.price_per_hour > 0;
    rows.push_back({policies[i].label, report::format_seconds(r.job.iteration), report::format_seconds(wall.mean),
                    report::format_seconds(wall.p90), report::format_percent(good.mean),
                    priced ? fmt::format("${:.0f}", cost.mean) : "-",
                    r.job.power.known ? report::format_energy(kwh.mean) : "-", fmt::format("{:.1f}", hits.mean),
                    r.job.checkpoints ? report::format_seconds(r.job.checkpoint_interval) : "-"});
    csv += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.6g},{},{},{:.6g},{}\n", report::csv_field(policies[i].label),
                       r.job.iteration, wall.mean, wall.p90, good.mean, priced ? fmt::format("{:.9g}", cost.mean) : "",
                       r.job.power.known ? fmt::format("{:.9g}", kwh.mean) : "", hits.mean,
                       r.job.checkpoints ? fmt::format("{:.9g}", r.job.checkpoint_interval) : "");
    auto one = to_json(r);
    one["provenance"] = studies::provenance(r.scenario);
    one["policy"] = {{"label", policies[i].label}, {"set", policies[i].sets}};
    all.push_back(std::move(one));
  }
  out += aligned_table(rows);
  // With a file written to standard output, the table goes to standard error.
  std::ostream& report = report_stream({args.csv_out, args.json_out, args.html_out});
  report << out;
  auto document = studies::command_document("compare-policies", scenario::to_json(scenarios.front()));
  document["results"] = all;
  return finish_outputs(report, {{args.csv_out, csv}, {args.json_out, all.dump(2) + "\n"}}, document, "", args.html_out,
                        kExitOk);
}

} // namespace dtsim::cli
