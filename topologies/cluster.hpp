#pragma once
// The cluster a job runs on, as a plain description: nodes of GPUs joined inside a node by an
// intra-node fabric and across nodes by one NIC per node into a single switch. Later topologies
// (fat-trees, rails, dragonflies) extend this description; the engine turns it into a SimGrid platform.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::topologies {

struct LinkSpec {
  double bandwidth = 0; // bytes/s per direction (links are full duplex)
  double latency = 0;   // seconds
};

enum class IntraNodeKind : std::uint8_t {
  nvlink, // every GPU has its own port to an NVSwitch (or an all-to-all NVLink mesh)
  pcie,   // GPUs share the node through PCIe
};
std::string_view to_string(IntraNodeKind kind);

// A tier of switches below the top switch (leaf-spine, fat-tree): each switch of the tier joins `fan_in`
// children (nodes for the first tier, switches of the tier below for the next) and has one uplink towards the
// top whose bandwidth is what its children can send up, divided by the oversubscription. The uplink stands for
// all of the switch's parallel uplinks: traffic is spread evenly over them (perfect ECMP).
struct Tier {
  int fan_in = 1;
  double oversubscription = 1; // >= 1: children's bandwidth : uplink bandwidth
};
std::string tier_name(std::size_t level); // "leaf", "pod", "tier3", ...

struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 1;
  std::string gpu; // calibration profile name
  IntraNodeKind intra_kind = IntraNodeKind::pcie;
  LinkSpec intra;            // each GPU's port into the node fabric
  LinkSpec pcie;             // each GPU's path to its node's NIC (GPUDirect RDMA over PCIe)
  LinkSpec nic;              // the node's NIC link to the switch
  double switch_latency = 0; // seconds added by each switch, per crossing
  std::vector<Tier> tiers;   // from the nodes up; empty: every node on the top switch
  // A torus (or ring) instead of switches: the nodes at the points of a grid with wrap-around links of the NIC's
  // bandwidth and latency in every dimension; routed dimension by dimension. Product of dimensions = nodes.
  std::vector<int> torus;
  // Software overhead of every message between GPUs (the collective library's per-step cost, from the GPU
  // profile), charged as latency on the GPUs' ports: half on the sender's, half on the receiver's. A message to
  // or from a reducing switch (NVLS, SHARP) crosses one port and pays half.
  double message_overhead = 0;
  bool nvswitch_reduces = false; // NVLink SHARP: the node's NVSwitch reduces in-network (H100 NVSwitch gen 3)
  bool switch_reduces = false;   // InfiniBand SHARP: the network switch reduces in-network

  std::string instance;           // cloud instance preset the nodes are ("" if none)
  double price_per_node_hour = 0; // USD per node-hour; 0: no price known

  int gpu_count() const { return nodes * gpus_per_node; }
  int node_of(int gpu) const { return gpu / gpus_per_node; }
};

// Aggregate figures a person checks a cluster with.
struct ClusterSummary {
  int gpus = 0;
  int switches = 0;
  int links = 0;                  // full-duplex links
  double bisection_bandwidth = 0; // bytes/s, one direction, across the worst balanced cut of nodes
};
ClusterSummary summarize(const ClusterSpec& cluster);

// Uplink bandwidth of one switch of each tier (bytes/s per direction), from the nodes up.
std::vector<double> tier_uplinks(const ClusterSpec& cluster);
// Why the tiers do not fit the nodes (nodes must fill whole switches), or "" when they do.
std::string check_tiers(const ClusterSpec& cluster);

} // namespace dtsim::topologies
