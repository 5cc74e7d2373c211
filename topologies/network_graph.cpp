// Nodes as graphs: GPUs, their fabric (NVSwitch, NVLink mesh, PCIe root and switches) and NICs. The networks
// between the nodes are in networks.cpp, routes in routing.cpp.
#include "topologies/graph_builder.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace dtsim::topologies {
namespace detail {

std::size_t GraphBuilder::vertex(std::string name, VertexKind kind, int node) {
  return boost::add_vertex(NetworkVertex{std::move(name), kind, node}, model_.graph);
}

void GraphBuilder::link(std::size_t a, std::size_t b, std::string name, const LinkSpec& spec, LinkClass kind) {
  const int index = static_cast<int>(model_.edges.size());
  model_.edges.push_back(
      boost::add_edge(a, b, NetworkEdge{std::move(name), spec.bandwidth, spec.latency, kind, index}, model_.graph)
          .first);
}

void GraphBuilder::network_link(std::size_t a, std::size_t b, std::string name, double bandwidth, double latency) {
  const auto& g = model_.graph;
  const double half = cluster_.switch_latency / 2;
  const double switches = (g[a].kind == VertexKind::network_switch) + (g[b].kind == VertexKind::network_switch);
  link(a, b, std::move(name), {bandwidth, latency + switches * half});
}

// The DGX-1 V100 hybrid cube-mesh (NVIDIA, "DGX-1 with Tesla V100 System Architecture", WP-08437-002, Fig. 2;
// `nvidia-smi topo -m` on p3.16xlarge): six NVLink2 links per GPU, doubled on some pairs. NCCL rings run over
// NVLink in the physical order 0,3,2,1,5,6,7,4; dtsim numbers the GPUs in that order, so that ranks in order ride
// NVLink and the ring leaves the node from its last GPU.
constexpr std::array<int, 8> kRingOrder{0, 3, 2, 1, 5, 6, 7, 4};
constexpr std::array<std::array<int, 3>, 16> kPhysicalPairs{{{0, 1, 1},
                                                             {0, 2, 1},
                                                             {0, 3, 2},
                                                             {0, 4, 2},
                                                             {1, 2, 2},
                                                             {1, 3, 1},
                                                             {1, 5, 2},
                                                             {2, 3, 2},
                                                             {2, 6, 1},
                                                             {3, 7, 1},
                                                             {4, 5, 1},
                                                             {4, 6, 1},
                                                             {4, 7, 2},
                                                             {5, 6, 2},
                                                             {5, 7, 1},
                                                             {6, 7, 2}}};

int local_of_physical(int physical) {
  for (int i = 0; i < 8; ++i)
    if (kRingOrder[i] == physical) return i;
  throw std::logic_error("GPU outside a cube-mesh node");
}

std::vector<NvlinkPair> hybrid_cube_mesh() {
  std::vector<NvlinkPair> out;
  for (const auto& [a, b, links] : kPhysicalPairs)
    out.push_back({local_of_physical(a), local_of_physical(b), links});
  return out;
}

int cube_mesh_pcie_switch(int gpu) {
  return kRingOrder.at(static_cast<std::size_t>(gpu)) / 2; // physical GPUs 0-1, 2-3, 4-5, 6-7 share a switch
}

void GraphBuilder::build_nodes() {
  for (int node = 0; node < cluster_.nodes; ++node)
    build_node(node);
}

// Where NIC `nic` of a node plugs in: beside the first GPU that uses it when GPUs sit behind PCIe switches (as
// on p4d and DGX nodes, a NIC per PCIe switch), else on the root complex.
std::size_t GraphBuilder::attach_point(int node, int nic, const std::vector<std::size_t>& gpu_switch,
                                       std::size_t root) const {
  (void)node;
  if (gpu_switch.empty()) return root;
  const int first_gpu = (nic * cluster_.gpus_per_node + cluster_.nics_per_node() - 1) / cluster_.nics_per_node();
  return gpu_switch.at(static_cast<std::size_t>(first_gpu));
}

void GraphBuilder::build_node(int node) {
  const auto& c = cluster_;
  const bool nvswitch = c.intra_kind == IntraNodeKind::nvlink;
  const bool mesh = c.intra_kind == IntraNodeKind::hybrid_cube_mesh;
  const bool tree = mesh || c.intra_kind == IntraNodeKind::pcie_tree;
  const auto root = vertex(fmt::format("node{}-pcie-root", node), VertexKind::node_hub, node);
  const auto hub = nvswitch ? vertex(fmt::format("node{}-nvswitch", node), VertexKind::node_hub, node) : root;
  model_.hub_vertex.push_back(hub);

  // PCIe switches, each with an uplink of the GPU's PCIe bandwidth to the root complex.
  std::vector<std::size_t> switches;
  std::vector<std::size_t> gpu_switch; // the PCIe switch of each local GPU (tree nodes)
  if (tree) {
    const int per_switch = mesh ? 2 : c.gpus_per_pcie_switch;
    const int count = (c.gpus_per_node + per_switch - 1) / per_switch;
    for (int s = 0; s < count; ++s) {
      const auto name = fmt::format("node{}-pcie-switch{}", node, s);
      switches.push_back(vertex(name, VertexKind::pcie_switch, node));
      link(switches.back(), root, name + "-uplink", c.pcie, LinkClass::pcie);
    }
    for (int local = 0; local < c.gpus_per_node; ++local)
      gpu_switch.push_back(
          switches.at(static_cast<std::size_t>(mesh ? cube_mesh_pcie_switch(local) : local / c.gpus_per_pcie_switch)));
  }

  const int first = node * c.gpus_per_node;
  for (int local = 0; local < c.gpus_per_node; ++local) {
    const int global = first + local;
    const auto gpu = vertex(fmt::format("gpu{}", global), VertexKind::gpu, node);
    model_.gpu_vertex.push_back(gpu);
    if (nvswitch) {
      link(gpu, hub, fmt::format("gpu{}-nvlink", global), c.intra, LinkClass::fabric);
      link(gpu, root, fmt::format("gpu{}-pcie", global), c.pcie, LinkClass::pcie);
    } else if (tree) {
      // A cube-mesh GPU's PCIe link is the node's PCIe; a PCIe-tree GPU's is its fabric.
      link(gpu, gpu_switch[local], fmt::format("gpu{}-pcie", global), mesh ? c.pcie : c.intra, LinkClass::pcie);
    } else {
      link(gpu, root, fmt::format("gpu{}-pcie", global), c.intra, LinkClass::pcie);
    }
  }
  if (mesh)
    for (const auto& [a, b, links] : hybrid_cube_mesh())
      link(model_.gpu_vertex[first + a], model_.gpu_vertex[first + b],
           fmt::format("gpu{}-gpu{}-nvlink", first + a, first + b), {links * c.intra.bandwidth, c.intra.latency},
           LinkClass::fabric);

  const int nics = c.nics_per_node();
  auto& node_nics = nics_.emplace_back();
  for (int r = 0; r < nics; ++r) {
    const auto name = nics == 1 ? fmt::format("node{}-nic", node) : fmt::format("node{}-nic{}", node, r);
    node_nics.push_back(vertex(name, VertexKind::nic, node));
    link(attach_point(node, r, gpu_switch, root), node_nics.back(), name + "-attach", {0, 0}, LinkClass::attach);
  }
  for (int local = 0; local < c.gpus_per_node; ++local)
    model_.nic_vertex.push_back(node_nics.at(static_cast<std::size_t>(local * nics / c.gpus_per_node)));
}

} // namespace detail

NetworkModel build_network(const ClusterSpec& c) {
  if (const auto problem = check_network(c); !problem.empty()) throw std::invalid_argument(problem);
  NetworkModel m;
  m.gpus_per_node = c.gpus_per_node;
  m.pxn = c.rail.rails > 1 && c.intra_kind == IntraNodeKind::nvlink;
  detail::GraphBuilder b(c, m);
  b.build_nodes();
  if (!c.explicit_network.links.empty())
    detail::build_explicit(b);
  else if (c.dragonfly.groups > 0)
    detail::build_dragonfly(b);
  else if (c.rail.rails > 0)
    detail::build_rails(b);
  else if (c.fat_tree.k > 0)
    detail::build_fat_tree(b);
  else if (c.spines > 0)
    detail::build_spines(b);
  else if (!c.torus.empty())
    detail::build_torus(b);
  else
    detail::build_switch_tiers(b);
  return m;
}

} // namespace dtsim::topologies
