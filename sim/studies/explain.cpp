#include "sim/studies/explain.hpp"

#include "sim/engine/footprint.hpp"
#include "sim/plan/parallel_layout.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/stage_summary.hpp"
#include "sim/report/format.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/provenance.hpp"
#include "topologies/instance.hpp"
#include "topologies/network_graph.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

namespace dtsim::studies {
namespace {

std::string rate(double bytes_per_second) {
  return fmt::format("{} ({:.2f} GB/s)", report::format_bandwidth(bytes_per_second), bytes_per_second / 1e9);
}

std::pair<int, int> parse_pair(const std::string& text) {
  int a = -1, b = -1;
  char comma = 0;
  if (std::sscanf(text.c_str(), "%d%c%d", &a, &comma, &b) != 3 || comma != ',' || a < 0 || b < 0)
    throw scenario::ScenarioError("--path", "", fmt::format("expected two GPU numbers \"A,B\", got \"{}\"", text));
  return {a, b};
}

// The network between the nodes, with what each switch's links carry.
template <class Line> void describe_network(const topologies::ClusterSpec& c, Line&& line) {
  const auto kind = topologies::network_kind(c);
  const auto crossing = report::format_seconds(c.switch_latency);
  if (!c.torus.empty()) {
    line("topology", fmt::format("{} {}, one link of the NIC's bandwidth to the next node in each dimension, routed "
                                 "dimension by dimension",
                                 c.torus.size() == 1 ? "ring of" : "torus", fmt::join(c.torus, " x ")));
  } else if (kind == "explicit") {
    line("topology", fmt::format("explicit: {} switches and {} links as listed, shortest paths with ECMP",
                                 c.explicit_network.switches.size(), c.explicit_network.links.size()));
  } else if (kind == "dragonfly") {
    const auto& d = c.dragonfly;
    line("topology", fmt::format("dragonfly: {} groups of {} routers, {} nodes per router, {} per crossing", d.groups,
                                 d.routers_per_group, d.nodes_per_router, crossing));
    line("local links", fmt::format("all-to-all inside each group, {}",
                                    rate(d.local_bandwidth > 0 ? d.local_bandwidth : c.nic.bandwidth)));
    line("global links", fmt::format("{} between every pair of groups, {}", d.links_between_groups,
                                     rate(d.global_bandwidth > 0 ? d.global_bandwidth : c.nic.bandwidth)));
  } else if (kind == "rail-optimized") {
    const auto& r = c.rail;
    const double nic = c.nic.bandwidth / r.rails;
    const int group = c.rail_group(), spines = c.rail_spines();
    line("topology", fmt::format("rail-optimized: {} rails, {} group{} of {} nodes, {} spine{}, {} per crossing",
                                 r.rails, c.nodes / group, c.nodes / group == 1 ? "" : "s", group, spines,
                                 spines == 1 ? "" : "s", crossing));
    line("rail NICs", fmt::format("{} per node, {} each", r.rails, rate(nic)));
    line("leaf to spine", fmt::format("one link per spine, {}, oversubscribed {:g}:1",
                                      rate(group * nic / (r.oversubscription * spines)), r.oversubscription));
  } else if (c.fat_tree.k > 0) {
    const auto& t = c.fat_tree;
    line("topology", fmt::format("k-ary fat-tree, k = {}: {} pods of {} edge and {} aggregation switches, {} core "
                                 "switches, ECMP; {} per crossing",
                                 t.k, t.k, t.k / 2, t.k / 2, t.k * t.k / 4, crossing));
    line("edge uplinks", fmt::format("{}, oversubscribed {:g}:1", rate(c.nic.bandwidth / t.edge_oversubscription),
                                     t.edge_oversubscription));
    line("aggregation uplinks",
         fmt::format("{}, oversubscribed {:g}:1", rate(c.nic.bandwidth / t.aggregation_oversubscription),
                     t.aggregation_oversubscription));
  } else if (c.tiers.empty()) {
    line("topology", fmt::format("single switch, non-blocking (1:1), {} per crossing", crossing));
  } else {
    line("topology", fmt::format("{}, {} per switch crossing", kind, crossing));
    const auto uplinks = topologies::tier_uplinks(c);
    for (std::size_t i = 0; i < c.tiers.size(); ++i)
      line(fmt::format("{} switches", topologies::tier_name(i)),
           fmt::format("{} children each, uplink {}, oversubscribed {:g}:1", c.tiers[i].fan_in, rate(uplinks[i]),
                       c.tiers[i].oversubscription));
    if (c.spines > 0)
      line("spines",
           fmt::format("{} drawn, one link of {} from each leaf to each, ECMP", c.spines, rate(uplinks[0] / c.spines)));
  }
}

// A group's ranks, the middle elided past four: "0, 1, ..., 7", "0, 128, ..., 896".
std::string format_ranks(const std::vector<int>& ranks) {
  if (ranks.size() <= 4) return fmt::format("{}", fmt::join(ranks, ", "));
  return fmt::format("{}, {}, ..., {}", ranks[0], ranks[1], ranks.back());
}

// Large-model parallelism: the grid, each kind of group (how many, where, the ring's narrowest step), the stage
// split and each stage's memory (plan::describe_stages: the planner's split and memory model, no programs built).
template <class Line>
void describe_parallelism(const scenario::Scenario& s, const topologies::NetworkModel& network, std::string& out,
                          Line&& line) {
  const auto& p = s.parallelism;
  std::string order;
  for (const auto& name : p.order)
    order += (order.empty() ? "" : "-") + name;
  out += fmt::format("\nParallel groups: tensor {} x pipeline {} x data {}{}, placed {} (innermost first)\n", p.tensor,
                     p.pipeline, p.data, p.expert > 1 ? fmt::format(" (experts over {})", p.expert) : "", order);
  line("batch", fmt::format("micro-batch {} x {} data-parallel replica{} x {} micro-batch{} = global batch {} samples",
                            s.model.batch_per_gpu, p.data, p.data == 1 ? "" : "s", p.micro_batches,
                            p.micro_batches == 1 ? "" : "es", s.global_batch()));
  for (const auto& g : plan::describe_groups(s, network))
    line(g.kind, fmt::format("{} group{} of {} GPUs (first: {}); {}; ring bottleneck {} per GPU", g.count,
                             g.count == 1 ? "" : "s", g.size, format_ranks(g.first),
                             g.crosses_nodes ? "crosses the network" : "inside a node", rate(g.ring_bandwidth)));
  if (p.pipeline == 1) return; // one stage: the memory section below shows it
  const auto stages = plan::describe_stages(s);
  line("stage split", fmt::format("{} blocks per model chunk ({} stages x {} chunk{}, {} schedule)",
                                  fmt::join(stages.chunk_units, "/"), p.pipeline, p.virtual_stages,
                                  p.virtual_stages == 1 ? "" : "s", scenario::to_string(p.schedule)));
  std::string memory;
  for (std::size_t i = 0; i < stages.stage_memory.size(); ++i) {
    const auto& m = stages.stage_memory[i];
    memory += fmt::format("{}{}{}", i ? ", " : "", report::format_bytes(m.total()), m.fits() ? "" : " (DOES NOT FIT)");
  }
  line("memory per GPU by stage", fmt::format("{} (the GPU has {})", memory, report::format_bytes(s.gpu.memory_bytes)));
}

nlohmann::json memory_json(const plan::MemoryEstimate& m) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& item : m.items)
    items.push_back({{"name", item.name}, {"bytes", item.bytes}});
  return {{"total_bytes", m.total()}, {"capacity_bytes", m.capacity}, {"fits", m.fits()}, {"items", items}};
}

