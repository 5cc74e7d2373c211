#include "sim/engine/platform.hpp"

#include "sim/engine/graph_zone.hpp"
#include "topologies/network_graph.hpp"

#include <fmt/format.h>

namespace sg4 = simgrid::s4u;
using Direction = sg4::LinkInRoute::Direction;

namespace dtsim::engine {
namespace {

// GPU hosts never execute flops (compute ops are priced by the plan and slept), so any speed works.
constexpr double kGpuHostSpeed = 1e12;
// The switch backplane: a fat-pipe so fast that it only contributes its latency.
constexpr double kSwitchBackplane = 1e15;

class PlatformBuilder {
public:
  PlatformBuilder(const topologies::ClusterSpec& cluster, double nic_share)
      : cluster_(cluster), nic_share_(nic_share), network_(topologies::build_network(cluster)), router_(network_) {
    const auto& g = network_.graph;
    node_edges_.resize(static_cast<std::size_t>(cluster.nodes));
    for (const auto& e : network_.edges)
      if (g[e].kind == topologies::LinkClass::fabric || g[e].kind == topologies::LinkClass::pcie)
        node_edges_[static_cast<std::size_t>(g[boost::source(e, g)].node)].push_back(g[e].index);
  }

  Platform build() {
    if (cluster_.routed_by_graph()) return build_graph();
    if (!cluster_.torus.empty()) return build_torus();
    auto* root = sg4::create_star_zone("cluster");
    // SimGrid 3.32 checks every new link's name against every zone that exists: creating the links before any
    // zone but the root keeps that check cheap (a 16,384-GPU platform: 25 s the other way round).
    create_links(root);
    auto* backplane = links_.at("switch");
    // The top switch joins the groups of the highest tier (or the nodes when there are no tiers). Routes do not
    // cross the switches' backplanes: a backplane never limits a flow, and a link every flow shares makes SimGrid's
    // max-min solver re-solve every flow whenever one starts or ends (a 1024-GPU collective: most of its run). The
    // switches' latency rides on the links instead (create_links()).
    const int top = static_cast<int>(cluster_.tiers.size()) - 1;
    const int children = cluster_.nodes / group_size(top);
    for (int i = 0; i < children; ++i) {
      const auto child = build_group(root, top, i);
      root->add_route(child.zone->get_netpoint(), nullptr, child.gateway, nullptr, {{child.uplink, Direction::UP}},
                      true);
    }
    if (cluster_.switch_reduces) {
      // The reducing switch is an endpoint at the top switch: a zone of its own with no links of its own, so
      // reaching it costs the path up to the top switch.
      auto* zone = sg4::create_full_zone("switch-sharp");
      zone->set_parent(root);
      platform_.network_switch = zone->create_host("switch-sharp", kGpuHostSpeed)->seal();
      zone->seal();
      root->add_route(zone->get_netpoint(), nullptr, platform_.network_switch->get_netpoint(), nullptr,
                      {sg4::LinkInRoute(backplane)}, true);
    }
    root->seal();
    return std::move(platform_);
  }

private:
  struct Group {
    sg4::NetZone* zone = nullptr;
    simgrid::kernel::routing::NetPoint* gateway = nullptr; // where its traffic leaves it
    sg4::SplitDuplexLink* uplink = nullptr;                // towards the switch above
  };

  // Nodes under one switch of tier `level` (1 for a node itself, level -1).
  int group_size(int level) const {
    int size = 1;
    for (int i = 0; i <= level; ++i)
      size *= cluster_.tiers[i].fan_in;
    return size;
  }

  sg4::Link* fat_pipe(sg4::NetZone* zone, const std::string& name, double latency) {
    auto* link = zone->create_link(name, kSwitchBackplane)
                     ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                     ->set_latency(latency)
                     ->seal();
    links_.emplace(name, link);
    return link;
  }

