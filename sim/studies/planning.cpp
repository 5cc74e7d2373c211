#include "sim/studies/planning.hpp"

#include "sim/studies/resume.hpp"

#include "topologies/instance.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace dtsim::studies::planning {

std::string_view to_string(Capacity c) {
  return c == Capacity::spot ? "spot" : "on-demand";
}

namespace {

double gib(double bytes) {
  return bytes / (1024.0 * 1024.0 * 1024.0);
}

const char* on(Capacity c) {
  return c == Capacity::spot ? "on spot" : "on demand";
}

std::string duration(double seconds) {
  return seconds >= 2 * 86400.0 ? fmt::format("{:.2f} d", seconds / 86400.0) : fmt::format("{:.1f} h", seconds / 3600);
}

// What the iteration spends most of its time on, beyond its own compute: the largest of the exposed communication by
// dimension and the idle time (a pipeline's bubble, a wait for the host), named when it is at least a tenth of the
// iteration; else "compute".
std::string bound_of(const report::RunResult& r) {
  const auto& b = r.breakdown;
  const std::pair<double, const char*> parts[] = {{b.exposed_data, "data-parallel communication"},
                                                  {b.exposed_tensor, "tensor-parallel communication"},
                                                  {b.exposed_pipeline, "pipeline transfers"},
                                                  {b.exposed_expert, "expert all-to-all"},
                                                  {b.idle, "idle (pipeline bubble, waits)"}};
  const auto* largest = &parts[0];
  for (const auto& p : parts)
    if (p.first > largest->first) largest = &p;
  const double total = b.compute + b.exposed_communication + b.idle;
  return total > 0 && largest->first >= 0.1 * total ? largest->second : "compute";
}

std::vector<std::string> instances_of(const Options& options) {
  if (!options.instances.empty()) return options.instances;
  std::vector<std::string> out;
  for (const auto& i : topologies::all_instances())
    if (i.price.on_demand_per_hour > 0) out.push_back(i.name);
  return out;
}

// The cluster's screen: every layout estimated, the best kept.
// `prepared` keeps the screen's layouts chosen for simulation, so a cluster picked for simulation is not screened
// twice.
Cluster screen_cluster(const scenario::Scenario& base, const std::string& instance, int nodes, const Options& options,
                       std::int64_t steps, const search::Options& search_options, search::Result& prepared) {
  Cluster c;
  c.instance = instance;
  c.nodes = nodes;
  const auto preset = topologies::find_instance(instance);
  if (preset) {
    c.gpus = preset->gpus * nodes;
    c.price_per_hour = preset->price.on_demand_per_hour * nodes;
  }
  if (options.spot && preset && preset->price.spot_per_hour && base.lifecycle.spot.enabled)
    c.spot_price_per_hour = *preset->price.spot_per_hour * nodes;
  // An instance that cannot run the job at all (its GPU lacks the model's precision or fused attention, its preset
  // lacks what the scenario's network needs) is a row of the plan that says why, not the end of the plan.
  try {
    const auto on_demand = on_cluster(base, instance, nodes, Capacity::on_demand, steps);
    c.gpus = on_demand.world_size();
    c.price_per_hour = on_demand.cluster.price_per_node_hour * nodes;
    prepared = search::prepare(on_demand, search_options);
    const bool estimated = std::any_of(prepared.points.begin(), prepared.points.end(),
                                       [](const search::Point& p) { return p.estimate_rank > 0; });
    if (!estimated && !prepared.points.empty()) {
      search::simulate_chosen(on_demand, search_options, prepared);
      c.screened_by_simulation = true;
    }
  } catch (const scenario::ScenarioError& e) {
    c.why_none = "cannot run: " + (e.pointer().empty() ? e.detail() : fmt::format("{}: {}", e.pointer(), e.detail()));
    return c;
  }
  const auto& screened = prepared;
  c.counts = screened.counts;
  for (const auto* list : {&screened.points, &screened.screened})
    for (const auto& p : *list)
      if (p.estimate_rank == 1) c.best = p;
  if (const auto ranked = search::by_throughput(screened); c.screened_by_simulation && !ranked.empty()) {
    c.best = *ranked.front();
    c.best->estimate_seconds = c.best->result.iteration.mean;
  }
  if (c.best) {
    prepared.screened.clear(); // only the layouts chosen for simulation are needed again
    prepared.rejected.clear();
    c.screened_seconds = c.best->estimate_seconds * static_cast<double>(steps);
    c.screened_dollars = c.screened_seconds / 3600 * c.price_per_hour;
    return c;
  }
  // Why nothing can run here: the smallest memory need, or the first reason a layout was refused.
  const search::Screened* nearest = nullptr;
  for (const auto& r : screened.rejected)
    if (r.verdict == search::Verdict::does_not_fit && (!nearest || r.memory_bytes < nearest->memory_bytes))
      nearest = &r;
  if (nearest)
    c.why_none = fmt::format("no layout fits: the smallest needs {:.2f} GiB per GPU of {:.2f} GiB",
                             gib(nearest->memory_bytes), gib(nearest->capacity_bytes));
  else if (c.screened_by_simulation)
    c.why_none = "no layout ran: " + screened.points.front().error;
  else if (!screened.rejected.empty())
    c.why_none = "no layout is valid: " + screened.rejected.front().reason;
  else
    c.why_none = "no layout has an estimate";
  return c;
}

// The clusters to simulate, at most `clusters` of them: those on the screened front (on demand or on spot) before the
// others, and in each part nearest the decision first (with a deadline the on-time ones by cost, then the late ones by
// time; with a budget those within it by time, then the others by cost; else by cost).
std::vector<std::size_t> chosen_clusters(const std::vector<Cluster>& clusters, const Options& options) {
  // Each cluster on demand and, where priced, on spot (its screened time at the spot price: the interruptions are
  // the trials' to count).
  std::vector<std::size_t> screened;
  std::vector<FrontPoint> points;
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    const auto& c = clusters[i];
    if (!c.best) continue;
    screened.push_back(i);
    points.push_back({c.screened_seconds, c.screened_dollars});
    if (c.spot_price_per_hour > 0) {
      screened.push_back(i);
      points.push_back({c.screened_seconds, c.screened_seconds / 3600 * c.spot_price_per_hour});
    }
  }
  std::vector<bool> on_front(clusters.size(), false);
  for (auto k : pareto_front(points))
    on_front[screened[k]] = true;
  std::vector<std::size_t> front;
  for (std::size_t i = 0; i < clusters.size(); ++i)
    if (clusters[i].best) front.push_back(i);
  const auto key = [&](std::size_t i) {
    const auto& c = clusters[i];
    if (options.deadline) {
      const bool late = c.screened_seconds > *options.deadline;
      return std::make_tuple(!on_front[i], late, late ? c.screened_seconds : c.screened_dollars, i);
    }
    if (options.budget) {
      const bool over = c.screened_dollars > *options.budget;
      return std::make_tuple(!on_front[i], over, over ? c.screened_dollars : c.screened_seconds, i);
    }
    return std::make_tuple(!on_front[i], false, c.screened_dollars, i);
  };
  std::stable_sort(front.begin(), front.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  if (static_cast<int>(front.size()) > options.clusters) front.resize(static_cast<std::size_t>(options.clusters));
  return front;
}

// The plan of least `key` among those `eligible` takes (the first of equals); none when it takes none.
template <class Key, class Eligible>
std::optional<std::size_t> best_plan(const std::vector<Plan>& plans, Key key, Eligible eligible) {
  std::optional<std::size_t> out;
  for (std::size_t k = 0; k < plans.size(); ++k)
    if (eligible(plans[k]) && (!out || key(plans[k]) < key(plans[*out]))) out = k;
  return out;
}

// The constraint that cannot be met, and by how much; empty when each given one is met by some plan.
std::string binding_constraint(const Result& r, const Options& options) {
  if (r.plans.empty()) return {};
  if (options.deadline && !r.cheapest_on_time) {
    const auto& fastest = r.plans[*r.fastest];
    return fmt::format("no plan meets the deadline of {}: the fastest, {} x {} {}, takes {} in 9 of 10 trials, {} "
                       "over",
                       duration(*options.deadline), r.clusters[fastest.cluster].nodes,
                       r.clusters[fastest.cluster].instance, on(fastest.capacity), duration(fastest.seconds.p90),
                       duration(fastest.seconds.p90 - *options.deadline));
  }
  if (options.budget && !r.fastest_in_budget) {
    const auto& cheapest = r.plans[*r.cheapest];
    return fmt::format("no plan is within the budget of {:.0f} USD: the cheapest, {} x {} {}, costs {:.0f} USD in 9 "
                       "of 10 trials, {:.0f} USD over",
                       *options.budget, r.clusters[cheapest.cluster].nodes, r.clusters[cheapest.cluster].instance,
                       on(cheapest.capacity), cheapest.dollars.p90, cheapest.dollars.p90 - *options.budget);
  }
  return {};
}

} // namespace

