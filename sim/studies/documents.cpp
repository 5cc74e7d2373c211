#include "sim/studies/documents.hpp"

#include "sim/studies/provenance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace dtsim::studies {
namespace {

using search::Point;

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

} // namespace

nlohmann::json run_document(const report::RunResult& result) {
  return with_provenance(report::to_json(result));
}

nlohmann::json sweep_document(const scenario::Scenario& base, const std::vector<SweepPoint>& points) {
  auto document = command_document("sweep", scenario::to_json(base));
  auto& rows = document["points"] = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json row{{"nodes", p.nodes}, {"ok", p.ok}};
    if (p.ok) {
      row["speedup"] = p.speedup;
      row["efficiency"] = p.efficiency;
      row["result"] = run_document(p.result);
    } else {
      row["error"] = p.error;
    }
    rows.push_back(std::move(row));
  }
  return document;
}

nlohmann::json compare_document(const std::vector<ComparePoint>& points) {
  auto out = nlohmann::json::array();
  for (const auto& p : points)
    out.push_back(p.ok ? run_document(p.result)
                       : nlohmann::json{{"strategy", {{"name", p.strategy}}}, {"error", p.error}});
  return out;
}

nlohmann::json layout_json(const search::Candidate& c) {
  return {{"tensor", c.tensor},
          {"pipeline", c.pipeline},
          {"data", c.data},
          {"expert", c.expert},
          {"micro_batch", c.micro_batch},
          {"micro_batches", c.micro_batches},
          {"schedule", scenario::to_string(c.schedule)},
          {"virtual_stages", c.virtual_stages},
          {"zero_stage", c.zero_stage},
          {"recompute", scenario::to_string(c.recompute)},
          {"sequence_parallel", c.sequence_parallel}};
}

nlohmann::json search_document(const scenario::Scenario& base, const search::Result& result) {
  using nlohmann::json;
  auto document = command_document("search", scenario::to_json(base));
  const auto& unit = result.unit.name;
  document["unit"] = {{"name", unit}, {"per_sample", result.unit.per_sample}};
  const auto& n = result.counts;
  document["counts"] = {{"enumerated", n.enumerated},
                        {"invalid", n.invalid},
                        {"do_not_fit", n.do_not_fit},
                        {"estimated", n.estimated},
                        {"closed_form_only", n.closed_form_only},
                        {"simulated", n.simulated},
                        {"not_simulated", n.not_simulated},
                        {"failed", n.failed}};
  const auto row = [&](const Point& p) {
    const auto& c = p.candidate;
    json r = layout_json(c);
    r.update(json{{"nodes", c.nodes},
                  {"gpus", c.nodes * result.space.gpus_per_node},
                  {"estimate_rank", p.estimate_rank > 0 ? json(p.estimate_rank) : json()},
                  {"estimate_seconds", p.estimate_rank > 0 ? json(p.estimate_seconds) : json()},
                  {"estimate_from", p.estimate_rank == 0 ? json()
                                    : p.closed_form_only ? "closed form"
                                                         : "plan"},
                  {"closed_form_seconds", p.closed_form_seconds > 0 ? json(p.closed_form_seconds) : json()},
                  {"simulated", p.simulated},
                  {"ok", p.ok}});
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

search::Options search_options(const std::vector<std::string>& sets, const std::string& nodes,
                               const std::string& fidelity, const std::string& simulate) {
  search::Options options;
  if (!nodes.empty()) {
    try {
      options.node_counts = parse_node_counts(nodes);
    } catch (const std::invalid_argument& e) {
      throw scenario::ScenarioError("--nodes", "", e.what());
    }
  }
  if (!fidelity.empty()) options.fidelity = parse_fidelity(fidelity);
  // One measured iteration after one warm-up keeps thousands of candidates affordable, unless the user chose.
  if (overridden(sets, "run.iterations")) options.iterations.reset();
  if (overridden(sets, "run.warmup_iterations")) options.warmup_iterations.reset();
  if (simulate == "all") {
    options.simulate = 0;
  } else {
    try {
      std::size_t used = 0;
      options.simulate = std::stoi(simulate, &used);
      if (used != simulate.size() || options.simulate < 1) throw std::invalid_argument(simulate);
    } catch (const std::exception&) {
      throw scenario::ScenarioError("--simulate", "",
                                    fmt::format("expected a count >= 1 or \"all\", got \"{}\"", simulate));
    }
  }
  return options;
}

std::string sequence_parallel_text(const search::Candidate& c) {
  return c.tensor == 1 ? "-" : c.sequence_parallel ? "on" : "off";
}

std::string search_counts_line(const search::Counts& n) {
  const int unestimated = n.simulated + n.not_simulated - n.estimated;
  const auto closed_form = n.closed_form_only > 0
                               ? fmt::format(" ({} in closed form alone, not built; {} from their plans)",
                                             n.closed_form_only, n.estimated - n.closed_form_only)
                               : std::string();
  return fmt::format(
      "Candidates: {} enumerated, {} invalid, {} do not fit in GPU memory, {} estimated{}, {} simulated{}{}, "
      "{} failed\n",
      n.enumerated, n.invalid, n.do_not_fit, n.estimated, closed_form, n.simulated,
      n.not_simulated > 0 ? " (the best by the estimate)" : "",
      unestimated > 0 ? fmt::format(" ({} without an estimate among them)", unestimated) : "", n.failed);
}

std::string search_reasons(const search::Result& result, std::size_t limit) {
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
        sequence_parallel_text(c), smallest->reason);
  }
  grouped("failed", failed);
  return out;
}

std::string search_nothing_ran(const search::Result& result, const std::string& sample_unit) {
  const auto& space = result.space;
  const std::string why =
      result.counts.enumerated == 0
          ? fmt::format("no layout divides the global batch of {} {}: it must be a multiple of the micro-batch (1, "
                        "2, 4 or 8) x the data-parallel replicas\n",
                        space.global_batch, sample_unit)
          : search_counts_line(result.counts) + search_reasons(result, 5);
  return "no candidate layout ran; " + why;
}

} // namespace dtsim::studies
