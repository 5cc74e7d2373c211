// dtsim: command-line front end. Only this folder parses argv (DESIGN.md).
#include "calibration/error.hpp"
#include "io/suggest.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/limits.hpp"
#include "sim/scenario/scenario.hpp"
#include "tools/dtsim/commands.hpp"

#include "git_commit.hpp" // generated at build time (tools/cmake/git_commit.cmake)

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

using namespace dtsim;

namespace {

// An integer option in [min, max], said plainly when it is not (CLI11's own range check prints 309 digits).
CLI::Validator count(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
          return fmt::format("expected an integer from {} to {}, got \"{}\"", min, max, text);
        return {};
      },
      fmt::format("INT in {}..{}", min, max));
}

// A seed: a whole number from 0 to 2^64 - 1 (a negative one would wrap around to a seed nobody asked for).
CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size())
          return fmt::format("expected a whole number from 0 to {}, got \"{}\"",
                             std::numeric_limits<std::uint64_t>::max(), text);
        return {};
      },
      "UINT64");
}

// A node's price per hour in USD: a finite number from 0 to the format's bound (NaN compares false to every bound).
CLI::Validator price_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value) || value < 0 ||
            value > scenario::limits::kPricePerHour)
          return fmt::format("expected a price in USD from 0 to {:g}, got \"{}\"", scenario::limits::kPricePerHour,
                             text);
        return {};
      },
      "USD");
}

// "dtsim rn": CLI11 would say only that a subcommand is required. The message names the commands and the closest.
// Every subcommand of the app (CLI11 lists them through a filter).
std::vector<CLI::App*> subcommands(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

std::optional<std::string> unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string given = argv[1];
  std::vector<std::string> names;
  for (const auto* sub : subcommands(app))
    names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), given) != names.end()) return std::nullopt;
  return fmt::format("error: unknown command \"{}\"{}; the commands are {} (dtsim --help)\n", given,
                     io::did_you_mean(given, names, 1), fmt::join(names, ", "));
}