scenario::Scenario on_cluster(const scenario::Scenario& base, const std::string& instance, int nodes, Capacity capacity,
                              std::int64_t steps) {
  auto document = scenario::to_json(base);
  document["cluster"] = {{"instance", instance}, {"nodes", nodes}};
  // The base's layout is its own cluster's: each candidate sets its own (search::candidate_scenario), and the global
  // batch is held by the search. What is not layout (order, routing, overlaps) stays.
  if (document.contains("parallelism")) {
    auto& section = document["parallelism"];
    for (const char* layout : {"tensor", "pipeline", "expert", "data", "stages", "micro_batches", "global_batch",
                               "schedule", "virtual_stages", "sequence_parallel"})
      section.erase(layout);
  }
  if (document.contains("training") && document["training"].contains("strategy"))
    document["training"]["strategy"]["accumulation"] = 1;
  // Each layout runs at its own fidelity (search::fidelity_of) and takes the overlap choices that apply to it: the
  // cluster's scenario, without a layout, keeps them as given for its layouts (search::candidate_scenario).
  document["run"].erase("fidelity");
  scenario::keep_applicable_overlaps(document, false, false);
  if (steps > 0) document["training"]["steps"] = steps;
  if (capacity == Capacity::on_demand) {
    document.erase("spot");
  } else {
    const auto preset = topologies::find_instance(instance);
    if (!preset || !preset->price.spot_per_hour || !document.contains("spot"))
      throw scenario::ScenarioError(
          base.origin, "/spot",
          fmt::format("{} has no published spot price, or the scenario no spot section", instance));
    document["spot"]["price_per_hour"] = *preset->price.spot_per_hour;
  }
  auto on = scenario::parse_scenario(document.dump(), base.origin);
  on.parallelism.overlap.given = base.parallelism.overlap.given;
  return on;
}

