// The "energy" section: what a node draws besides its GPUs, the facility's overhead and the grid's carbon intensity.
//   "energy": {"host_power": "2.8kW", "network_power": "150W", "pue": 1.1, "grid_intensity": "380 g/kWh"}
// Every field is optional: the host's draw comes from the instance preset where it has one, the network's is not
// counted unless given, the PUE is 1 (the IT equipment alone) and without an intensity no CO2 is reported.
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include "topologies/instance.hpp"

namespace dtsim::scenario::detail {

lifecycle::EnergySpec read_energy(const Object& top, const Scenario& s) {
  lifecycle::EnergySpec e;
  if (!s.cluster.instance.empty())
    if (const auto instance = topologies::find_instance(s.cluster.instance); instance && instance->host_power > 0) {
      e.host_power = instance->host_power;
      e.host_power_source = instance->host_power_source;
    }
  const Object energy = top.object("energy", {"host_power", "network_power", "pue", "grid_intensity"});
  if (!energy.present()) return e;
  if (energy.has("host_power")) {
    e.host_power = energy.quantity("host_power", Dimension::power, Bound::non_negative, std::nullopt);
    e.host_power_source = "the scenario's energy.host_power";
  }
  e.network_power = energy.quantity("network_power", Dimension::power, Bound::non_negative, 0.0);
  e.pue = energy.number("pue", 1, 1.0, limits::kMaxPue);
  e.grid_intensity = energy.quantity("grid_intensity", Dimension::carbon_intensity, Bound::non_negative, 0.0);
  return e;
}

json energy_json(const lifecycle::EnergySpec& e) {
  return {{"host_power", e.host_power},
          {"network_power", e.network_power},
          {"pue", e.pue},
          {"grid_intensity", e.grid_intensity}};
}

} // namespace dtsim::scenario::detail
