#pragma once
// `dtsim plan`: which cluster trains a model by a deadline for the least money. The question a team asks before it
// rents anything: which instances, how many, on demand or on spot, laid out how, and what it will cost.
//
// Over every instance preset asked for and every node count, each cluster's layouts are screened as `dtsim search`
// screens them (enumerated, checked against GPU memory, priced by the closed-form estimate of their plan); a
// cluster's best estimate gives its screened time to train (steps x iteration) and cost (time x its price). The
// clusters on the screened front of time against cost, nearest the decision first, have their best layouts simulated
// (the fastest by the simulation is the cluster's layout); each of those is then run as `dtsim train` runs it, as
// seeded whole-run trials with the scenario's failures, checkpoints and restarts, once on demand and once on spot
// capacity (where the instance has a published spot price and the scenario gives an interruption rate). On one
// cluster the fastest layout is also the cheapest (the cluster's price per hour is fixed), so one layout per cluster
// is all the decision needs.
#include "sim/engine/child_process.hpp"
#include "sim/studies/search.hpp"
#include "sim/studies/train.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::studies::planning {

enum class Capacity { on_demand, spot };
std::string_view to_string(Capacity c);

struct Options {
  std::vector<std::string> instances; // presets (topologies/instances); empty: every one with an on-demand price
  std::vector<int> node_counts;       // empty: the base's node count
  std::int64_t steps = 0;             // iterations of the run; 0: the base's (training.steps, or its dataset)
  std::optional<double> deadline;     // seconds
  std::optional<double> budget;       // dollars
  bool spot = true;                   // spot capacity too, where it can be priced
  int clusters = 4;                   // clusters simulated and trialled, the best by the screen
  int trials = 20;                    // whole-run trials per plan
  std::uint64_t seed = 1;
  // Each cluster's screen and simulations as `dtsim search` runs them: `simulate` layouts per cluster (the best by
  // the estimate), `jobs` processes at a time (the trials too), each under `limit`.
  search::Options search = [] {
    search::Options o;
    o.simulate = 3;
    return o;
  }();
};

// One instance at one node count, as screened.
struct Cluster {
  std::string instance;
  int nodes = 0, gpus = 0;
  double price_per_hour = 0;      // the cluster's, on demand (USD)
  double spot_price_per_hour = 0; // the cluster's on spot; 0: no published spot price
  search::Counts counts;
  std::optional<search::Point> best; // its best layout by the estimate (or by simulation: screened_by_simulation)
  std::string why_none;              // when it has none: why (nothing fits, every layout invalid)
  double screened_seconds = 0;       // steps x the best estimate
  double screened_dollars = 0;       // that time at the on-demand price
  bool simulated = false;
  // No layout has a closed-form estimate (parameter servers, profiler traces): the screen simulated the layouts chosen
  // for simulation, and its best estimate is the best simulated iteration.
  bool screened_by_simulation = false;
};

// A cluster's best simulated layout on one kind of capacity, run as whole-run trials.
struct Plan {
  std::size_t cluster = 0; // index into Result::clusters
  Capacity capacity = Capacity::on_demand;
  search::Point layout; // simulated
  TrialStats seconds;   // time to train, over the trials
  TrialStats dollars;
  TrialStats energy_kwh;
  double goodput = 0;       // mean over the trials: useful iteration time over wall time
  double interruptions = 0; // mean failures and preemptions per run
  std::string bound;     // what bounds its iteration: "compute", "pipeline bubble", "data-parallel communication", ...
  bool on_front = false; // no other plan is both as fast and as cheap, and better in one
};

struct Result {
  std::int64_t steps = 0;
  std::string steps_from;
  search::Unit unit;
  std::int64_t global_batch = 0;                // samples per iteration
  std::vector<Cluster> clusters;                // instance by instance, node counts ascending
  std::vector<Plan> plans;                      // by mean time to train, then mean cost
  std::optional<std::size_t> cheapest_on_time;  // index into plans: the cheapest whose p90 time meets the deadline
  std::optional<std::size_t> fastest_in_budget; // the fastest whose p90 cost is within the budget
  std::optional<std::size_t> cheapest, fastest; // without constraints
  std::string binding;                          // when a constraint cannot be met: which, and by how much
};

// The base scenario on `instance` at `nodes` nodes: its cluster section becomes that instance (its own GPUs, node
// fabric, network and price), the spot section's price the instance's spot price (removed on demand). Throws
// scenario::ScenarioError when the scenario cannot run there (the GPU lacks the model's precision, ...).
scenario::Scenario on_cluster(const scenario::Scenario& base, const std::string& instance, int nodes, Capacity capacity,
                              std::int64_t steps);

// The indices of the points not dominated in (seconds, dollars): none other is at most as long and as costly and
// better in one. In the order given.
struct FrontPoint {
  double seconds = 0, dollars = 0;
};
std::vector<std::size_t> pareto_front(const std::vector<FrontPoint>& points);

// Screens every cluster, simulates and trials the best; `progress` counts simulations and trials. Throws
// scenario::ScenarioError (exit 2) when no layout of any cluster fits or validates, naming the nearest miss.
Result plan(const scenario::Scenario& base, const Options& options, const SweepProgress& progress = {});

} // namespace dtsim::studies::planning