// "dtsim run x.json --jsn out.json": the first option the subcommand does not have, with the closest it has.
std::optional<std::string> unknown_option(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const auto all = subcommands(app);
  const auto found =
      std::find_if(all.begin(), all.end(), [&](const CLI::App* sub) { return sub->get_name() == argv[1]; });
  if (found == all.end()) return std::nullopt;
  const CLI::App* sub = *found;
  std::vector<std::string> known;
  for (const auto* option : sub->get_options())
    for (const auto& name : option->get_lnames())
      known.push_back("--" + name);
  for (int i = 2; i < argc; ++i) {
    const std::string token = argv[i];
    if (!token.starts_with("--") || token == "--") continue;
    const auto name = token.substr(0, token.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    return fmt::format("error: dtsim {} has no option {}{} (dtsim {} --help)\n", sub->get_name(), name,
                       io::did_you_mean(name, known, 1), sub->get_name());
  }
  return std::nullopt;
}

// What each text option takes, named in --help instead of CLI11's TEXT. Options of other types (INT, FLOAT) keep
// theirs; a text option not listed keeps TEXT.
void name_option_types(CLI::App& app) {
  static const std::map<std::string, std::string> kinds = {{"scenario", "FILE"},
                                                           {"measurements", "FILE"},
                                                           {"--csv", "FILE"},
                                                           {"--json", "FILE"},
                                                           {"--html", "FILE"},
                                                           {"--trace", "FILE"},
                                                           {"--ops", "FILE"},
                                                           {"--output", "FILE"},
                                                           {"--base", "PROFILE"},
                                                           {"--profile", "PROFILE"},
                                                           {"--measurements", "FILE"},
                                                           {"--nccl-tests", "FILE"},
                                                           {"--resume", "DIR"},
                                                           {"--out", "DIR"},
                                                           {"--root", "DIR"},
                                                           {"--chakra", "DIR"},
                                                           {"dirs", "DIR"},
                                                           {"--max-memory", "SIZE"},
                                                           {"--sizes", "SIZES"},
                                                           {"--minbytes", "SIZE"},
                                                           {"--maxbytes", "SIZE"},
                                                           {"--link-bandwidth", "RATE"},
                                                           {"--set", "PATH=VALUE"},
                                                           {"--nodes", "COUNTS"},
                                                           {"--trace-ranks", "RANKS"},
                                                           {"--trace-iterations", "ITERATIONS"},
                                                           {"--strategies", "NAMES"},
                                                           {"--policies", "NAMES"},
                                                           {"--instances", "NAMES"},
                                                           {"--shard", "K/N"},
                                                           {"--deadline", "DURATION"},
                                                           {"--budget", "USD"},
                                                           {"--tokens", "COUNT"},
                                                           {"--iteration-time", "SECONDS"}};
  for (auto* sub : subcommands(app))
    for (auto* option : sub->get_options([](CLI::Option*) { return true; })) {
      if (option->get_type_name() != "TEXT") continue;
      const auto& long_names = option->get_lnames();
      const auto key = !long_names.empty() ? "--" + long_names.front() : option->get_name();
      if (const auto kind = kinds.find(key); kind != kinds.end()) option->type_name(kind->second);
    }
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtsim: simulate distributed deep-learning training on a modeled cluster before paying for it.\n"
               "Scenario format: scenario-format.md among dtsim's documents (docs/ in its source, share/doc/dtsim "
               "where installed)",
               "dtsim"};
  // The version, then the commit the binary was built from (as every --json result's provenance carries it).
  app.set_version_flag("--version", fmt::format("dtsim {}\ncommit {}", DTSIM_VERSION, DTSIM_GIT_COMMIT));
  app.require_subcommand(1);

  // Every scenario command takes the scenario file and --set overrides; those that simulate many points take
  // --jobs and those that tabulate take --csv.
  auto scenario_options = [](CLI::App* cmd, std::string& scenario, std::vector<std::string>& sets) {
    cmd->add_option("scenario", scenario, "Scenario file (JSON)")->required();
    cmd->add_option("--set", sets, "Override a field: --set cluster.nodes=8 (repeatable)");
  };
  auto parallel_options = [](CLI::App* cmd, std::string& csv, int& jobs) {
    cmd->add_option("--csv", csv, "Write the table as CSV to FILE");
    cmd->add_option("--jobs", jobs, "Simulations run in parallel (default: one per core)")->check(count(1, 1024));
  };
  // --json FILE: the command's result as JSON with its provenance; --html FILE: a self-contained report with figures.
  auto json_option = [](CLI::App* cmd, std::string& json, const std::string& what) {
    cmd->add_option("--json", json, fmt::format("Write {} as JSON to FILE (- for stdout)", what));
  };
  auto seed_option = [](CLI::App* cmd, std::optional<std::uint64_t>& seed, const std::string& text) {
    cmd->add_option("--seed", seed, text)->check(seed_value());
  };
  auto html_option = [](CLI::App* cmd, std::string& html) {
    cmd->add_option("--html", html, "Write a self-contained HTML report with figures to FILE (opens offline)");
  };
  auto memory_option = [](CLI::App* cmd, std::string& size) {
    cmd->add_option("--max-memory", size,
                    "Memory the simulations may take together, such as 16GiB (default: 3/4 of this machine's); a "
                    "larger one is refused before it runs, or stopped");
  };
  auto resume_option = [](CLI::App* cmd, std::string& dir) {
    cmd->add_option("--resume", dir,
                    "Keep each finished point in DIR, and read back the ones an earlier run kept (finish an "
                    "interrupted run)");
  };

  auto shard_options = [](CLI::App* cmd, cli::ShardArgs& s) {
    // A value in the form K/N checked as it is read, so that "--shard --out DIR" (its value forgotten) says so instead
    // of CLI11's "argument was not expected" about DIR. The range is checked where the store opens.
    const CLI::Validator fraction(
        [](const std::string& v) {
          const auto slash = v.find('/');
          const auto digits = [](std::string_view part) {
            return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
          };
          return slash != std::string::npos && digits(std::string_view(v).substr(0, slash)) &&
                         digits(std::string_view(v).substr(slash + 1))
                     ? std::string()
                     : "expected K/N, such as 2/8, got \"" + v + "\"";
        },
        "K/N");
    cmd->add_option("--shard", s.shard,
                    "Simulate only shard K of N of the points (K/N, such as 2/8), kept in --out DIR; dtsim merge puts "
                    "the N directories together")
        ->check(fraction);
    cmd->add_option("--out", s.out, "With --shard: the directory this shard's points are kept in");
    cmd->add_option("--merge-only", s.merge_shards)->group(""); // dtsim merge's: every point must be kept already
  };

  cli::RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Simulate one scenario and print where the time goes");
  scenario_options(run_cmd, run.scenario, run.sets);
  memory_option(run_cmd, run.max_memory);
  json_option(run_cmd, run.json_out, "the full result");
  html_option(run_cmd, run.html_out);
  run_cmd->add_option("--trace", run.trace_out,
                      "Write a Chrome trace-event timeline (open in Perfetto) to FILE: a process per node, a thread "
                      "per GPU stream, send-to-receive arrows, link utilization counters; FILE.json.gz: gzip");
  run_cmd->add_option("--trace-ranks", run.trace_ranks,
                      "Only these GPU ranks in the trace and the report's timeline: 0-7,16, or all (default: every "
                      "simulated GPU, up to 64 spread over the job)");
  run_cmd->add_option("--trace-iterations", run.trace_iterations,
                      "Only these iterations in the trace (from 0, the warm-up first): 2 or 1-3");
  run_cmd->add_option("--ops", run.ops_out,
                      "Write rank 0's kernels of one iteration as CSV to FILE (- for stdout): per distinct kernel its "
                      "shape, launches, time, achieved rate, efficiency and what bounds it");

  cli::SweepArgs sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "Simulate a scenario at several node counts: speedup and efficiency");
  scenario_options(sweep_cmd, sweep.scenario, sweep.sets);
  sweep_cmd->add_option("--nodes", sweep.nodes, "Node counts: 1,2,4,8 or 1..64 (doubling)")->required();
  parallel_options(sweep_cmd, sweep.csv_out, sweep.jobs);
  json_option(sweep_cmd, sweep.json_out, "every point's full result");
  html_option(sweep_cmd, sweep.html_out);
  resume_option(sweep_cmd, sweep.resume);
  shard_options(sweep_cmd, sweep.sharding);
  memory_option(sweep_cmd, sweep.max_memory);

  cli::CompareArgs compare;
  auto* compare_cmd = app.add_subcommand(
      "compare", "Simulate a scenario under several synchronization strategies (time, traffic, staleness, cost), or "
                 "whole runs under several training policies (--policies: days, goodput, dollars, energy)");
  scenario_options(compare_cmd, compare.scenario, compare.sets);
  auto* strategies_opt =
      compare_cmd->add_option("--strategies", compare.strategies,
                              "Short names: allreduce,ps-sync,ps-async,ssp:3,gossip,dpsgd,local-sgd:8 (dtsim list "
                              "strategies)");
  auto* policies_opt = compare_cmd->add_option(
      "--policies", compare.policies,
      "Training policies as whole runs: 'LABEL: PATH=VALUE, ...; LABEL: ...', each a list of --set overrides "
      "(e.g. 'sync: ; async: checkpoint.mode=async')");
  strategies_opt->excludes(policies_opt);
  compare_cmd->add_option("--trials", compare.trials, "With --policies: seeded trials of each run (default 100)")
      ->check(count(1, 1'000'000));
  seed_option(compare_cmd, compare.seed, "With --policies: seed of the first trial (default: run.seed)");
  parallel_options(compare_cmd, compare.csv_out, compare.jobs);
  json_option(compare_cmd, compare.json_out, "every strategy's full result (an array)");
  html_option(compare_cmd, compare.html_out);
  resume_option(compare_cmd, compare.resume);
  shard_options(compare_cmd, compare.sharding);
  memory_option(compare_cmd, compare.max_memory);

  cli::TrainArgs train;
  auto* train_cmd = app.add_subcommand(
      "train", "Simulate the whole training run with checkpoints, failures and spot interruptions: time and cost to "
               "train over seeded trials");
  scenario_options(train_cmd, train.scenario, train.sets);
  train_cmd->add_option("--trials", train.trials, "Seeded trials of the run (default 100)")->check(count(1, 1'000'000));
  seed_option(train_cmd, train.seed, "Seed of the first trial (default: the scenario's run.seed)");
  train_cmd->add_option("--iteration-time", train.iteration_time,
                        "Seconds per iteration measured on a real run (such as 6.1s), used instead of simulating it");
  parallel_options(train_cmd, train.csv_out, train.jobs);
  json_option(train_cmd, train.json_out, "the result and every trial");
  html_option(train_cmd, train.html_out);
  memory_option(train_cmd, train.max_memory);

  cli::SearchArgs search;
  auto* search_cmd = app.add_subcommand(
      "search", "Search tensor x pipeline x data (x expert) layouts, micro-batch, schedule, ZeRO and recomputation: "
                "the best by throughput and by cost");
  scenario_options(search_cmd, search.scenario, search.sets);
  search_cmd->add_option("--top", search.top, "Rows of each ranking (default 10)")->check(count(1, 1'000'000));
  search_cmd->add_option("--simulate", search.simulate,
                         "Simulate the best K candidates by the closed-form estimate, or all (default 20)");
  search_cmd->add_flag("--csv", search.csv,
                       "Print every candidate as CSV (header first) instead: the simulated ones, then the estimated");
  search_cmd->add_option("--jobs", search.jobs, "Simulations run in parallel (default: one per core)")
      ->check(count(1, 1024));
  search_cmd->add_option("--nodes", search.nodes, "Node counts to search over too: 1,2,4,8 or 1..64 (doubling)");
  search_cmd
      ->add_option("--fidelity", search.fidelity,
                   "step, aggregate or coarse (default: coarse with tensor, pipeline or expert parallelism, "
                   "aggregate without)")
      ->check(CLI::IsMember({"step", "aggregate", "coarse"}));
  json_option(search_cmd, search.json_out, "every candidate and the rankings");
  html_option(search_cmd, search.html_out);
  resume_option(search_cmd, search.resume);
  shard_options(search_cmd, search.sharding);

  cli::PlanArgs plan;
  auto* plan_cmd = app.add_subcommand(
      "plan", "The cheapest cluster that trains the model by a deadline (or the fastest within a budget): instances, "
              "node counts, on-demand or spot, and layouts, screened, simulated and run as whole-run trials");
  scenario_options(plan_cmd, plan.scenario, plan.sets);
  plan_cmd->add_option("--tokens", plan.request.tokens, "Tokens to train on, such as 100B or 2.5e11 (transformers)");
  plan_cmd->add_option("--steps", plan.request.steps, "Iterations to train for, instead of --tokens");
  plan_cmd->add_option("--deadline", plan.request.deadline, "Time the run must finish in, such as 14d or 300h");
  plan_cmd->add_option("--budget", plan.request.budget, "Dollars the run may cost, such as 250k");
  plan_cmd->add_option_function<std::string>(
      "--instances", [&plan](const std::string& names) { plan.request.instances = names; },
      "Instance presets to consider, comma-separated (default: every one with a price; dtsim list instances)");
  plan_cmd->add_option("--nodes", plan.request.nodes, "Node counts to consider: 4,8,16 or 4..16 (doubling)");
  plan_cmd->add_option("--capacity", plan.request.capacity, "both (on demand and, where priced, spot) or on-demand")
      ->check(CLI::IsMember({"both", "on-demand"}));
  plan_cmd
      ->add_option("--clusters", plan.request.clusters,
                   "Clusters simulated and run as trials, the best by the screen "
                   "(default 4)")
      ->check(count(1, 1000));
  plan_cmd
      ->add_option("--layouts", plan.request.layouts,
                   "Layouts simulated per cluster, the best by the estimate (default 3)")
      ->check(count(1, 1000));
  plan_cmd->add_option("--trials", plan.request.trials, "Whole-run trials per plan (default 20)")
      ->check(count(1, 100'000));
  seed_option(plan_cmd, plan.seed, "Seed of the first trial (default: the scenario's run.seed)");
  parallel_options(plan_cmd, plan.csv_out, plan.jobs);
  json_option(plan_cmd, plan.json_out, "every cluster screened and every plan");
  html_option(plan_cmd, plan.html_out);
  memory_option(plan_cmd, plan.max_memory);
  resume_option(plan_cmd, plan.resume);
  shard_options(plan_cmd, plan.sharding);

  cli::MergeArgs merge;
  auto* merge_cmd = app.add_subcommand(
      "merge",
      "Put the shards of a sweep, compare, search or plan run with --shard K/N --out DIR together: prints and writes "
      "what the command run whole prints and writes");
  merge_cmd->add_option("dirs", merge.dirs, "The shards' --out directories")->required();
  merge_cmd->add_option("--csv", merge.csv_out, "Write the table as CSV to FILE (instead of the command's --csv)");
  merge_cmd->add_option("--json", merge.json_out, "Write the JSON to FILE (instead of the command's --json)");
  merge_cmd->add_option("--html", merge.html_out, "Write the HTML report to FILE (instead of the command's --html)");
  memory_option(search_cmd, search.max_memory);

  cli::CollectiveArgs coll;
  auto* coll_cmd = app.add_subcommand(
      "collective", "Benchmark one collective over a range of sizes, printed as nccl-tests prints it (algbw, busbw)");
  // The scenario's cluster and network model, or a cloud instance's nodes with the defaults of the format.
  coll_cmd->add_option("scenario", coll.scenario, "Scenario file (JSON); or give --instance instead");
  coll_cmd->add_option("--instance", coll.instance, "Run on a cloud instance preset (dtsim list instances), no file");
  coll_cmd->add_option("--nodes", coll.nodes, "Nodes of the --instance (default 1)")
      ->check(count(1, scenario::limits::kNodes));
  coll_cmd->add_option("--set", coll.sets, "Override a field: --set cluster.nodes=8 (repeatable)");
  coll_cmd->add_option("--op", coll.op, "all-reduce, reduce-scatter, all-gather, broadcast, reduce, all-to-all, ...")
      ->capture_default_str();
  coll_cmd->add_option("--algo", coll.algorithm, "ring, tree, binomial-tree, recursive-doubling, ... or auto")
      ->capture_default_str();
  coll_cmd->add_option("--proto", coll.protocol, "NCCL's protocol: LL, LL128, Simple or auto (as NCCL_PROTO)")
      ->capture_default_str();
  coll_cmd->add_option("--ranks", coll.ranks, "Ranks (default: every GPU of the cluster; nodes are added to fit)")
      ->check(count(1, scenario::limits::kGpus));
  coll_cmd->add_option("--sizes", coll.sizes, "Buffer sizes: 8B..8GiB (doubling) or 1MiB,1GiB (default 8B..1GiB)");
  coll_cmd->add_option("-b,--minbytes", coll.min_bytes, "As nccl-tests: the smallest size (8, 128K, 1M, 8G: binary)");
  coll_cmd->add_option("-e,--maxbytes", coll.max_bytes, "As nccl-tests: the largest size (default: -b's)");
  coll_cmd->add_option("-f,--stepfactor", coll.step_factor,
                       "As nccl-tests: each size this many times the last (default 2)");
  coll_cmd->add_option("--fidelity", coll.fidelity, "step (every step's flows) or aggregate (a phase at once)")
      ->capture_default_str();
  parallel_options(coll_cmd, coll.csv_out, coll.jobs);
  json_option(coll_cmd, coll.json_out, "every size's figures");
  html_option(coll_cmd, coll.html_out);
  memory_option(coll_cmd, coll.max_memory);

  cli::ExplainArgs explain;
  auto* explain_cmd = app.add_subcommand(
      "explain", "Describe a scenario's cluster (fabric, links, bottlenecks, price) and memory per GPU");
  scenario_options(explain_cmd, explain.scenario, explain.sets);
  explain_cmd->add_option("--path", explain.path, "Show the route between two GPUs: --path 0,9");
  json_option(explain_cmd, explain.json_out, "the figures shown");
  memory_option(explain_cmd, explain.max_memory);

  cli::ExportArgs export_args;
  auto* export_cmd = app.add_subcommand(
      "export", "Write the scenario's execution graph as MLCommons Chakra execution traces (ASTRA-sim reads them; "
                "model.trace reads them back)");
  scenario_options(export_cmd, export_args.scenario, export_args.sets);
  export_cmd->add_option("--chakra", export_args.chakra_dir, "The folder the files NAME.RANK.et go to (created)")
      ->required();
  export_cmd->add_option("--name", export_args.name, "NAME of the files (default: the scenario's name)");

  std::string list_what, list_json, list_csv;
  auto* list_cmd = app.add_subcommand("list", "List what a scenario can name");
  list_cmd
      ->add_option("what", list_what,
                   "instances, gpus, models, algorithms, topologies, strategies, failures or frameworks")
      ->required();
  json_option(list_cmd, list_json, "the list");
  list_cmd->add_option("--csv", list_csv, "Write the list as CSV to FILE (- for stdout): a row each, base units");

  cli::ValidateArgs validate;
  auto* validate_cmd = app.add_subcommand(
      "validate", "Run the validation cases (calibration/validation/): predicted against published and measured "
                  "figures, with the median and maximum error");
  validate_cmd->add_flag("--csv", validate.csv, "Print every case as CSV (header first) instead");
  validate_cmd->add_option("--filter", validate.filter, "Only the cases whose name or file name contains TEXT");
  validate_cmd->add_option("--jobs", validate.jobs, "Simulations run in parallel (default: one per core)")
      ->check(count(1, 1024));
  validate_cmd->add_option("--root", validate.root,
                           "The source tree holding calibration/validation/ and the scenarios (default: found at or "
                           "above the current directory, else the executable's, else PREFIX/share/dtsim beside an "
                           "installed PREFIX/bin/dtsim)");
  validate_cmd->add_option("--measurements", validate.measurements,
                           "Add the points a fit of this dtsim-probe measurement file holds back, as kernel cases");
  validate_cmd->add_option("--profile", validate.profile,
                           "Profile the held-back points are predicted on: a shipped name or a profile file "
                           "(default: the shipped profile of the measured GPU)");
  memory_option(validate_cmd, validate.max_memory);
  json_option(validate_cmd, validate.json_out, "every case and the error statistics");
  validate_cmd->add_flag("--every-point", validate.every_point,
                         "Predict every GEMM and memory point of --measurements, not only the held-back ones (for a "
                         "profile not fitted from that file)");

  cli::CalibrateArgs calibrate;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate", "Fit a measured GPU profile from dtsim-probe's measurement file (or alpha-beta costs from "
                   "nccl-tests output). Format: docs/measurement-format.md");
  calibrate_cmd->add_option("measurements", calibrate.measurements, "Measurement file written by dtsim-probe");
  calibrate_cmd->add_option("-o,--output", calibrate.output, "Profile to write: calibration/profiles/NAME.json");
  calibrate_cmd->add_option("--base", calibrate.base,
                            "Profile the peaks and capacities come from: a shipped one (dtsim list gpus) or a file "
                            "(default: chosen by the device's name)");
  calibrate_cmd->add_option("--name", calibrate.name, "The profile's name (default: the output file's name)");
  calibrate_cmd->add_option("--nccl-tests", calibrate.nccl_tests,
                            "Instead: fit alpha, beta and protocol efficiency from nccl-tests output (all_reduce_perf, "
                            "...)");
  calibrate_cmd->add_option("--link-bandwidth", calibrate.link_bandwidth,
                            "With --nccl-tests: the link's bandwidth per direction, e.g. 450GB/s");

  // A price per node-hour for run, sweep, compare and search: the same as --set cluster.price_per_hour=USD.
  double price = -1;
  for (auto* cmd : {run_cmd, sweep_cmd, compare_cmd, search_cmd, train_cmd})
    cmd->add_option("--price-per-hour", price, "Price of one node per hour in USD (overrides the instance's)")
        ->check(price_check());

  name_option_types(app);
  if (const auto mistyped = unknown_command(app, argc, argv)) {
    std::cerr << *mistyped;
    return cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
      if (const auto mistyped = unknown_option(app, argc, argv)) {
        std::cerr << *mistyped;
        return cli::kExitBadInput;
      }
    const int status = app.exit(e);
    return status == 0 ? cli::kExitOk : cli::kExitBadInput;
  }

  if (price >= 0) {
    const auto set = fmt::format("cluster.price_per_hour={}", price);
    run.sets.push_back(set);
    sweep.sets.push_back(set);
    compare.sets.push_back(set);
    search.sets.push_back(set);
    train.sets.push_back(set);
  }
  const std::vector<std::string> command_line(argv + 1, argv + argc);
  for (auto* sharding : {&sweep.sharding, &compare.sharding, &search.sharding, &plan.sharding})
    sharding->command_line = command_line;
  const auto dispatch = [&]() -> int {
    try {
      if (*explain_cmd) return cli::explain_command(explain);
      if (*list_cmd) return cli::list_command(list_what, list_json, list_csv);
      if (*export_cmd) return cli::export_command(export_args);
      if (*run_cmd) return cli::run_command(run);
      if (*sweep_cmd) return cli::sweep_command(sweep);
      if (*compare_cmd) {
        if (compare.strategies.empty() && compare.policies.empty())
          throw scenario::ScenarioError("dtsim compare", "", "give --strategies or --policies");
        if (!compare.policies.empty() && !compare.sharding.shard.empty())
          throw scenario::ScenarioError("--shard", "", "shards compare --strategies; --policies runs its trials here");
        return compare.policies.empty() ? cli::compare_command(compare) : cli::compare_policies_command(compare);
      }
      if (*merge_cmd) return cli::merge_command(merge);
      if (*search_cmd) return cli::search_command(search);
      if (*plan_cmd) return cli::plan_command(plan);
      if (*train_cmd) return cli::train_command(train);
      if (*coll_cmd) return cli::collective_command(coll);
      if (*calibrate_cmd) return cli::calibrate_command(calibrate);
      if (*validate_cmd) return cli::validate_command(validate);
    } catch (const Error& e) {
      // Each error says its status: bad input (the scenario, an override, a plan that cannot run, a trace, a limit) is
      // the user's to fix, 2; a run that failed, 1.
      std::cerr << "error: " << e.what() << "\n";
      return static_cast<int>(e.exit_status());
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      return cli::kExitFailed;
    }
    return cli::kExitOk;
  };
  const int status = dispatch();
  // What was printed must have arrived: a full disk or a closed pipe is a failed run, not a silent loss.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "error: standard output could not be written, so the result is lost ("
              << std::strerror(errno != 0 ? errno : EIO) << ")\n";
    return cli::kExitFailed;
  }
  return status;
}
