#include "sim/simulate.hpp"

#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace dtsim {
namespace {

engine::ReplayOptions replay_options(const scenario::Scenario& s) {
  engine::ReplayOptions o;
  o.iterations = s.run.warmup_iterations + s.run.iterations;
  o.network_model =
      s.network.model == scenario::NetworkModel::cm02 ? engine::NetworkModel::cm02 : engine::NetworkModel::lv08;
  o.cross_traffic = s.network.cross_traffic;
  return o;
}

int parse_positive(std::string_view text, const std::string& whole) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 1)
    throw std::invalid_argument(
        fmt::format("bad node list \"{}\": expected positive integers like \"1,2,4,8\" or a range \"1..64\"", whole));
  return value;
}

} // namespace

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
  std::vector<int> counts;
  if (auto dots = text.find(".."); dots != std::string::npos) {
    const int from = parse_positive(std::string_view(text).substr(0, dots), text);
    const int to = parse_positive(std::string_view(text).substr(dots + 2), text);
    if (to < from) throw std::invalid_argument(fmt::format("bad node range \"{}\": the end is below the start", text));
    for (long n = from; n <= to; n *= 2)
      counts.push_back(static_cast<int>(n));
    return counts;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    counts.push_back(parse_positive(std::string_view(text).substr(start, comma - start), text));
    start = comma + 1;
  }
  return counts;
}

} // namespace dtsim
