#include "sim/report/energy.hpp"

#include "sim/scenario/scenario.hpp"

#include <algorithm>

namespace dtsim::report {

namespace {

struct Draw {
  double watts = 0, math_share = 0, memory_share = 0;
};

// One GPU's mean draw over `iteration` seconds whose kernels took `b` (plus `exposed` communication at the streaming
// draw). Kernel times are the plan's; where they add up to more than the simulated iteration (an asynchronous worker
// timed by its own clock), they are scaled into it. Launch-bound kernels leave the GPU at its idle draw.
Draw gpu_draw(const calibration::GpuProfile::Power& power, plan::BoundSeconds b, double exposed, double iteration) {
  b.memory += exposed;
  const double busy = b.math + b.memory + b.launch;
  const double scale = busy > iteration ? iteration / busy : 1.0;
  b.math *= scale, b.memory *= scale, b.launch *= scale;
  const double idle = std::max(0.0, iteration - b.math - b.memory - b.launch) + b.launch;
  return {(b.math * power.math + b.memory * power.memory + idle * power.idle) / iteration, b.math / iteration,
          b.memory / iteration};
}

} // namespace

IterationEnergy iteration_energy(const scenario::Scenario& s, const RunResult& r) {
  IterationEnergy e;
  const double iteration = r.iteration.mean;
  if (!(iteration > 0)) return e;
  const int gpn = s.cluster.gpus_per_node;
  const double rest = s.energy.host_power + s.energy.network_power;
  lifecycle::NodePower node{0, 0, true};
  if (s.groups.empty()) {
    if (!s.gpu.power.known()) return e;
    const auto d = gpu_draw(s.gpu.power, plan::bound_seconds(r.kernels), r.breakdown.exposed_communication, iteration);
    e.gpu_watts = d.watts, e.math_share = d.math_share, e.memory_share = d.memory_share;
    node = lifecycle::node_power(d.watts, s.gpu.power.idle, gpn, s.energy);
  } else {
    // Each group's GPUs at their own profile's draws over their own kernels; the figures for one GPU and one node
    // are the cluster's means. A group planned without a kernel table of its own (pipeline stages) is not priced.
    if (r.groups.size() != s.groups.size()) return e;
    const double gpus = s.world_size();
    for (std::size_t i = 0; i < s.groups.size(); ++i) {
      const auto& g = r.groups[i];
      const auto& power = s.groups[i].gpu.power;
      if (!power.known() || g.kernel_seconds <= 0) return e;
      const auto d = gpu_draw(power, g.bounds, g.breakdown.exposed_communication, iteration);
      e.group_gpu_watts.push_back(d.watts);
      const double share = g.ranks / gpus;
      e.gpu_watts += d.watts * share, e.math_share += d.math_share * share, e.memory_share += d.memory_share * share;
      const double nodes = static_cast<double>(g.ranks) / gpn;
      node.training += nodes * (gpn * d.watts + rest) / s.cluster.nodes;
      node.idle += nodes * (gpn * power.idle + rest) / s.cluster.nodes;
    }
  }
  e.known = true;
  e.node_watts = node.training;
  e.node_idle_watts = node.idle;
  e.host_watts = rest;
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

lifecycle::NodePower node_power(const IterationEnergy& e) {
  return {e.node_watts, e.node_idle_watts, e.known};
}

} // namespace dtsim::report