  // The links inside one node, from the network graph. A link that ends at a GPU carries half the per-message
  // software overhead for that GPU: a message between two GPUs crosses one link at each end (or one link joining
  // both), so it pays the overhead once, with no link of its own.
  double link_latency(const topologies::NetworkEdge& edge, std::size_t a, std::size_t b) const {
    const auto& g = network_.graph;
    const int gpu_ends = (g[a].kind == topologies::VertexKind::gpu) + (g[b].kind == topologies::VertexKind::gpu);
    return edge.latency + gpu_ends * cluster_.message_overhead / 2;
  }

  // What a link carries as data: NVLink and PCIe lose part of their datasheet rate to packet headers and flow
  // control (the GPU profile's efficiencies, from NCCL's topology model).
  // Coarse fidelity widens a GPU's own PCIe link by the ranks whose network traffic it carries (nic_share_) where its
  // GPUs talk to each other over NVLink: then that link carries nothing else.
  double capacity(const topologies::NetworkEdge& edge, std::size_t a, std::size_t b) const {
    if (edge.kind == topologies::LinkClass::fabric) return edge.bandwidth * cluster_.fabric_efficiency;
    if (edge.kind == topologies::LinkClass::pcie) {
      const auto& g = network_.graph;
      const bool gpu_end = g[a].kind == topologies::VertexKind::gpu || g[b].kind == topologies::VertexKind::gpu;
      const bool nvlink_peers = cluster_.intra_kind == topologies::IntraNodeKind::nvlink ||
                                cluster_.intra_kind == topologies::IntraNodeKind::hybrid_cube_mesh;
      return edge.bandwidth * cluster_.pcie_efficiency * (gpu_end && nvlink_peers ? nic_share_ : 1);
    }
    return edge.bandwidth * cluster_.tcp.payload_efficiency(); // TCP/IP and Ethernet framing on TCP networks
  }

  void create_node_links(sg4::NetZone* zone, int node) {
    const auto& g = network_.graph;
    for (const int index : node_edges_[static_cast<std::size_t>(node)]) {
      const auto& e = network_.edges[static_cast<std::size_t>(index)];
      duplex(zone, g[e].name,
             {capacity(g[e], boost::source(e, g), boost::target(e, g)),
              link_latency(g[e], boost::source(e, g), boost::target(e, g))});
    }
  }

  // A route of the graph as SimGrid link halves.
  std::vector<sg4::LinkInRoute> links_of(const std::vector<topologies::Hop>& hops) const {
    std::vector<sg4::LinkInRoute> out;
    for (const auto& hop : hops)
      out.emplace_back(duplex_links_.at(network_.graph[network_.edges[static_cast<std::size_t>(hop.edge)]].name),
                       hop.forward ? Direction::UP : Direction::DOWN);
    return out;
  }

  // Every switch drawn: one GraphZone holds all hosts and links, and dtsim's Router gives every route.
  Platform build_graph() {
    auto* zone = new GraphZone("cluster", network_); // owned by SimGrid's engine from here on
    auto* iface = zone->get_iface();
    const auto& g = network_.graph;
    std::vector<std::pair<sg4::Link*, sg4::Link*>> halves(network_.edges.size(), {nullptr, nullptr});
    for (const auto& e : network_.edges) {
      if (g[e].kind == topologies::LinkClass::attach) continue;
      auto* link = duplex(iface, g[e].name,
                          {capacity(g[e], boost::source(e, g), boost::target(e, g)),
                           link_latency(g[e], boost::source(e, g), boost::target(e, g))});
      halves[static_cast<std::size_t>(g[e].index)] = {link->get_link_up(), link->get_link_down()};
    }
    zone->set_links(std::move(halves));
    for (int gpu = 0; gpu < cluster_.gpu_count(); ++gpu) {
      platform_.gpus.push_back(iface->create_host(fmt::format("gpu{}", gpu), kGpuHostSpeed)->seal());
      zone->bind(platform_.gpus.back()->get_netpoint(), network_.gpu_vertex[static_cast<std::size_t>(gpu)]);
    }
    if (cluster_.nvswitch_reduces)
      for (int node = 0; node < cluster_.nodes; ++node) {
        platform_.node_switches.push_back(
            iface->create_host(fmt::format("node{}-nvswitch", node), kGpuHostSpeed)->seal());
        zone->bind(platform_.node_switches.back()->get_netpoint(), network_.hub_vertex[static_cast<std::size_t>(node)]);
      }
    iface->seal();
    return std::move(platform_);
  }

