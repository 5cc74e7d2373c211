// `dtsim search`: the design space of large-model parallelism (tensor, pipeline, data, expert; micro-batch, schedule,
// ZeRO, recomputation) simulated candidate by candidate, the best by throughput and by cost.
#include "sim/simulate.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/search.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <stdexcept>

namespace dtsim::cli {
namespace {

using studies::search::Candidate;
using studies::search::Point;

double gib(double bytes) {
  return bytes / (1024.0 * 1024.0 * 1024.0);
}

std::string schedule(const Candidate& c) {
  if (c.pipeline == 1) return "-";
  const std::string name(scenario::to_string(c.schedule));
  return c.virtual_stages > 1 ? fmt::format("{}:{}", name, c.virtual_stages) : name;
}

// One ranking: a row per candidate, two header lines (the figure, its unit) as `dtsim compare` prints them.
std::string table(const std::vector<const Point*>& points, const studies::search::Result& result,
                  const std::string& sample_unit, bool nodes, bool priced) {
  const auto& unit = result.unit.name;
  std::vector<std::vector<std::string>> rows{
      {"tp", "pp", "dp", "ep", "micro-batch", "micro-batches", "schedule", "zero", "recompute", "sp", "estimate",
       "iteration", "throughput", "MFU", "memory", "cost"},
      {"", "", "", "", fmt::format("({})", sample_unit), "(per iteration)", "", "(stage)", "", "", "(s)", "(s)",
       fmt::format("({}/s)", unit), "(%)", "(GiB/GPU)", fmt::format("(USD/1M {})", unit)}};
  if (nodes) {
    rows[0].insert(rows[0].begin(), {"nodes", "GPUs"});
    rows[1].insert(rows[1].begin(), {"", ""});
  }
  if (!priced) {
    rows[0].pop_back();
    rows[1].pop_back();
  }
  for (const auto* p : points) {
    const auto& c = p->candidate;
    const auto& r = p->result;
    std::vector<std::string> row{std::to_string(c.tensor),
                                 std::to_string(c.pipeline),
                                 std::to_string(c.data),
                                 std::to_string(c.expert),
                                 std::to_string(c.micro_batch),
                                 std::to_string(c.micro_batches),
                                 schedule(c),
                                 std::to_string(c.zero_stage),
                                 std::string(scenario::to_string(c.recompute)),
                                 studies::sequence_parallel_text(c),
                                 p->estimate_rank > 0 ? report::significant(p->estimate_seconds) : "-",
                                 report::significant(r.iteration.mean),
                                 report::significant(p->throughput, 5),
                                 r.utilization.mfu > 0 ? report::significant(100 * r.utilization.mfu, 3) : "-",
                                 fmt::format("{:.2f}", gib(r.memory.total()))};
    if (priced) row.push_back(report::significant(p->cost_per_million));
    if (nodes) row.insert(row.begin(), {std::to_string(c.nodes), std::to_string(r.gpus)});
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c)
      line += fmt::format("{}{:>{}}", c == 0 ? "" : "  ", row[c], widths[c]);
    out += line + "\n";
  }
  return out;
}

// Every candidate in base units: the simulated ones, the successful by throughput, then the failed ones with why;
// then the estimated ones not simulated, by the estimate.
std::string csv(const studies::search::Result& result) {
  const auto& unit = result.unit.name;
  std::string out = fmt::format(
      "nodes,gpus,tensor,pipeline,data,expert,micro_batch,micro_batches,schedule,"
      "virtual_stages,zero_stage,recompute,sequence_parallel,estimate_rank,estimate_seconds,iteration_seconds,"
      "throughput_{}_per_second,samples_per_second,mfu,memory_bytes_per_gpu,"
      "cost_usd_per_hour,cost_usd_per_million_{},error\n",
      unit, unit);
  const auto row_start = [&](const Point& p) {
    const auto& c = p.candidate;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},", c.nodes, c.nodes * result.space.gpus_per_node, c.tensor,
                    c.pipeline, c.data, c.expert, c.micro_batch, c.micro_batches, scenario::to_string(c.schedule),
                    c.virtual_stages, c.zero_stage, scenario::to_string(c.recompute), c.sequence_parallel);
    out += p.estimate_rank > 0 ? fmt::format("{},{:.9g},", p.estimate_rank, p.estimate_seconds) : std::string(",,");
  };
  for (const auto& p : result.points) {
    row_start(p);
    if (!p.ok) {
      out += ",,,,,,," + csv_field(p.error) + "\n";
      continue;
    }
    const auto& r = p.result;
    out += fmt::format("{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},\n", r.iteration.mean, p.throughput, r.throughput,
                       r.utilization.mfu, r.memory.total(), csv_number(r.price_per_hour, r.price_per_hour > 0),
                       p.cost_per_million > 0 ? fmt::format("{:.9g}", p.cost_per_million) : std::string());
  }
  for (const auto& p : result.screened) {
    row_start(p);
    out += ",,,,,,,not simulated: ranked below the simulated ones by the estimate\n";
  }
  return out;
}

} // namespace

