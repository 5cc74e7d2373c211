// Compare: the scenario read again with each strategy, every one simulated in a child process.
#include "sim/studies/compare.hpp"

#include "sim/strategies/strategy.hpp"
#include "sim/studies/points.hpp"
#include "sim/studies/resume.hpp"
#include "sim/studies/series.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <utility>

namespace dtsim::studies {

scenario::Scenario with_strategy(const scenario::Scenario& base, std::string_view name) {
  namespace st = strategies;
  const auto scheme = st::parse_strategy_name(name);
  const auto& own = base.training.strategy;
  // A field equal to what the scenario's own short name gives was not the scenario's choice (or changes nothing):
  // the new name's default stands. A preset's servers are the preset's, not the cluster's.
  const auto implied = st::parse_strategy_name(st::strategy_name(own));
  auto document = scenario::to_json(base);
  const auto canonical = document.at("training").at("strategy");
  nlohmann::json strategy = {{"name", std::string(name)}};
  const auto keep = [&](const char* key, bool set_by_scenario, bool used) {
    if (set_by_scenario && used) strategy[key] = canonical.at(key);
  };
  const bool servers = st::uses_servers(scheme);
  keep("servers", own.servers != implied.servers, servers);
  keep("sparse_embeddings", own.sparse_embeddings != implied.sparse_embeddings,
       scheme.kind == st::Kind::parameter_server);
  keep("backup_workers", own.backup_workers != implied.backup_workers,
       servers && scheme.schedule == st::Schedule::synchronous);
  keep("accumulation", own.accumulation != implied.accumulation, true);
  keep("graph", own.graph != implied.graph, scheme.kind == st::Kind::dpsgd);
  document["training"]["strategy"] = std::move(strategy);
  try {
    return scenario::parse_scenario(document.dump(), base.origin);
  } catch (const scenario::ScenarioError& e) {
    throw scenario::ScenarioError(e.file(), e.pointer(), fmt::format("{} (with strategy \"{}\")", e.detail(), name));
  }
}

std::vector<ComparePoint> compare(const scenario::Scenario& base, const std::vector<std::string>& strategy_names,
                                  int jobs, const SweepProgress& progress, ResumeStore* resume,
                                  const MemoryLimit& limit) {
  for (const auto& name : strategy_names)
    strategies::parse_strategy_name(name); // a bad name stops the comparison before anything runs
  std::vector<engine::ChildJob> work;
  PointBook book{{}, resume, {}, limit};
  // The scenario is re-read with each strategy in the child, so one that does not validate fails its row only.
  for (const auto& name : strategy_names) {
    work.push_back(point_job([&base, name, &limit] { return run_here(with_strategy(base, name), limit); }));
    book.labels.push_back(fmt::format("strategy {}", name));
    // The key holds what decides the point: the base scenario and the strategy's name.
    if (resume) book.keys.push_back(resume->key("compare " + name, scenario::to_json(base).dump()));
  }
  auto outcomes = run_points(work, jobs, progress, book);
  std::vector<ComparePoint> points;
  for (std::size_t i = 0; i < strategy_names.size(); ++i) {
    ComparePoint p;
    p.strategy = strategy_names[i];
    take_outcome(p, outcomes[i]);
    points.push_back(std::move(p));
  }
  return points;
}

std::vector<std::string> parse_strategy_list(const std::string& text) {
  std::vector<std::string> names;
  for (const auto& item : split_list(text)) {
    auto name = trim(item);
    if (name.empty())
      throw std::invalid_argument(fmt::format("empty strategy name in \"{}\"; expected short names separated by "
                                              "commas, such as \"allreduce,ps-sync,ssp:3\"",
                                              text));
    strategies::parse_strategy_name(name); // says which name is bad and what is accepted
    names.push_back(std::move(name));
  }
  return names;
}

} // namespace dtsim::studies