  // A torus (or ring) of nodes: SimGrid's TorusZone routes dimension by dimension over split-duplex links of the
  // NIC's bandwidth and latency; each point of the grid is one of our node zones, entered through its NIC router.
  Platform build_torus() {
    const std::vector<unsigned long> dims(cluster_.torus.begin(), cluster_.torus.end());
    const sg4::ClusterCallbacks callbacks(
        [this](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
          create_node_links(zone, static_cast<int>(id));
          auto [node_zone, router] = build_node(zone, static_cast<int>(id));
          return std::make_pair(node_zone->get_netpoint(), router);
        });
    sg4::create_torus_zone("cluster", nullptr, dims, callbacks,
                           cluster_.nic.bandwidth * cluster_.tcp.payload_efficiency(), cluster_.nic.latency,
                           sg4::Link::SharingPolicy::SPLITDUPLEX)
        ->seal();
    for (auto* link : sg4::Engine::get_instance()->get_all_links()) // the torus's own links, for link loads
      if (!platform_.link_index.count(link)) track(link);
    return std::move(platform_);
  }

  // Every link of the platform, by the names the zones below look them up with. A route up h levels of switches
  // and down again crosses 2h links and 2h - 1 switches: each link carries half the latency of the switch at each
  // of its ends (a NIC link one half, an uplink two), which adds up to the switches' latency on every route.
  void create_links(sg4::NetZone* root) {
    const double half_switch = cluster_.switch_latency / 2;
    fat_pipe(root, "switch", cluster_.switch_latency); // only the reducing switch's route crosses it
    for (int node = 0; node < cluster_.nodes; ++node) {
      const auto& nic = cluster_.nic_of(node);
      duplex(root, fmt::format("node{}-nic", node),
             {nic.bandwidth * cluster_.tcp.payload_efficiency(), nic.latency + half_switch});
      create_node_links(root, node);
    }
    const auto uplinks = topologies::tier_uplinks(cluster_);
    for (std::size_t level = 0; level < cluster_.tiers.size(); ++level)
      for (int i = 0; i < cluster_.nodes / group_size(static_cast<int>(level)); ++i) {
        const auto name = fmt::format("{}{}", topologies::tier_name(level), i);
        duplex(root, name + "-uplink", {uplinks[level] * cluster_.tcp.payload_efficiency(), 2 * half_switch});
      }
  }

  // Group `index` of tier `level`: a node (level -1) with its NIC as uplink, or a switch (a StarZone whose
  // backplane carries its latency) joining fan_in groups of the tier below, with its aggregated uplink.
  Group build_group(sg4::NetZone* parent, int level, int index) {
    if (level < 0) {
      auto [zone, nic_router] = build_node(parent, index);
      return {zone, nic_router, duplex_links_.at(fmt::format("node{}-nic", index))};
    }
    const auto name = fmt::format("{}{}", topologies::tier_name(level), index);
    auto* zone = sg4::create_star_zone(name);
    zone->set_parent(parent);
    // The switch's gateway lives in a zone of its own beside the children: SimGrid 3.32 routes between sibling
    // zones, and a gateway placed directly in `zone` would be looked up by the wrong id.
    auto* switch_zone = sg4::create_full_zone(name + "-switch");
    switch_zone->set_parent(zone);
    auto* gateway = switch_zone->create_router(name + "-switch-router");
    switch_zone->seal();
    const int fan_in = cluster_.tiers[level].fan_in;
    for (int i = 0; i < fan_in; ++i) {
      const auto child = build_group(zone, level - 1, index * fan_in + i);
      zone->add_route(child.zone->get_netpoint(), nullptr, child.gateway, nullptr, {{child.uplink, Direction::UP}},
                      true);
    }
    zone->add_route(switch_zone->get_netpoint(), nullptr, gateway, nullptr, {}, true);
    zone->seal();
    return {zone, gateway, duplex_links_.at(name + "-uplink")};
  }

