#pragma once
// Cloud instances as users name them ("aws.p4d.24xlarge"): the GPUs, the node's fabric and network, and the
// price per hour with its date and source. Presets live in topologies/instances/*.json, one file each.
#include "topologies/cluster.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim::topologies {

struct InstancePrice {
  double on_demand_per_hour = 0;       // USD per instance-hour
  std::optional<double> spot_per_hour; // absent where unpublished
  std::string currency, region, date, source;
};

struct Instance {
  std::string name; // preset key, e.g. "aws.p4d.24xlarge"
  std::string provider, display_name;
  std::string gpu; // a calibration profile name
  int gpus = 1;
  double gpu_memory_bytes = 0;
  int vcpus = 0;
  double host_memory_bytes = 0;
  std::string fabric;         // "nvlink", "pcie" or "none" (one GPU)
  std::string topology;       // "nvswitch", "hybrid-cube-mesh", "pcie-tree", "single-gpu"
  double intra_bandwidth = 0; // bytes/s per GPU per direction
  int nics = 1;
  double nic_bandwidth = 0; // bytes/s per NIC per direction; 0: not published
  std::string network_technology;
  // The network's TCP transport where it is TCP (the technology names TCP): streams per connection, per-stream limit
  // and MTU from the provider's documentation (network.tcp), else one stream, no limit, 1500 bytes.
  TcpTransport tcp;
  InstancePrice price;
  // What one node draws besides its GPUs (CPUs, memory, NICs, NVSwitches, fans), watts; 0: not published. The GPUs'
  // own draw comes from their profile.
  double host_power = 0;
  std::string host_power_source;
  std::vector<std::string> sources;
  std::string notes;

  double network_bandwidth() const { return nics * nic_bandwidth; } // bytes/s, all NICs of a node
};

std::vector<std::string> instance_names(); // sorted
std::optional<Instance> find_instance(const std::string& name);
std::vector<Instance> all_instances(); // sorted by name
// Parses one preset document; `origin` names the file in errors ("origin: /path: expected ...").
Instance parse_instance(const std::string& json_text, const std::string& origin);

} // namespace dtsim::topologies
