#pragma once
// The cluster a job runs on, as a plain description: nodes of GPUs joined inside a node by an intra-node fabric
// and across nodes by their NICs and a network (a switch, tiers of switches, a torus, rails, a dragonfly or an
// explicit list of switches and links). topologies/network_graph.hpp turns it into a graph; the engine turns it
// into a SimGrid platform.
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
  nvlink,           // every GPU has its own port to an NVSwitch (DGX A100/H100, p4d, p5)
  hybrid_cube_mesh, // DGX-1 V100 / p3.16xlarge: NVLink between chosen GPU pairs, PCIe tree for the rest
  pcie,             // every GPU on the node's PCIe root complex
  pcie_tree,        // GPUs behind PCIe switches (gpus_per_pcie_switch each) under the root complex
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

// Rail-optimized network (DGX SuperPOD, p5 UltraClusters): a node's NICs are its rails; in each group of nodes,
// rail r's leaf switch joins NIC r of every node; spine switches join every leaf of every group.
struct RailSpec {
  int rails = 0;               // NICs per node (0: not a rail network); the node's bandwidth is split among them
  int nodes_per_group = 0;     // nodes under one set of rail leaves (a SuperPOD scalable unit has 32); 0: all
  int spines = 0;              // spine switches, each leaf linked to every one; 0: as many as nodes per group
  double oversubscription = 1; // leaf: NIC bandwidth below : uplink bandwidth above
};

// Dragonfly (Kim et al., ISCA 2008): groups of routers joined all-to-all by local links, every pair of groups
// joined by global links, nodes on the routers. All links have the NIC's bandwidth unless given.
struct DragonflySpec {
  int groups = 0; // 0: not a dragonfly
  int routers_per_group = 0;
  int nodes_per_router = 0;
  int links_between_groups = 1; // global links between each pair of groups
  double global_bandwidth = 0;  // bytes/s per global link; 0: the NIC's
  double local_bandwidth = 0;   // bytes/s per local link; 0: the NIC's
};

// k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core
// switches, k^3/4 nodes; every switch drawn with its own links, equal-cost paths spread by ECMP.
struct FatTreeSpec {
  int k = 0; // even; 0: not a k-ary fat-tree
  double edge_oversubscription = 1;
  double aggregation_oversubscription = 1;
};

// Anything else: switches and links listed by name. Links join switches and nodes ("node0" .. "nodeN-1").
struct ExplicitSwitch {
  std::string name;
  double latency = 0; // seconds per crossing
};
struct ExplicitLink {
  std::string from, to;
  LinkSpec link;
};
struct ExplicitNetwork {
  std::vector<ExplicitSwitch> switches;
  std::vector<ExplicitLink> links;
};

// How the nodes' NICs carry data: RDMA (InfiniBand, RoCE, EFA: the NIC moves the bytes, no per-stream limit) or TCP
// (Gloo, MPI over sockets, NCCL's socket transport, Horovod on Ethernet). TCP's costs as mechanisms:
// - headers: each MTU-sized frame carries MTU - 52 bytes of data (IPv4 20 + TCP 20 + timestamps 12, RFC 791, 9293,
//   7323) for MTU + 38 on the wire (Ethernet header 14, FCS 4, preamble 8, inter-frame gap 12; IEEE 802.3);
// - streams: a connection between two ranks uses `streams` TCP streams (NCCL: NCCL_SOCKET_NTHREADS x
//   NCCL_NSOCKS_PERTHREAD per channel, 1 on a generic NIC; Gloo: one socket per pair), each at most
//   `stream_bandwidth` where the network limits single flows (AWS: 5 Gbps outside a cluster placement group,
//   10 Gbps inside one).
// What one TCP stream carries when nothing narrower is known: ESnet's 'Performance Expectations for a 100G Host'
// (fasterdata.es.net, January 2024): 'Single stream testing will range from 15-35 Gbps, depending on how well tuned
// the host is'. One stream is one core's send and receive path, whatever the NIC; the untuned end is taken.
inline constexpr double kDefaultStreamBandwidth = 15e9 / 8; // bytes/s

struct TcpTransport {
  bool enabled = false;
  // Streams a connection between two ranks opens. NCCL's socket transport: NCCL_SOCKET_NTHREADS x
  // NCCL_NSOCKS_PERTHREAD, by default one socket on the proxy thread (net_socket.cc: "autoNt=0, autoNs=1") except on
  // AWS (2 x 8) and Google Cloud's gVNIC (4 x 1); Gloo opens one per pair.
  int streams = 1;
  double stream_bandwidth = kDefaultStreamBandwidth; // bytes/s per stream (a cloud's per-flow limit, or the host's)
  double mtu = 1500;                                 // bytes
  // The share of the NIC's line rate that carries data.
  double payload_efficiency() const { return enabled ? (mtu - 52) / (mtu + 38) : 1.0; }
  // The most a connection between two ranks carries (bytes/s of data); 0: no limit beyond the links.
  double connection_bandwidth() const { return enabled && stream_bandwidth > 0 ? streams * stream_bandwidth : 0; }
};

struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 1;
  std::string gpu; // calibration profile name
  IntraNodeKind intra_kind = IntraNodeKind::pcie;
  LinkSpec intra;                  // each GPU's port into the node fabric
  LinkSpec pcie;                   // each GPU's path to its node's NIC (GPUDirect RDMA over PCIe)
  LinkSpec nic;                    // the node's NIC link to the switch
  std::vector<LinkSpec> node_nics; // per node where they differ (a cluster of mixed node groups); empty: all `nic`
  const LinkSpec& nic_of(int node) const {
    return node_nics.empty() ? nic : node_nics.at(static_cast<std::size_t>(node));
  }
  const LinkSpec& slowest_nic() const;
  double switch_latency = 0; // seconds added by each switch, per crossing
  std::vector<Tier> tiers;   // from the nodes up; empty: every node on the top switch
  // A torus (or ring) instead of switches: the nodes at the points of a grid with wrap-around links of the NIC's
  // bandwidth and latency in every dimension; routed dimension by dimension. Product of dimensions = nodes.
  std::vector<int> torus;
  int spines = 0;                   // leaf-spine drawn with this many spine switches and ECMP (0: aggregated uplinks)
  FatTreeSpec fat_tree;             // k-ary fat-tree with every switch drawn
  RailSpec rail;                    // rail-optimized network
  DragonflySpec dragonfly;          // dragonfly network
  ExplicitNetwork explicit_network; // listed switches and links (used when it has any link)
  int gpus_per_pcie_switch = 2;     // pcie_tree and hybrid_cube_mesh nodes
  // Software overhead of every message between GPUs (the collective library's per-step cost, from the GPU
  // profile), charged as latency on the GPUs' ports: half on the sender's, half on the receiver's. A message to
  // or from a reducing switch (NVLS, SHARP) crosses one port and pays half.
  double message_overhead = 0;
  bool nvswitch_reduces = false; // NVLink SHARP: the node's NVSwitch reduces in-network (H100 NVSwitch gen 3)
  bool switch_reduces = false;   // InfiniBand SHARP: the network switch reduces in-network
  // The GPUs as their collective library sees them (from the GPU profile): CUDA compute capability x 10 (0: not
  // GPUs running NCCL), and the share of the intra-node fabric's and PCIe's datasheet bandwidth that links carry
  // as data (the engine's link capacities are bandwidth x efficiency).
  int compute_capability = 0;
  // The NCCL release the GPUs run, as NCCL_VERSION_CODE: collectives::kNcclTuningVersion by default (a test holds the
  // two equal; this layer cannot include the collectives).
  int nccl_version = 23007;
  double fabric_efficiency = 1; // NVLink links (nvlink and hybrid_cube_mesh fabrics)
  double pcie_efficiency = 1;   // PCIe links, and a pcie or pcie_tree fabric
  // Streaming multiprocessors of a GPU (0: not known). NCCL runs each channel of a collective as one thread block
  // on an SM of its own, so compute that overlaps a collective gets the SMs the channels leave (the engine).
  int compute_units = 0;
  // Bytes/s a GPU's streaming kernels reach in its memory (the profile's datasheet bandwidth x its streaming
  // efficiency; 0: not known): what NCCL's copies and reductions share with the compute they overlap (the engine).
  double memory_bandwidth = 0;
  int nic_ports = 1; // physical NICs of a node, however the network joins them (rails or one bonded link)
  TcpTransport tcp;  // the network's transport when it is TCP (tcp.enabled)

  std::string instance;           // cloud instance preset the nodes are ("" if none)
  double price_per_node_hour = 0; // USD per node-hour; 0: no price known

  int gpu_count() const { return nodes * gpus_per_node; }
  // Bytes/s of data a GPU's port into the node fabric carries: NVLink's share of its datasheet rate on NVLink fabrics
  // (an NVSwitch or the hybrid cube-mesh), PCIe's on PCIe ones.
  double intra_data_rate() const {
    const bool nvlink = intra_kind == IntraNodeKind::nvlink || intra_kind == IntraNodeKind::hybrid_cube_mesh;
    return intra.bandwidth * (nvlink ? fabric_efficiency : pcie_efficiency);
  }
  // NICs per node: one per rail, else one (the node's NICs bonded into one link of their summed bandwidth).
  int nics_per_node() const { return rail.rails > 0 ? rail.rails : 1; }
  // A rail network's group size and spine count with their defaults resolved for this node count (the defaults
  // follow the nodes, so a sweep over node counts keeps one group and leaf-spine links as fast as a rail NIC).
  int rail_group() const { return rail.nodes_per_group > 0 ? rail.nodes_per_group : nodes; }
  int rail_spines() const { return rail.spines > 0 ? rail.spines : rail_group(); }
  // Networks whose switches are all drawn and routed by dtsim (shortest paths, ECMP), not by SimGrid's zones.
  bool routed_by_graph() const {
    return spines > 0 || fat_tree.k > 0 || rail.rails > 0 || dragonfly.groups > 0 || !explicit_network.links.empty();
  }
  int node_of(int gpu) const { return gpu / gpus_per_node; }
};

// Aggregate figures a person checks a cluster with.
struct ClusterSummary {
  int gpus = 0;
  int switches = 0;
  int links = 0;                  // full-duplex links
  double bisection_bandwidth = 0; // bytes/s, one direction, across the worst balanced cut of nodes
};
// The bisection of a single switch, tiers or a torus by its closed form (bytes/s, one direction). Networks with
// every switch drawn have theirs from the graph: summarize() in network_graph.hpp.
double tier_bisection(const ClusterSpec& cluster);

// The topology's kind as the scenario names it ("leaf-spine", "dragonfly", ...).
std::string network_kind(const ClusterSpec& cluster);
// Why the network's description is inconsistent (a fat-tree with an odd k, nodes that do not fill the groups,
// a link to an unknown switch, a disconnected network ...), or "" when it is fine.
std::string check_network(const ClusterSpec& cluster);

// Uplink bandwidth of one switch of each tier (bytes/s per direction), from the nodes up.
std::vector<double> tier_uplinks(const ClusterSpec& cluster);
// Why the tiers do not fit the nodes (nodes must fill whole switches), or "" when they do.
std::string check_tiers(const ClusterSpec& cluster);

} // namespace dtsim::topologies
