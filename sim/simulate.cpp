#include "sim/simulate.hpp"
#include "sim/series.hpp"

#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace dtsim {
engine::ReplayOptions replay_options(const scenario::Scenario& s) {
  engine::ReplayOptions o;
  o.iterations = s.run.warmup_iterations + s.run.iterations;
  o.network_model =
      s.network.model == scenario::NetworkModel::cm02 ? engine::NetworkModel::cm02 : engine::NetworkModel::lv08;
  o.cross_traffic = s.network.cross_traffic;
  return o;
}

namespace {} // namespace

Simulation simulate(const scenario::Scenario& scenario, bool with_trace, bool show_progress) {
  const auto plan = plan::make_plan(scenario);
  auto options = replay_options(scenario);
  options.show_progress = show_progress;
  const auto replay = engine::replay(scenario.cluster, plan.graph, options);
  Simulation sim{report::summarize(scenario, plan, replay), nullptr};
  if (with_trace) sim.trace = report::chrome_trace(plan, replay);
  return sim;
}

std::vector<SweepPoint> sweep(const scenario::Scenario& base, const std::vector<int>& node_counts, int jobs,
                              const SweepProgress& progress) {
  std::vector<engine::ChildJob> work;
  for (int nodes : node_counts)
    work.push_back([&base, nodes]() -> std::string {
      auto s = base;
      s.cluster.nodes = nodes;
      const auto plan = plan::make_plan(s);
      const auto replay = engine::replay_in_this_process(s.cluster, plan.graph, replay_options(s));
      return report::to_json(report::summarize(s, plan, replay)).dump();
    });
  auto outcomes = engine::run_in_children(
      work, jobs, [&](std::size_t done, std::size_t total, std::size_t) { progress ? progress(done, total) : void(); });

  std::vector<SweepPoint> points;
  const SweepPoint* reference = nullptr;
  for (std::size_t i = 0; i < node_counts.size(); ++i) {
    SweepPoint p;
    p.nodes = node_counts[i];
    p.ok = outcomes[i].ok;
    if (p.ok)
      p.result = report::run_result_from_json(nlohmann::json::parse(outcomes[i].output));
    else
      p.error = outcomes[i].output;
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

} // namespace dtsim
