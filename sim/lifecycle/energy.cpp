#include "sim/lifecycle/energy.hpp"

namespace dtsim::lifecycle {

NodePower node_power(double gpu_training_watts, double gpu_idle_watts, int gpus_per_node, const EnergySpec& spec) {
  const double rest = spec.host_power + spec.network_power;
  return {gpus_per_node * gpu_training_watts + rest, gpus_per_node * gpu_idle_watts + rest, gpu_training_watts > 0};
}

double energy_kwh(const NodePower& node, const EnergySpec& spec, int nodes, double training, double idle) {
  constexpr double kJoulesPerKwh = 3.6e6;
  return spec.pue * nodes * (node.training * training + node.idle * idle) / kJoulesPerKwh;
}

double co2_kg(double kwh, const EnergySpec& spec) {
  return kwh * spec.grid_intensity / 1000;
}

} // namespace dtsim::lifecycle