int search_command(const SearchArgs& args) {
  const auto base = load_with_overrides(args.scenario, args.sets);
  auto options = studies::search_options(args.sets, args.nodes, args.fidelity, args.simulate);
  if (args.top < 1) throw scenario::ScenarioError("--top", "", fmt::format("expected >= 1, got {}", args.top));
  check_writable({args.json_out, args.html_out}, {args.scenario});
  options.jobs = parallel_jobs(args.jobs);
  const auto resume = open_resume(args.resume, args.sharding);
  options.resume = resume.get();
  options.limit = memory_limit_of(args.max_memory, options.jobs);

  studies::search::Result result;
  {
    const ProgressLine progress("search: candidates simulated");
    result = studies::search::search(base, options,
                                     [&](std::size_t done, std::size_t total) { progress.update(done, total); });
  }
  if (const auto status = shard_finished(resume.get())) return *status;
  const auto best = studies::search::by_throughput(result);
  const auto& sample_unit = base.model.workload.sample_unit;
  if (best.empty()) {
    std::cerr << "error: " << studies::search_nothing_ran(result, sample_unit);
    return kExitFailed;
  }

  const auto document = studies::search_document(base, result);
  if (args.csv) {
    std::cout << csv(result);
    std::cerr << studies::search_counts_line(result.counts);
    return finish_outputs(std::cerr, {}, document, args.json_out, args.html_out, kExitOk);
  }
  std::ostream& out = report_stream({args.json_out, args.html_out});

  const bool nodes = !args.nodes.empty();
  const bool priced = std::any_of(best.begin(), best.end(), [](const Point* p) { return p->cost_per_million > 0; });
  const auto& unit = result.unit;
  out << fmt::format("{}: {} x {} GPU(s) per node ({}), global batch {} {}{} per iteration\n", base.name,
                     fmt::format("{} node(s)", nodes ? args.nodes : std::to_string(base.cluster.nodes)),
                     base.cluster.gpus_per_node, base.cluster.gpu, result.space.global_batch, sample_unit,
                     unit.per_sample != 1 ? fmt::format(" of {:g} {}", unit.per_sample, unit.name) : "");
  const auto& run = base.run;
  const int measured = options.iterations.value_or(run.iterations);
  const int warmup = options.warmup_iterations.value_or(run.warmup_iterations);
  const auto& n = result.counts;
  const auto how =
      n.closed_form_only > 0
          ? fmt::format("Every candidate that fits priced in closed form where it can be, and {} (the closed form's "
                        "best, and those it does not price) by the closed-form estimate of their plans",
                        n.estimated - n.closed_form_only)
          : std::string("Every candidate that fits priced by the closed-form estimate of its plan");
  out << fmt::format("{}; {} simulated for {} measured iteration(s) after {} warm-up, at {}.\n", how,
                     options.simulate > 0 ? fmt::format("the best {} by it", options.simulate) : std::string("each"),
                     measured, warmup,
                     !options.fidelity ? std::string("coarse fidelity with tensor, pipeline or expert "
                                                     "parallelism and aggregate without")
                     : *options.fidelity == scenario::Fidelity::coarse
                         ? std::string("coarse fidelity (aggregate without tensor, pipeline or expert "
                                       "parallelism, which coarse needs)")
                         : fmt::format("{} fidelity", scenario::to_string(*options.fidelity)));
  const auto top = [&](std::vector<const Point*> points) {
    if (points.size() > static_cast<std::size_t>(args.top)) points.resize(static_cast<std::size_t>(args.top));
    return points;
  };
  // On one cluster the price per hour is fixed, so the cheapest are often the fastest: then one table says both.
  const auto fastest = top(best);
  const auto cheapest = priced ? top(studies::search::by_cost(result)) : std::vector<const Point*>{};
  const bool same = priced && cheapest == fastest;
  out << fmt::format("\nBest {} by throughput{}\n", fastest.size(), same ? " and by cost" : "");
  out << table(fastest, result, sample_unit, nodes, priced);
  if (priced && !same) {
    out << fmt::format("\nBest {} by cost\n", cheapest.size());
    out << table(cheapest, result, sample_unit, nodes, priced);
  }
  out << "\n" << studies::search_counts_line(result.counts) << studies::search_reasons(result, 3);
  return finish_outputs(out, {}, document, args.json_out, args.html_out, kExitOk);
}

} // namespace dtsim::cli
