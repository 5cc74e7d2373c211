// `dtsim collective`: one collective over a range of sizes, printed as nccl-tests prints it.
#include "sim/simulate.hpp"
#include "sim/studies/collective_report.hpp"
#include "sim/studies/sweep.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace dtsim::cli {
namespace {

// The scenario file, or with --instance a minimal document built here (the model is required by the format
// but unused by the benchmark), read by the same loader; errors in it name "--instance" as their origin.
scenario::Scenario load_cluster(const CollectiveArgs& args) {
  if (!args.instance) {
    if (args.nodes)
      throw scenario::ScenarioError("--nodes", "",
                                    "only with --instance; with a scenario file use --set cluster.nodes=N");
    if (args.scenario.empty())
      throw scenario::ScenarioError("collective", "", "give a scenario file or --instance NAME (dtsim list instances)");
    return load_with_overrides(args.scenario, args.sets);
  }
  if (!args.scenario.empty())
    throw scenario::ScenarioError("--instance", "",
                                  fmt::format("give a scenario file ({}) or --instance, not both", args.scenario));
  std::vector<scenario::Override> overrides;
  for (const auto& s : args.sets)
    overrides.push_back(scenario::parse_override(s));
  return studies::instance_scenario(*args.instance, args.nodes.value_or(1), overrides, "--instance");
}

// --sizes, or nccl-tests' -b/-e/-f (not both).
std::vector<double> sizes_of(const CollectiveArgs& args) {
  const bool nccl_style = !args.min_bytes.empty() || !args.max_bytes.empty() || !args.step_factor.empty();
  if (!nccl_style) return studies::collective_sizes(args.sizes);
  if (!args.sizes.empty())
    throw scenario::ScenarioError("--sizes", "", "give --sizes or nccl-tests' -b/-e/-f, not both");
  if (args.min_bytes.empty())
    throw scenario::ScenarioError("-b", "", "-e and -f need -b, the smallest size, as in nccl-tests");
  return studies::nccl_tests_sizes(args.min_bytes, args.max_bytes, args.step_factor.empty() ? "2" : args.step_factor);
}

} // namespace

int collective_command(const CollectiveArgs& args) {
  const auto scenario = load_cluster(args);
  const auto bench = studies::collective_bench(scenario, {.op = args.op,
                                                          .algorithm = args.algorithm,
                                                          .protocol = args.protocol,
                                                          .fidelity = args.fidelity,
                                                          .ranks = args.ranks,
                                                          .sizes = sizes_of(args)});
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  std::ostream& out = report_stream({args.csv_out, args.json_out, args.html_out});
  out << studies::collective_header(scenario, bench, args.fidelity);
  std::vector<studies::CollectivePoint> points;
  {
    const ProgressLine progress("collective: sizes simulated");
    const int jobs = parallel_jobs(args.jobs);
    points = studies::run_collective_bench(
        scenario, bench, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
        memory_limit_of(args.max_memory, std::min<int>(jobs, static_cast<int>(bench.sizes.size()))));
  }
  out << studies::collective_table(points, bench.op);
  const bool all_ok = std::all_of(points.begin(), points.end(), [](const auto& p) { return p.ok; });
  return finish_outputs(out, {{args.csv_out, studies::collective_csv(points)}},
                        studies::collective_document(scenario, bench, args.fidelity, points), args.json_out,
                        args.html_out, all_ok ? kExitOk : kExitFailed);
}

} // namespace dtsim::cli