  std::pair<sg4::NetZone*, simgrid::kernel::routing::NetPoint*> build_node(sg4::NetZone* root, int node) {
    auto* zone = sg4::create_full_zone(fmt::format("node{}", node));
    zone->set_parent(root);
    auto* nic_router = zone->create_router(fmt::format("node{}-nic-router", node));
    const int first = node * cluster_.gpus_per_node;
    std::vector<sg4::Host*> gpus;
    for (int local = 0; local < cluster_.gpus_per_node; ++local) {
      gpus.push_back(zone->create_host(fmt::format("gpu{}", first + local), kGpuHostSpeed)->seal());
      platform_.gpus.push_back(gpus.back());
    }
    const auto vertex = [&](std::size_t local) { return network_.gpu_vertex[first + local]; };
    const auto hub = network_.hub_vertex[static_cast<std::size_t>(node)];
    sg4::Host* nvswitch = nullptr; // reached through each GPU's NVLink port
    if (cluster_.nvswitch_reduces) {
      nvswitch = zone->create_host(fmt::format("node{}-nvswitch", node), kGpuHostSpeed)->seal();
      platform_.node_switches.push_back(nvswitch);
    }
    // The graph's routes inside the node: GPU to GPU over the fabric (or PCIe), GPU to NIC over PCIe.
    for (std::size_t a = 0; a < gpus.size(); ++a) {
      if (nvswitch)
        zone->add_route(gpus[a]->get_netpoint(), nvswitch->get_netpoint(), nullptr, nullptr,
                        links_of(router_.route(vertex(a), hub)), true);
      zone->add_route(gpus[a]->get_netpoint(), nic_router, nullptr, nullptr,
                      links_of(router_.route(vertex(a), network_.nic_vertex[first + a])), true);
      for (std::size_t b = a + 1; b < gpus.size(); ++b)
        zone->add_route(gpus[a]->get_netpoint(), gpus[b]->get_netpoint(), nullptr, nullptr,
                        links_of(router_.route(vertex(a), vertex(b))), true);
    }
    zone->seal();
    return {zone, nic_router};
  }

  sg4::SplitDuplexLink* duplex(sg4::NetZone* zone, const std::string& name, const topologies::LinkSpec& spec) {
    // Keep the SplitDuplexLink pointer: a chained ->seal() returns a plain Link* (DESIGN.md).
    auto* link = zone->create_split_duplex_link(name, spec.bandwidth);
    link->set_latency(spec.latency);
    link->seal();
    track(link->get_link_up());
    track(link->get_link_down());
    duplex_links_.emplace(name, link);
    return link;
  }

  void track(sg4::Link* half) {
    platform_.link_index.emplace(half, static_cast<int>(platform_.links.size()));
    platform_.links.push_back(half);
  }

  const topologies::ClusterSpec& cluster_;
  double nic_share_ = 1;
  topologies::NetworkModel network_;
  topologies::Router router_;
  std::vector<std::vector<int>> node_edges_; // edges inside each node
  Platform platform_;
  std::unordered_map<std::string, sg4::Link*> links_;                   // fat-pipes by name
  std::unordered_map<std::string, sg4::SplitDuplexLink*> duplex_links_; // full-duplex links by name
};

} // namespace

Platform build_platform(const topologies::ClusterSpec& cluster, double nic_share) {
  return PlatformBuilder(cluster, nic_share).build();
}

} // namespace dtsim::engine
