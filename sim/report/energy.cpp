#include "sim/report/energy.hpp"

#include "sim/scenario/scenario.hpp"

#include <algorithm>

namespace dtsim::report {

IterationEnergy iteration_energy(const scenario::Scenario& s, const RunResult& r) {
  IterationEnergy e;
  const auto& power = s.gpu.power;
  const double iteration = r.iteration.mean;
  // A cluster of mixed GPUs keeps only its first group's kernel table: its draw is not reported rather than
  // priced as if every GPU were the first group's.
  if (!power.known() || !(iteration > 0) || !s.groups.empty()) return e;
  double math = 0, memory = 0, launch = 0;
  for (const auto& k : r.kernels) {
    if (k.bound == "math")
      math += k.seconds;
    else if (k.bound == "HBM" || k.bound == "L2")
      memory += k.seconds;
    else
      launch += k.seconds;
  }
  memory += r.breakdown.exposed_communication;
  // Kernel times are the plan's; where they add up to more than the simulated iteration (an asynchronous worker
  // timed by its own clock), they are scaled into it.
  const double busy = math + memory + launch;
  const double scale = busy > iteration ? iteration / busy : 1.0;
  math *= scale, memory *= scale, launch *= scale;
  const double idle = std::max(0.0, iteration - math - memory - launch) + launch;
  e.known = true;
  e.gpu_watts = (math * power.math + memory * power.memory + idle * power.idle) / iteration;
  e.math_share = math / iteration;
  e.memory_share = memory / iteration;
  const auto node = node_power(s, e);
  e.node_watts = node.training;
  e.host_watts = s.energy.host_power + s.energy.network_power;
  e.cluster_watts = s.energy.pue * node.training * s.cluster.nodes;
  e.kwh_per_iteration = lifecycle::energy_kwh(node, s.energy, s.cluster.nodes, iteration, 0);
  if (r.epoch_seconds > 0) {
    e.kwh_per_epoch = lifecycle::energy_kwh(node, s.energy, s.cluster.nodes, r.epoch_seconds, 0);
    e.kwh_of_run = e.kwh_per_epoch * r.epochs;
  } else {
    e.kwh_of_run = e.kwh_per_iteration * s.run.iterations;
  }
  e.co2_kg_of_run = lifecycle::co2_kg(e.kwh_of_run, s.energy);
  return e;
}

lifecycle::NodePower node_power(const scenario::Scenario& s, const IterationEnergy& e) {
  return lifecycle::node_power(e.gpu_watts, s.gpu.power.idle, s.cluster.gpus_per_node, s.energy);
}

} // namespace dtsim::report
