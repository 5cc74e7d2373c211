// `dtsim plan`: the cheapest cluster that trains the model by a deadline (or the fastest within a budget), across the
// instance presets, node counts, on-demand and spot capacity and every layout `dtsim search` covers.
#include "io/units.hpp"
#include "sim/scenario/units.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/plan_report.hpp"
#include "sim/studies/provenance.hpp"
#include "sim/studies/series.hpp"
#include "sim/studies/sweep.hpp"
#include "tools/dtsim/commands.hpp"
#include "topologies/instance.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace dtsim::cli {
namespace {

using nlohmann::json;
using studies::planning::Plan;

// One unit of time for a whole report, that of the longest time shown (io/units.hpp, as the HTML report picks it).
using TimeUnit = io::Unit;
const TimeUnit& time_unit(const studies::planning::Result& r) {
  std::vector<double> times;
  for (const auto& p : r.plans)
    times.push_back(p.seconds.p90);
  for (const auto& c : r.clusters)
    times.push_back(c.screened_seconds);
  return io::unit_for_all(io::Quantity::time, times);
}

std::string layout_text(const studies::search::Candidate& c) {
  std::string out = fmt::format("tp{} pp{} dp{}", c.tensor, c.pipeline, c.data);
  if (c.expert > 1) out += fmt::format(" ep{}", c.expert);
  out += fmt::format(", {}x{}", c.micro_batch, c.micro_batches);
  if (c.pipeline > 1 && c.virtual_stages > 1) out += fmt::format(", interleaved:{}", c.virtual_stages);
  out += fmt::format(", zero {}", c.zero_stage);
  if (c.recompute != scenario::Recompute::none) out += fmt::format(", {} recompute", scenario::to_string(c.recompute));
  if (c.sequence_parallel) out += ", sp";
  return out;
}

std::string plans_table(const studies::planning::Result& r, const TimeUnit& unit) {
  const auto in_unit = fmt::format("({})", unit.symbol);
  std::vector<std::vector<std::string>> rows{
      {"", "instance", "nodes", "GPUs", "capacity", "layout (tp pp dp, micro-batch x count, ...)", "iteration", "MFU",
       "bound", "time to train", "(p90)", "cost", "(p90)", "energy", "goodput"},
      {"", "", "", "", "", "", "(s)", "(%)", "", in_unit, in_unit, "(USD)", "(USD)", "(kWh)", "(%)"}};
  for (const auto& p : r.plans) {
    const auto& c = r.clusters[p.cluster];
    rows.push_back({p.on_front ? "*" : "", c.instance, std::to_string(c.nodes), std::to_string(c.gpus),
                    std::string(studies::planning::to_string(p.capacity)), layout_text(p.layout.candidate),
                    fmt::format("{:.4f}", p.layout.result.iteration.mean),
                    fmt::format("{:.1f}", 100 * p.layout.result.utilization.mfu), p.bound,
                    fmt::format("{:.2f}", p.seconds.mean / unit.scale),
                    fmt::format("{:.2f}", p.seconds.p90 / unit.scale), fmt::format("{:.0f}", p.dollars.mean),
                    fmt::format("{:.0f}", p.dollars.p90), report::significant(p.energy_kwh.mean),
                    fmt::format("{:.1f}", 100 * p.goodput)});
  }
  return aligned_table(rows, 6);
}

std::string chosen_line(const char* what, const studies::planning::Result& r, const std::optional<std::size_t>& i,
                        const TimeUnit& unit) {
  if (!i) return {};
  const auto& p = r.plans[*i];
  const auto& c = r.clusters[p.cluster];
  return fmt::format("{}: {} x {} ({} GPUs) {}, {}: {:.2f} {} ({:.2f} in 9 of 10 trials), {:.0f} USD ({:.0f})\n", what,
                     c.nodes, c.instance, c.gpus,
                     p.capacity == studies::planning::Capacity::spot ? "on spot" : "on demand",
                     layout_text(p.layout.candidate), p.seconds.mean / unit.scale, unit.symbol,
                     p.seconds.p90 / unit.scale, p.dollars.mean, p.dollars.p90);
}

std::string clusters_table(const studies::planning::Result& r, const TimeUnit& unit) {
  std::vector<std::vector<std::string>> rows{
      {"instance", "nodes", "GPUs", "price", "spot", "layouts", "best estimate", "time to train", "cost", "simulated"},
      {"", "", "", "(USD/h)", "(USD/h)", "(estimated)", "(s/iteration)", fmt::format("({})", unit.symbol), "(USD)",
       ""}};
  for (const auto& c : r.clusters) {
    std::vector<std::string> row{c.instance,
                                 std::to_string(c.nodes),
                                 std::to_string(c.gpus),
                                 fmt::format("{:.2f}", c.price_per_hour),
                                 c.spot_price_per_hour > 0 ? fmt::format("{:.2f}", c.spot_price_per_hour) : "-",
                                 std::to_string(c.counts.estimated)};
    if (c.best)
      row.insert(row.end(),
                 {fmt::format("{:.4f}", c.best->estimate_seconds),
                  fmt::format("{:.2f}", c.screened_seconds / unit.scale), fmt::format("{:.0f}", c.screened_dollars),
                  c.screened_by_simulation ? "yes (no estimate: screened by simulation)"
                  : c.simulated            ? "yes"
                                           : ""});
    else
      row.insert(row.end(), {"-", "-", "-", c.why_none});
    rows.push_back(std::move(row));
  }
  return aligned_table(rows, 1);
}

std::string plans_csv(const studies::planning::Result& r) {
  json rows = json::array();
  for (const auto& p : r.plans)
    rows.push_back(studies::planning::plan_row(r, p));
  // What a plan is and what it gives first; its layout's fields after.
  return csv_of(rows, {"instance", "nodes", "gpus", "capacity", "on_front", "time_to_train_seconds_mean",
                       "time_to_train_seconds_p90", "cost_usd_mean", "cost_usd_p90", "energy_kwh_mean", "goodput",
                       "interruptions_mean", "iteration_seconds", "estimate_seconds", "mfu", "bound",
                       "memory_bytes_per_gpu"});
}

} // namespace