// The figures the text shows, in base units (bytes, bytes/s, seconds, USD), for tools that read them.
nlohmann::json cluster_json(const scenario::Scenario& s, const topologies::NetworkModel& network,
                            const topologies::ClusterSummary& summary) {
  const auto& c = s.cluster;
  const auto link = [](const auto& l) {
    return nlohmann::json{{"bytes_per_second", l.bandwidth}, {"latency_seconds", l.latency}};
  };
  auto intra = link(c.intra);
  intra["fabric"] = topologies::to_string(c.intra_kind);
  return {{"instance", c.instance.empty() ? nlohmann::json() : nlohmann::json(c.instance)},
          {"nodes", c.nodes},
          {"gpus_per_node", c.gpus_per_node},
          {"gpus", summary.gpus},
          {"gpu", s.gpu.name},
          {"gpu_memory_bytes", s.gpu.memory_bytes},
          {"network_switches", summary.switches},
          {"links", summary.links},
          {"intra_node", intra},
          {"pcie", link(c.pcie)},
          {"nic", link(c.nic)},
          {"network", topologies::network_kind(c)},
          {"diameter_links", topologies::gpu_diameter(network)},
          {"bisection_bytes_per_second", summary.bisection_bandwidth},
          {"nvlink_sharp", c.nvswitch_reduces},
          {"infiniband_sharp", c.switch_reduces},
          {"price_usd_per_node_hour",
           c.price_per_node_hour > 0 ? nlohmann::json(c.price_per_node_hour) : nlohmann::json()}};
}