std::vector<std::size_t> pareto_front(const std::vector<FrontPoint>& points) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
      const auto &a = points[j], &b = points[i];
      dominated = j != i && a.seconds <= b.seconds && a.dollars <= b.dollars &&
                  (a.seconds < b.seconds || a.dollars < b.dollars);
    }
    if (!dominated) out.push_back(i);
  }
  return out;
}

Result plan(const scenario::Scenario& base, const Options& options, const SweepProgress& progress) {
  Result result;
  result.steps = options.steps > 0
                     ? options.steps
                     : run_steps(base, &result.steps_from, "the plan's steps or tokens, or in the scenario ");
  if (options.steps > 0) result.steps_from = "given";
  result.unit = search::unit_of(base);
  result.global_batch = search::space_of(base).global_batch;

  auto search_options = options.search;
  search_options.node_counts.clear(); // each cluster is searched at its own node count
  search_options.global_batch = result.global_batch;
  if (search_options.simulate < 1) throw std::invalid_argument("plan: layouts simulated per cluster must be >= 1");
  const auto node_counts = options.node_counts.empty() ? std::vector<int>{base.cluster.nodes} : options.node_counts;
  std::vector<search::Result> prepared; // per cluster
  for (const auto& instance : instances_of(options))
    for (int nodes : node_counts)
      result.clusters.push_back(
          screen_cluster(base, instance, nodes, options, result.steps, search_options, prepared.emplace_back()));

  const auto chosen = chosen_clusters(result.clusters, options);
  if (chosen.empty()) {
    const auto nearest = std::find_if(result.clusters.begin(), result.clusters.end(),
                                      [](const Cluster& c) { return c.why_none.starts_with("no layout fits"); });
    const auto& shown = nearest != result.clusters.end() ? *nearest : result.clusters.front();
    throw scenario::ScenarioError(
        base.origin, "",
        fmt::format("no cluster can train the model: on {} x {}, {}", shown.nodes, shown.instance, shown.why_none));
  }

  // Each chosen cluster's best layouts simulated; its fastest is its plan's layout.
  std::size_t done = 0, total = 0;
  // The layouts each chosen cluster will simulate (fewer than asked where fewer fit; none where the screen simulated
  // them) and its trials: the count the progress reaches.
  for (auto i : chosen)
    total += (result.clusters[i].screened_by_simulation ? 0 : prepared[i].points.size()) +
             static_cast<std::size_t>(options.trials) * (result.clusters[i].spot_price_per_hour > 0 ? 2 : 1);
  const auto step = [&](std::size_t d, std::size_t) {
    if (progress) progress(done + d, total);
  };
  // The chosen clusters' layouts in one batch (a --shard runs its share of all of them, then stops).
  std::vector<scenario::Scenario> on_demand;
  on_demand.reserve(chosen.size()); // the batch holds pointers to them
  std::vector<search::Chosen> batch;
  for (auto i : chosen) {
    auto& cluster = result.clusters[i];
    cluster.simulated = true;
    if (cluster.screened_by_simulation) continue; // its layouts ran in the screen
    on_demand.push_back(on_cluster(base, cluster.instance, cluster.nodes, Capacity::on_demand, result.steps));
    batch.push_back({&on_demand.back(), &prepared[i]});
  }
  search::simulate_chosen(batch, search_options, step);
  // A shard stops at its layouts: the trials run where the shards are merged.
  if (search_options.resume && search_options.resume->finished_shard()) return result;
  for (auto i : chosen)
    done += result.clusters[i].screened_by_simulation ? 0 : prepared[i].points.size();
  for (auto i : chosen) {
    auto& cluster = result.clusters[i];
    const auto& searched = prepared[i];
    const auto ranked = search::by_throughput(searched);
    if (ranked.empty()) {
      cluster.why_none =
          "no layout ran: " + (searched.points.empty() ? std::string("none chosen") : searched.points.front().error);
      continue;
    }
    std::vector<Capacity> capacities{Capacity::on_demand};
    if (cluster.spot_price_per_hour > 0) capacities.push_back(Capacity::spot);
    for (auto capacity : capacities) {
      Plan p;
      p.cluster = i;
      p.capacity = capacity;
      p.layout = *ranked.front();
      p.bound = bound_of(p.layout.result);
      const auto laid_out =
          search::candidate_scenario(on_cluster(base, cluster.instance, cluster.nodes, capacity, result.steps),
                                     p.layout.candidate, search_options);
      // The iteration is the one just simulated: train() runs the whole run's trials on it (and simulates the other
      // shapes of a job that has several).
      const auto iteration =
          iterates_in_several_shapes(laid_out) ? std::nullopt : std::optional(p.layout.result.iteration.mean);
      const auto run =
          train(laid_out, options.trials, options.seed, search_options.jobs, step, search_options.limit, iteration);
      done += static_cast<std::size_t>(options.trials);
      p.seconds = trial_stats(run.trials, [](const lifecycle::TrialResult& t) { return t.wall; });
      p.dollars = trial_stats(run.trials, [](const lifecycle::TrialResult& t) { return t.cost; });
      p.energy_kwh = trial_stats(run.trials, [](const lifecycle::TrialResult& t) { return t.energy_kwh; });
      p.goodput = trial_stats(run.trials, [](const lifecycle::TrialResult& t) { return goodput(t); }).mean;
      p.interruptions =
          trial_stats(run.trials, [](const lifecycle::TrialResult& t) { return t.failures + t.preemptions; }).mean;
      result.plans.push_back(std::move(p));
    }
  }
  if (result.plans.empty())
    throw scenario::ScenarioError(base.origin, "", "no plan ran: " + result.clusters[chosen.front()].why_none);

  const auto by_time = [](const Plan& p) { return std::make_pair(p.seconds.mean, p.dollars.mean); };
  const auto by_cost = [](const Plan& p) { return std::make_pair(p.dollars.mean, p.seconds.mean); };
  std::stable_sort(result.plans.begin(), result.plans.end(),
                   [&](const Plan& a, const Plan& b) { return by_time(a) < by_time(b); });
  std::vector<FrontPoint> points;
  for (const auto& p : result.plans)
    points.push_back({p.seconds.mean, p.dollars.mean});
  for (auto k : pareto_front(points))
    result.plans[k].on_front = true;
  const auto any = [](const Plan&) { return true; };
  result.cheapest = best_plan(result.plans, by_cost, any);
  result.fastest = best_plan(result.plans, by_time, any);
  if (options.deadline)
    result.cheapest_on_time =
        best_plan(result.plans, by_cost, [&](const Plan& p) { return p.seconds.p90 <= *options.deadline; });
  if (options.budget)
    result.fastest_in_budget =
        best_plan(result.plans, by_time, [&](const Plan& p) { return p.dollars.p90 <= *options.budget; });
  result.binding = binding_constraint(result, options);
  return result;
}

} // namespace dtsim::studies::planning
