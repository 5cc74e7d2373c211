#include "sim/simulate.hpp"

#include "sim/child_runs.hpp"
#include "sim/series.hpp"

#include "sim/chakra/chakra.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/kineto/kineto.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

namespace dtsim {
MemoryLimit memory_limit(double max_memory_flag, int jobs) {
  const double total = max_memory_flag > 0 ? max_memory_flag : engine::default_memory_limit();
  const int share = std::max(1, jobs);
  return {total / share, engine::describe_limit(total / share, max_memory_flag > 0, share)};
}

void check_scenario_size(const scenario::Scenario& s, const MemoryLimit& limit, bool with_timelines) {
  const auto options = replay_options(s, limit);
  if (limit.memory > 0) {
    // A lower bound from the scenario alone: every simulated rank runs each layer forward and backward (at least)
    // for each of its micro-batches, every iteration. Coarse fidelity simulates one rank per tensor-parallel group.
    const auto& p = s.parallelism;
    engine::Footprint lower;
    lower.ranks = s.world_size();
    lower.simulated_ranks =
        s.run.fidelity == scenario::Fidelity::coarse ? lower.ranks / std::max(1, p.tensor) : lower.ranks;
    lower.iterations = options.iterations;
    const double layers = static_cast<double>(s.model.workload.layers.size()) / std::max(1, p.pipeline);
    lower.intervals = with_timelines ? 2 * std::max(1.0, layers) * std::max(1, p.micro_batches) *
                                           static_cast<double>(lower.simulated_ranks) * lower.iterations
                                     : 0;
    lower.bytes = engine::kProcessBytes + engine::kBytesPerRank * static_cast<double>(lower.ranks) +
                  engine::kBytesPerInterval * lower.intervals;
    engine::check_footprint(lower, options);
    // A trace is read before any of this, in this process: its text and what is kept of it are the first cost.
    if (const auto& trace = s.model.trace) {
      const bool profiler = trace->format == "pytorch-profiler";
      const double reading = profiler ? kineto::reading_bytes(trace->path) : chakra::reading_bytes(trace->path);
      if (reading > limit.memory)
        throw engine::ResourceError(fmt::format(
            "reading the {} trace {} would take about {} of memory ({}), over the limit of {}; {} or raise "
            "--max-memory",
            profiler ? "PyTorch profiler" : "Chakra", trace->path, engine::describe_bytes(reading),
            profiler ? "its text and the events kept from it" : "its files and their nodes, planned", limit.memory_text,
            profiler ? "profile fewer steps (torch.profiler's schedule: active=1)" : "trace fewer iterations"));
    }
  }
}

plan::Plan checked_plan(const scenario::Scenario& s, const MemoryLimit& limit) {
  check_scenario_size(s, limit);
  return plan::make_plan(s);
}

engine::ReplayOptions replay_options(const scenario::Scenario& s, const MemoryLimit& limit) {
  engine::ReplayOptions o;
  o.memory_limit = limit.memory;
  o.memory_limit_text = limit.memory_text;
  o.iterations = s.run.warmup_iterations + s.run.iterations;
  o.warmup_iterations = s.run.warmup_iterations;
  o.skip_repeats = s.run.skip_repeats;
  o.network_model =
      s.network.model == scenario::NetworkModel::cm02 ? engine::NetworkModel::cm02 : engine::NetworkModel::lv08;
  o.cross_traffic = s.network.cross_traffic;
  return o;
}

std::optional<report::RunResult> dense_warmup_stage(const scenario::Scenario& s, const MemoryLimit& limit) {
  if (s.training.compression.warmup_steps == 0) return std::nullopt;
  auto dense = s;
  dense.training.compression = {};
  const auto plan = checked_plan(dense, limit);
  const auto replay = engine::replay(dense.cluster, plan.graph, replay_options(dense, limit));
  return report::summarize(dense, plan, replay);
}

namespace {

using detail::run_here;
using detail::run_points;
using detail::take_outcome;

} // namespace

Simulation simulate(const scenario::Scenario& scenario, bool with_trace, bool show_progress, const MemoryLimit& limit,
                    const report::TraceOptions& trace) {
  const auto plan = checked_plan(scenario, limit);
  auto options = replay_options(scenario, limit);
  options.show_progress = show_progress;
  options.sample_links = with_trace;
  const auto replay = engine::replay(scenario.cluster, plan.graph, options);
  Simulation sim{report::summarize(scenario, plan, replay), nullptr};
  if (const auto dense = dense_warmup_stage(scenario, limit)) report::add_warmup_stage(scenario, *dense, sim.result);
  if (with_trace) sim.trace = report::chrome_trace(plan, replay, scenario.cluster, trace);
  return sim;
}

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
  detail::PointBook book{{}, resume, {}, limit};
  for (const auto& s : scenarios) {
    work.push_back(detail::point_job([&s, &limit] { return run_here(s, limit); }));
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
  detail::PointBook book{{}, resume, {}, limit};
  // The scenario is re-read with each strategy in the child, so one that does not validate fails its row only.
  for (const auto& name : strategy_names) {
    work.push_back(detail::point_job([&base, name, &limit] { return run_here(with_strategy(base, name), limit); }));
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

} // namespace dtsim