nlohmann::json parallel_json(const scenario::Scenario& s, const topologies::NetworkModel& network) {
  const auto& p = s.parallelism;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : plan::describe_groups(s, network))
    groups.push_back({{"kind", g.kind},
                      {"count", g.count},
                      {"size", g.size},
                      {"first", g.first},
                      {"crosses_nodes", g.crosses_nodes},
                      {"ring_bytes_per_second", g.ring_bandwidth}});
  nlohmann::json out{{"tensor", p.tensor},
                     {"pipeline", p.pipeline},
                     {"data", p.data},
                     {"expert", p.expert},
                     {"order", p.order},
                     {"micro_batches", p.micro_batches},
                     {"global_batch", s.global_batch()},
                     {"groups", groups}};
  if (p.pipeline > 1) {
    const auto stages = plan::describe_stages(s);
    out["chunk_units"] = stages.chunk_units;
    out["stage_memory"] = nlohmann::json::array();
    for (const auto& m : stages.stage_memory)
      out["stage_memory"].push_back(memory_json(m));
  }
  return out;
}

} // namespace

Explanation explain(const scenario::Scenario& s, const std::string& path, const engine::ChildLimits& limit) {
  const auto& c = s.cluster;
  const auto network = topologies::build_network(c);
  const auto summary = topologies::summarize(c, network);
  auto document = command_document("explain", scenario::to_json(s));
  document["cluster"] = cluster_json(s, network, summary);
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<28} {}\n", label, value);
  };
  out += fmt::format("{}: cluster\n", s.name);
  if (!c.instance.empty()) {
    const auto instance = topologies::find_instance(c.instance);
    line("instance",
         fmt::format("{} {} ({} {} x {}, {} vCPUs, {} host memory)", instance->provider, instance->display_name,
                     instance->gpus, instance->gpu, report::format_bytes(instance->gpu_memory_bytes), instance->vcpus,
                     report::format_bytes(instance->host_memory_bytes)));
    line("network", fmt::format("{} x {} {}", instance->nics, report::format_bandwidth(instance->nic_bandwidth),
                                instance->network_technology));
  }
  line("nodes", fmt::format("{} of {} GPU{}", c.nodes, c.gpus_per_node, c.gpus_per_node == 1 ? "" : "s"));
  line("GPUs", fmt::format("{} x {} ({}, {} each)", summary.gpus, s.gpu.name, s.gpu.display_name,
                           report::format_bytes(s.gpu.memory_bytes)));
  line("switches", fmt::format("{} network switch{}{}", summary.switches, summary.switches == 1 ? "" : "es",
                               c.intra_kind == topologies::IntraNodeKind::nvlink ? " + an NVSwitch per node" : ""));
  line("links", fmt::format("{} full-duplex", summary.links));
  line("intra-node fabric",
       fmt::format("{}, {} per {} per direction, {}", topologies::to_string(c.intra_kind), rate(c.intra.bandwidth),
                   c.intra_kind == topologies::IntraNodeKind::hybrid_cube_mesh ? "NVLink link (6 per GPU)" : "GPU",
                   report::format_seconds(c.intra.latency)));
  if (c.intra_kind == topologies::IntraNodeKind::nvlink || c.intra_kind == topologies::IntraNodeKind::hybrid_cube_mesh)
    line("GPU to NIC", fmt::format("PCIe, {}, {}", rate(c.pcie.bandwidth), report::format_seconds(c.pcie.latency)));
  line("NIC", fmt::format("{} per direction, {}", rate(c.nic.bandwidth), report::format_seconds(c.nic.latency)));
  describe_network(c, line);
  const double uplink = c.gpus_per_node * c.pcie.bandwidth;
  line("node uplink",
       fmt::format("{} GPUs' PCIe ({:.1f} GB/s) into the NIC ({:.1f} GB/s): {:.1f}:1 oversubscribed", c.gpus_per_node,
                   uplink / 1e9, c.nic.bandwidth / 1e9, std::max(1.0, uplink / c.nic.bandwidth)));
  line("diameter", fmt::format("{} links between the farthest GPUs", topologies::gpu_diameter(network)));
  line("bisection bandwidth", rate(summary.bisection_bandwidth));
  line("in-switch reduction", fmt::format("NVLink SHARP {}, InfiniBand SHARP {}", c.nvswitch_reduces ? "on" : "off",
                                          c.switch_reduces ? "on" : "off"));
  if (c.price_per_node_hour > 0)
    line("price", fmt::format("${:.2f} per node-hour, ${:.2f} per hour for the cluster", c.price_per_node_hour,
                              c.price_per_node_hour * c.nodes));

  if (s.parallelism.model_parallel()) {
    describe_parallelism(s, network, out, line);
    document["parallelism"] = parallel_json(s, network);
  }

  out += s.parallelism.model_parallel()
             ? (s.parallelism.pipeline > 1 ? "\nMemory per GPU (the fullest pipeline stage)\n"
                                           : "\nMemory per GPU (model parallel)\n")
             : "\nMemory per GPU (data parallel)\n";
  const auto memory = plan::estimate_memory(s);
  out += report::format_memory(memory);
  document["memory_per_gpu"] = memory_json(memory);

  // What the simulation itself will take on this machine (engine/footprint.hpp), against the default limit.
  out += "\nSimulation (this machine's memory, for dtsim itself)\n";
  try {
    const auto plan = checked_plan(s, limit);
    const auto options = replay_options(s, limit);
    const auto f = engine::estimate_footprint(s.cluster, plan.graph, options);
    line("estimated peak", fmt::format("{}, of a limit of {}", report::format_bytes(f.bytes), limit.memory_text));
    line("ranks",
         fmt::format("{} ({} simulated) x {:.0f} KiB", f.ranks, f.simulated_ranks, engine::kBytesPerRank / 1024));
    line("timeline entries", fmt::format("{:.0f} ({} iterations with the warm-up) x {:.0f} B", f.intervals,
                                         f.iterations, engine::kBytesPerInterval));
    document["simulation"] = {{"estimated_peak_bytes", f.bytes},
                              {"limit_bytes", limit.memory},
                              {"ranks", f.ranks},
                              {"simulated_ranks", f.simulated_ranks},
                              {"timeline_entries", f.intervals}};
  } catch (const std::exception& e) { // does not fit in GPU memory, or past the limit: the reason, to its first colon
    const std::string why = e.what();
    line("estimated peak", fmt::format("not estimated: {}", why.substr(0, why.find(": "))));
    document["simulation"] = {{"error", why.substr(0, why.find(": "))}};
  }

  if (!path.empty()) {
    const auto [a, b] = parse_pair(path);
    topologies::Path p;
    try {
      p = topologies::path_between(network, a, b);
    } catch (const std::out_of_range& e) {
      throw scenario::ScenarioError("--path", "", e.what());
    }
    out += fmt::format("\nPath gpu{} -> gpu{}\n", a, b);
    line("through", fmt::format("{}", fmt::join(p.vertices, " -> ")));
    line("links", fmt::format("{}", fmt::join(p.links, ", ")));
    line("bottleneck", p.links.empty() ? "none (same GPU)" : rate(p.bottleneck));
    line("latency", report::format_seconds(p.latency) + " (links and switch, before the network model's factor)");
    document["path"] = {
        {"from", a},
        {"to", b},
        {"vertices", p.vertices},
        {"links", p.links},
        {"bottleneck_bytes_per_second", p.links.empty() ? nlohmann::json() : nlohmann::json(p.bottleneck)},
        {"latency_seconds", p.latency}};
  }
  return {out, document};
}

} // namespace dtsim::studies
