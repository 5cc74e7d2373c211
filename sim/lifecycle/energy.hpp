#pragma once
// Electricity: what a node draws while it trains and while it waits, and what a run takes from the grid. Closed forms
// only; the GPUs' draw over an iteration comes from the per-iteration simulation (sim/report/energy.hpp).
#include <string>

namespace dtsim::lifecycle {

// The scenario's `energy` section.
struct EnergySpec {
  // Watts one node draws besides its GPUs (CPUs, memory, NICs, NVSwitches, fans), the same training and idle (no
  // published idle figure separates them); the instance preset's figure by default, 0 when none is known.
  double host_power = 0;
  std::string host_power_source;
  double network_power = 0;  // watts per node: its share of the switches; 0 unless the scenario gives it
  double pue = 1;            // the facility's power usage effectiveness: meter energy over IT energy
  double grid_intensity = 0; // grams of CO2 per kWh at the meter; 0: not given (no CO2 reported)
};

// What one node draws, watts, before the facility's overhead.
struct NodePower {
  double training = 0; // its GPUs at the iteration's mean draw, plus host and network
  double idle = 0;     // its GPUs idle (checkpoint waits, restarts, waiting for a replacement), plus host and network
  bool known = false;  // the GPU profile has power figures
};
NodePower node_power(double gpu_training_watts, double gpu_idle_watts, int gpus_per_node, const EnergySpec& spec);

// Kilowatt-hours at the meter (PUE included) of `nodes` nodes training for `training` seconds and idle for `idle`.
double energy_kwh(const NodePower& node, const EnergySpec& spec, int nodes, double training, double idle);
// Kilograms of CO2 for that energy at the scenario's grid intensity (0 without one).
double co2_kg(double kwh, const EnergySpec& spec);

} // namespace dtsim::lifecycle
