#include "sim/studies/plan_report.hpp"

#include "sim/scenario/units.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/provenance.hpp"
#include "sim/studies/series.hpp"
#include "sim/studies/sweep.hpp"
#include "topologies/instance.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace dtsim::studies::planning {

using nlohmann::json;

// "15T", "100B", "2.5e11", "250k": a count as ML papers write token counts and budgets (K thousand, M million, B
// billion, T trillion); `flag` names it in the message, and `example` what is expected.
double parse_count(const std::string& flag, std::string text, const char* example) {
  text = trim(text);
  if (!text.empty() && text.front() == '$') text.erase(0, 1);
  if (text.size() > 3 && text.ends_with("USD")) text = trim(text.substr(0, text.size() - 3));
  double scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
    case 'K':
    case 'k':
      scale = 1e3;
      break;
    case 'M':
      scale = 1e6;
      break;
    case 'B':
      scale = 1e9;
      break;
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
    }
    if (scale != 1) text.pop_back();
  }
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value) || value <= 0)
    throw scenario::ScenarioError(flag, "", fmt::format("expected {}, got \"{}\"", example, text));
  return value * scale;
}

// A run's iterations: whole, and at most a trillion (a millisecond each would be 31 years), so that the run's
// arithmetic stays exact in 64-bit integers.
static std::int64_t run_steps_of(const std::string& flag, double steps) {
  constexpr double kMostSteps = 1e12;
  if (steps > kMostSteps)
    throw scenario::ScenarioError(
        flag, "", fmt::format("makes {:.3g} iterations; at most {:.0e} are simulated", steps, kMostSteps));
  return static_cast<std::int64_t>(steps);
}

Options plan_options(const scenario::Scenario& base, const Request& request) {
  Options options;
  options.search = search_options(request.sets, "", "", std::to_string(request.layouts));
  if (!request.nodes.empty()) {
    try {
      options.node_counts = parse_node_counts(request.nodes);
    } catch (const std::invalid_argument& e) {
      throw scenario::ScenarioError("--nodes", "", e.what());
    }
  }
  const auto presets = topologies::instance_names();
  for (const auto& name : split_list(request.instances.value_or(""))) {
    const auto given = trim(name);
    if (given.empty()) continue;
    if (std::find(presets.begin(), presets.end(), given) == presets.end())
      throw scenario::ScenarioError("--instances", "",
                                    fmt::format("unknown instance preset \"{}\"; expected some of {} (dtsim list "
                                                "instances)",
                                                given, fmt::join(presets, ", ")));
    options.instances.push_back(given);
  }
  if (request.instances && options.instances.empty())
    throw scenario::ScenarioError("--instances", "",
                                  fmt::format("is empty; expected some of {} (dtsim list instances), or leave it out "
                                              "for every preset with a price",
                                              fmt::join(presets, ", ")));
  const auto sample = search::unit_of(base);
  if (!request.tokens.empty() && !request.steps.empty())
    throw scenario::ScenarioError("--tokens", "", "give the run's length once: --tokens or --steps");
  if (!request.tokens.empty()) {
    if (sample.name != "tokens")
      throw scenario::ScenarioError("--tokens", "",
                                    fmt::format("the model counts {} (not tokens): give --steps instead", sample.name));
    const double per_step = static_cast<double>(search::space_of(base).global_batch) * sample.per_sample;
    options.steps = run_steps_of("--tokens", std::ceil(parse_count("--tokens", request.tokens) / per_step));
  }
  if (!request.steps.empty()) {
    const double steps = parse_count("--steps", request.steps, "a whole number of iterations such as 20000 or 250k");
    if (steps != std::floor(steps))
      throw scenario::ScenarioError("--steps", "",
                                    fmt::format("expected a whole number of iterations, got \"{}\"", request.steps));
    options.steps = run_steps_of("--steps", steps);
  }
  if (!request.deadline.empty()) {
    const auto seconds = scenario::parse_quantity(request.deadline, scenario::Dimension::duration);
    if (!seconds || *seconds <= 0)
      throw scenario::ScenarioError(
          "--deadline", "", fmt::format("expected a duration such as 14d or 300h, got \"{}\"", request.deadline));
    options.deadline = *seconds;
  }
  if (!request.budget.empty())
    options.budget = parse_count("--budget", request.budget, "a positive amount of US dollars such as 250k or $1.2M");
  if (request.capacity != "both" && request.capacity != "on-demand")
    throw scenario::ScenarioError("--capacity", "",
                                  fmt::format("expected both or on-demand, got \"{}\"", request.capacity));
  options.spot = request.capacity == "both";
  options.clusters = request.clusters;
  options.trials = request.trials;
  options.seed = request.seed;
  return options;
}

