// `dtsim search`: the design space of large-model parallelism (tensor, pipeline, data, expert; micro-batch, schedule,
// ZeRO, recomputation) simulated candidate by candidate, the best by throughput and by cost.
#include "sim/search.hpp"
#include "sim/simulate.hpp"
#include "tools/dtsim/commands.hpp"
#include "tools/dtsim/provenance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <stdexcept>

namespace dtsim::cli {
namespace {

using search::Candidate;
using search::Point;

// A figure with about `digits` significant digits and no exponent: "0.7478", "123.5", "20991".
std::string figure(double value, int digits = 4) {
  if (value == 0 || !std::isfinite(value)) return value == 0 ? "0" : fmt::format("{}", value);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return fmt::format("{:.{}f}", value, std::clamp(digits - 1 - magnitude, 0, 9));
}

double gib(double bytes) {
  return bytes / (1024.0 * 1024.0 * 1024.0);
}

std::string schedule(const Candidate& c) {
  if (c.pipeline == 1) return "-";
  const std::string name(scenario::to_string(c.schedule));
  return c.virtual_stages > 1 ? fmt::format("{}:{}", name, c.virtual_stages) : name;
}

// Sequence parallelism: "on", "off", or "-" without tensor parallelism.
std::string sequence_parallel(const Candidate& c) {
  return c.tensor == 1 ? "-" : c.sequence_parallel ? "on" : "off";
}

scenario::Fidelity parse_fidelity(const std::string& name) {
  for (auto f : {scenario::Fidelity::step, scenario::Fidelity::aggregate, scenario::Fidelity::coarse})
    if (scenario::to_string(f) == name) return f;
  throw scenario::ScenarioError("--fidelity", "", fmt::format("expected step, aggregate or coarse, got \"{}\"", name));
}

// Whether a --set gives this field (or the section holding it), so the search keeps the scenario's value.
bool overridden(const std::vector<std::string>& sets, const std::string& path) {
  return std::any_of(sets.begin(), sets.end(), [&](const std::string& set) {
    const auto o = scenario::parse_override(set);
    return o.path == path || path.starts_with(o.path + ".");
  });
}

// One ranking: a row per candidate, two header lines (the figure, its unit) as `dtsim compare` prints them.
std::string table(const std::vector<const Point*>& points, const search::Result& result, const std::string& sample_unit,
                  bool nodes, bool priced) {
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
                                 sequence_parallel(c),
                                 p->estimate_rank > 0 ? figure(p->estimate_seconds) : "-",
                                 figure(r.iteration.mean),
                                 figure(p->throughput, 5),
                                 r.utilization.mfu > 0 ? figure(100 * r.utilization.mfu, 3) : "-",
                                 fmt::format("{:.2f}", gib(r.memory.total()))};
    if (priced) row.push_back(figure(p->cost_per_million));
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
std::string csv(const search::Result& result) {
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

// What the CSV has, in JSON: every candidate with its layout, its estimate and, when simulated, its figures (null
// where they do not apply), the counts, and which candidates lead each ranking.
nlohmann::json json_document(const scenario::Scenario& base, const search::Result& result) {
  using nlohmann::json;
  auto document = command_document("search", scenario::to_json(base));
  const auto& unit = result.unit.name;
  document["unit"] = {{"name", unit}, {"per_sample", result.unit.per_sample}};
  const auto& n = result.counts;
  document["counts"] = {{"enumerated", n.enumerated}, {"invalid", n.invalid},     {"do_not_fit", n.do_not_fit},
                        {"estimated", n.estimated},   {"simulated", n.simulated}, {"not_simulated", n.not_simulated},
                        {"failed", n.failed}};
  const auto row = [&](const Point& p) {
    const auto& c = p.candidate;
    json r{{"nodes", c.nodes},
           {"gpus", c.nodes * result.space.gpus_per_node},
           {"tensor", c.tensor},
           {"pipeline", c.pipeline},
           {"data", c.data},
           {"expert", c.expert},
           {"micro_batch", c.micro_batch},
           {"micro_batches", c.micro_batches},
           {"schedule", scenario::to_string(c.schedule)},
           {"virtual_stages", c.virtual_stages},
           {"zero_stage", c.zero_stage},
           {"recompute", scenario::to_string(c.recompute)},
           {"sequence_parallel", c.sequence_parallel},
           {"estimate_rank", p.estimate_rank > 0 ? json(p.estimate_rank) : json()},
           {"estimate_seconds", p.estimate_rank > 0 ? json(p.estimate_seconds) : json()},
           {"simulated", p.simulated},
           {"ok", p.ok}};
    const auto& m = p.result;
    const bool priced = m.price_per_hour > 0;
    r["iteration_seconds"] = p.ok ? json(m.iteration.mean) : json();
    r[fmt::format("throughput_{}_per_second", unit)] = p.ok ? json(p.throughput) : json();
    r["samples_per_second"] = p.ok ? json(m.throughput) : json();
    r["mfu"] = p.ok ? json(m.utilization.mfu) : json();
    r["memory_bytes_per_gpu"] = p.ok ? json(m.memory.total()) : json();
    r["cost_usd_per_hour"] = p.ok && priced ? json(m.price_per_hour) : json();
    r[fmt::format("cost_usd_per_million_{}", unit)] =
        p.ok && p.cost_per_million > 0 ? json(p.cost_per_million) : json();
    if (!p.ok) r["error"] = p.simulated ? p.error : "not simulated: ranked below the simulated ones by the estimate";
    return r;
  };
  auto& candidates = document["candidates"] = json::array();
  for (const auto& p : result.points)
    candidates.push_back(row(p));
  for (const auto& p : result.screened)
    candidates.push_back(row(p));
  // Each ranking as indices into "candidates" (the simulated points come first, in result.points' order).
  const auto indices = [&](const std::vector<const Point*>& ranked) {
    json out = json::array();
    for (const auto* p : ranked)
      out.push_back(p - result.points.data());
    return out;
  };
  document["best_by_throughput"] = indices(search::by_throughput(result));
  document["best_by_cost"] = indices(search::by_cost(result));
  return document;
}

std::string counts_line(const search::Counts& n) {
  const int unestimated = n.simulated + n.not_simulated - n.estimated;
  return fmt::format(
      "Candidates: {} enumerated, {} invalid, {} do not fit in GPU memory, {} estimated, {} simulated{}{}, "
      "{} failed\n",
      n.enumerated, n.invalid, n.do_not_fit, n.estimated, n.simulated,
      n.not_simulated > 0 ? " (the best by the estimate)" : "",
      unestimated > 0 ? fmt::format(" ({} without an estimate among them)", unestimated) : "", n.failed);
}

// The reasons behind the rejected and failed candidates, the most frequent first (at most `limit` of each kind),
// and the smallest memory need among those that do not fit.
std::string reasons(const search::Result& result, std::size_t limit) {
  std::string out;
  const auto grouped = [&](const std::string& label, const std::vector<std::string>& texts) {
    std::map<std::string, int> count;
    for (const auto& t : texts)
      ++count[t.substr(0, t.find('\n'))];
    std::vector<std::pair<std::string, int>> order(count.begin(), count.end());
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (std::size_t i = 0; i < std::min(limit, order.size()); ++i)
      out += fmt::format("  {} ({} candidate{}): {}\n", label, order[i].second, order[i].second == 1 ? "" : "s",
                         order[i].first);
  };
  std::vector<std::string> invalid, failed;
  const search::Screened* smallest = nullptr;
  for (const auto& s : result.rejected) {
    if (s.verdict == search::Verdict::invalid) invalid.push_back(s.reason);
    if (s.verdict == search::Verdict::does_not_fit && (!smallest || s.memory_bytes < smallest->memory_bytes))
      smallest = &s;
  }
  for (const auto& p : result.points)
    if (!p.ok) failed.push_back(p.error);
  grouped("invalid", invalid);
  if (smallest) {
    const auto& c = smallest->candidate;
    const auto nodes = result.space.node_counts.size() > 1 ? fmt::format("nodes {} ", c.nodes) : std::string();
    out += fmt::format(
        "  do not fit: the smallest, {}tp {} pp {} dp {} ep {} micro-batch {} zero {} recompute {} sp {}, {}\n", nodes,
        c.tensor, c.pipeline, c.data, c.expert, c.micro_batch, c.zero_stage, scenario::to_string(c.recompute),
        sequence_parallel(c), smallest->reason);
  }
  grouped("failed", failed);
  return out;
}

} // namespace

int search_command(const SearchArgs& args) {
  const auto base = load_with_overrides(args.scenario, args.sets);
  search::Options options;
  if (!args.nodes.empty()) {
    try {
      options.node_counts = parse_node_counts(args.nodes);
    } catch (const std::invalid_argument& e) {
      throw scenario::ScenarioError("--nodes", "", e.what());
    }
  }
  if (!args.fidelity.empty()) options.fidelity = parse_fidelity(args.fidelity);
  if (args.top < 1) throw scenario::ScenarioError("--top", "", fmt::format("expected >= 1, got {}", args.top));
  // One measured iteration after one warm-up keeps thousands of candidates affordable, unless the user chose.
  if (overridden(args.sets, "run.iterations")) options.iterations.reset();
  if (overridden(args.sets, "run.warmup_iterations")) options.warmup_iterations.reset();
  if (args.simulate == "all") {
    options.simulate = 0;
  } else {
    try {
      std::size_t used = 0;
      options.simulate = std::stoi(args.simulate, &used);
      if (used != args.simulate.size() || options.simulate < 1) throw std::invalid_argument(args.simulate);
    } catch (const std::exception&) {
      throw scenario::ScenarioError("--simulate", "",
                                    fmt::format("expected a count >= 1 or \"all\", got \"{}\"", args.simulate));
    }
  }
  check_writable({args.json_out, args.html_out}, {args.scenario});
  options.jobs = parallel_jobs(args.jobs);
  const auto resume = open_resume(args.resume, args.sharding);
  options.resume = resume.get();
  options.limit = memory_limit_of(args.max_memory, options.jobs);

  search::Result result;
  {
    const ProgressLine progress("search: candidates simulated");
    result = search::search(base, options, [&](std::size_t done, std::size_t total) { progress.update(done, total); });
  }
  const auto best = search::by_throughput(result);
  const auto& sample_unit = base.model.workload.sample_unit;
  if (best.empty()) {
    const auto& space = result.space;
    std::string why =
        result.counts.enumerated == 0
            ? fmt::format("no layout divides the global batch of {} {}: it must be a multiple of the micro-batch (1, "
                          "2, 4 or 8) x the data-parallel replicas\n",
                          space.global_batch, sample_unit)
            : counts_line(result.counts) + reasons(result, 5);
    std::cerr << "error: no candidate layout ran; " << why;
    return kExitFailed;
  }

  const auto document = json_document(base, result);
  if (args.csv) {
    std::cout << csv(result);
    std::cerr << counts_line(result.counts);
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
  out << fmt::format("Every candidate that fits priced by the closed-form estimate of its plan; {} simulated for {} "
                     "measured iteration(s) after {} warm-up, at {}.\n",
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
  out << fmt::format("\nBest {} by throughput\n", std::min<std::size_t>(args.top, best.size()));
  out << table(top(best), result, sample_unit, nodes, priced);
  if (priced) {
    const auto cheapest = search::by_cost(result);
    out << fmt::format("\nBest {} by cost\n", std::min<std::size_t>(args.top, cheapest.size()));
    out << table(top(cheapest), result, sample_unit, nodes, priced);
  }
  out << "\n" << counts_line(result.counts) << reasons(result, 3);
  return finish_outputs(out, {}, document, args.json_out, args.html_out, kExitOk);
}

} // namespace dtsim::cli
