// Sweep: the scenario read again at each node count, every point simulated in a child process.
#include "sim/studies/sweep.hpp"

#include "sim/studies/points.hpp"
#include "sim/studies/resume.hpp"
#include "sim/studies/series.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>
#include <utility>

namespace dtsim::studies {

scenario::Scenario with_nodes(const scenario::Scenario& base, int nodes) {
  auto document = scenario::to_json(base);
  document["cluster"]["nodes"] = nodes;
  // The data-parallel degree follows the GPUs: the canonical form spells out the one resolved at the base's count,
  // which no other count has.
  if (const auto p = document.find("parallelism"); p != document.end()) p->erase("data");
  try {
    return scenario::parse_scenario(document.dump(), base.origin);
  } catch (const scenario::ScenarioError& e) {
    throw scenario::ScenarioError(e.file(), e.pointer(), fmt::format("{} (at --nodes {})", e.detail(), nodes));
  }
}

std::vector<SweepPoint> sweep(const scenario::Scenario& base, const std::vector<int>& node_counts, int jobs,
                              const SweepProgress& progress, ResumeStore* resume, const MemoryLimit& limit) {
  // Every point is read in the parent first: a node count the scenario cannot have stops the sweep before anything
  // runs, with exit status 2, rather than failing its row after the others have run.
  std::vector<scenario::Scenario> scenarios;
  for (int nodes : node_counts) {
    scenarios.push_back(with_nodes(base, nodes));
    check_scenario_size(scenarios.back(), limit); // and one too large for the memory limit stops it too
  }
  std::vector<engine::ChildJob> work;
  PointBook book{{}, resume, {}, limit};
  for (const auto& s : scenarios) {
    work.push_back(point_job([&s, &limit] { return run_here(s, limit); }));
    book.labels.push_back(fmt::format("the point at {} node(s)", s.cluster.nodes));
    if (resume) book.keys.push_back(resume->key("sweep", scenario::to_json(s).dump()));
  }
  auto outcomes = run_points(work, jobs, progress, book);
  std::vector<SweepPoint> points;
  const SweepPoint* reference = nullptr;
  for (std::size_t i = 0; i < node_counts.size(); ++i) {
    SweepPoint p;
    p.nodes = node_counts[i];
    take_outcome(p, outcomes[i]);
    points.push_back(std::move(p));
  }
  for (auto& p : points) {
    if (!p.ok) continue;
    if (!reference) reference = &p;
    p.speedup = p.result.throughput / reference->result.throughput;
    p.efficiency = p.speedup / (static_cast<double>(p.result.gpus) / reference->result.gpus);
  }
  return points;
}

std::vector<int> parse_node_counts(const std::string& text) {
  const auto values = parse_series(text, [&text](const std::string& item) {
    int value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc{} || end != item.data() + item.size() || value < 1)
      throw std::invalid_argument(
          fmt::format("bad node list \"{}\": expected positive integers like \"1,2,4,8\" or a range \"1..64\"", text));
    return static_cast<double>(value);
  });
  return {values.begin(), values.end()};
}

} // namespace dtsim::studies