json plan_row(const Result& r, const Plan& p) {
  const auto& cluster = r.clusters[p.cluster];
  const auto& c = p.layout.candidate;
  const auto& run = p.layout.result;
  json row = layout_json(c);
  row.update(json{{"instance", cluster.instance},
                  {"nodes", cluster.nodes},
                  {"gpus", cluster.gpus},
                  {"capacity", std::string(to_string(p.capacity))},
                  {"on_front", p.on_front},
                  {"estimate_seconds", p.layout.estimate_seconds},
                  {"iteration_seconds", run.iteration.mean},
                  {"mfu", run.utilization.mfu},
                  {"bound", p.bound},
                  {"memory_bytes_per_gpu", run.memory.total()},
                  {"time_to_train_seconds_mean", p.seconds.mean},
                  {"time_to_train_seconds_p90", p.seconds.p90},
                  {"cost_usd_mean", p.dollars.mean},
                  {"cost_usd_p90", p.dollars.p90},
                  {"energy_kwh_mean", p.energy_kwh.mean},
                  {"goodput", p.goodput},
                  {"interruptions_mean", p.interruptions}});
  return row;
}

json plan_document(const scenario::Scenario& base, const Options& options, const Result& r) {
  json document = command_document("plan", scenario::to_json(base));
  document["steps"] = r.steps;
  document["steps_from"] = r.steps_from;
  document["global_batch"] = r.global_batch;
  document["unit"] = r.unit.name;
  document["units_per_sample"] = r.unit.per_sample;
  document["deadline_seconds"] = options.deadline ? json(*options.deadline) : json(nullptr);
  document["budget_usd"] = options.budget ? json(*options.budget) : json(nullptr);
  document["trials"] = options.trials;
  document["seed"] = options.seed;
  auto& clusters = document["clusters"] = json::array();
  for (const auto& c : r.clusters) {
    json row = {{"instance", c.instance},
                {"nodes", c.nodes},
                {"gpus", c.gpus},
                {"price_usd_per_hour", c.price_per_hour},
                {"spot_price_usd_per_hour", c.spot_price_per_hour > 0 ? json(c.spot_price_per_hour) : json(nullptr)},
                {"enumerated", c.counts.enumerated},
                {"estimated", c.counts.estimated},
                {"simulated", c.simulated},
                {"screened_by_simulation", c.screened_by_simulation}};
    if (c.best) {
      row["estimate_seconds"] = c.best->estimate_seconds;
      row["screened_time_to_train_seconds"] = c.screened_seconds;
      row["screened_cost_usd"] = c.screened_dollars;
    } else {
      row["why_none"] = c.why_none;
    }
    clusters.push_back(std::move(row));
  }
  auto& plans = document["plans"] = json::array();
  for (const auto& p : r.plans)
    plans.push_back(plan_row(r, p));
  const auto index = [](const std::optional<std::size_t>& i) { return i ? json(*i) : json(nullptr); };
  document["cheapest_on_time"] = index(r.cheapest_on_time);
  document["fastest_in_budget"] = index(r.fastest_in_budget);
  document["cheapest"] = index(r.cheapest);
  document["fastest"] = index(r.fastest);
  if (!r.binding.empty()) document["binding"] = r.binding;
  return document;
}

} // namespace dtsim::studies::planning