int plan_command(const PlanArgs& args) {
  const auto base = load_with_overrides(args.scenario, args.sets);
  const auto sample = studies::search::unit_of(base);
  auto request = args.request;
  request.sets = args.sets;
  request.seed = args.seed.value_or(base.run.seed);
  auto options = studies::planning::plan_options(base, request);
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  options.search.jobs = parallel_jobs(args.jobs);
  options.search.limit = memory_limit_of(args.max_memory, options.search.jobs);
  // --resume and --shard keep the simulated layouts (the screen and the trials are cheap and run again).
  const auto resume = open_resume(args.resume, args.sharding);
  options.search.resume = resume.get();

  studies::planning::Result result;
  {
    const ProgressLine progress("plan: simulations and trials");
    result = studies::planning::plan(base, options,
                                     [&](std::size_t done, std::size_t total) { progress.update(done, total); });
  }
  if (const auto status = shard_finished(resume.get())) return *status;
  std::ostream& out = report_stream({args.csv_out, args.json_out, args.html_out});
  int screened = 0, estimated = 0, simulated = 0;
  for (const auto& c : result.clusters) {
    screened += c.counts.enumerated;
    estimated += c.counts.estimated;
    simulated += c.simulated;
  }
  const auto& unit = time_unit(result);
  out << fmt::format("{}: {} steps of {} {}{} ({}){}{}\n", base.name, result.steps, result.global_batch,
                     base.model.workload.sample_unit,
                     sample.per_sample != 1 ? fmt::format(" of {:g} {}", sample.per_sample, sample.name) : "",
                     result.steps_from == "given" ? (request.tokens.empty() ? "--steps" : "--tokens " + request.tokens)
                                                  : result.steps_from,
                     options.deadline ? fmt::format(", deadline {:.2f} {}", *options.deadline / unit.scale, unit.symbol)
                                      : "",
                     options.budget ? fmt::format(", budget {:.0f} USD", *options.budget) : "");
  out << fmt::format("Screened {} cluster(s): {} layouts, {} estimated; the best {} by the screen simulated ({} "
                     "layouts each) and run as {} whole-run trials each{}.\n\n",
                     result.clusters.size(), screened, estimated, simulated, options.search.simulate, options.trials,
                     options.spot ? ", on demand and, where priced, on spot" : ", on demand");
  out << "Plans, by time to train (* on the front of time against cost)\n" << plans_table(result, unit) << "\n";
  out << chosen_line("Cheapest on time", result, result.cheapest_on_time, unit);
  out << chosen_line("Fastest within budget", result, result.fastest_in_budget, unit);
  if (!options.deadline && !options.budget) {
    out << chosen_line("Cheapest", result, result.cheapest, unit);
    out << chosen_line("Fastest", result, result.fastest, unit);
  }
  out << "\nClusters screened (each one's best layout by the estimate, on demand)\n" << clusters_table(result, unit);
  const auto document = studies::planning::plan_document(base, options, result);
  const int status = result.binding.empty() ? kExitOk : kExitBadInput;
  if (!result.binding.empty()) std::cerr << "error: " << result.binding << "\n";
  std::vector<OutputFile> files;
  if (!args.csv_out.empty()) files.push_back({args.csv_out, plans_csv(result)});
  return finish_outputs(out, std::move(files), document, args.json_out, args.html_out, status);
}

} // namespace dtsim::cli
