#include "sim/studies/catalog.hpp"

#include "calibration/framework.hpp"
#include "calibration/profile.hpp"
#include "io/suggest.hpp"
#include "io/table.hpp"
#include "io/units.hpp"
#include "models/zoo.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/report/format.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/strategy.hpp"
#include "sim/studies/provenance.hpp"
#include "topologies/instance.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

namespace dtsim::studies {
namespace {

std::string instances() {
  // Columns as wide as their widest cell: names, then figures right-aligned, then where the price comes from.
  std::vector<std::vector<std::string>> rows{
      {"instance", "GPU", "intra-node", "network", "GPUs", "on-demand", "spot", "price date, region"}};
  for (const auto& i : topologies::all_instances()) {
    const auto spot = i.price.spot_per_hour ? fmt::format("${:.2f}/h", *i.price.spot_per_hour) : std::string("-");
    rows.push_back(
        {i.name, i.gpu,
         fmt::format("{} {}", i.topology,
                     i.intra_bandwidth > 0 ? fmt::format("{:.0f} GB/s", i.intra_bandwidth / 1e9) : std::string()),
         i.nic_bandwidth > 0
             ? fmt::format("{} x {} {}", i.nics, report::format_bandwidth(i.nic_bandwidth), i.network_technology)
             : i.network_technology + " (rate unpublished)",
         std::to_string(i.gpus), fmt::format("${:.2f}/h", i.price.on_demand_per_hour), spot,
         fmt::format("{}, {}", i.price.date, i.price.region)});
  }
  std::string out = io::aligned_table(rows, 4);
  out += "\nPrices are USD per instance-hour, as listed on the date shown (sources in topologies/instances/*.json).\n";
  return out;
}

// Where a profile's numbers come from: datasheets and the measurements its sources cite, or a probe's run.
std::string origin(const calibration::GpuProfile& g) {
  if (g.measured) return fmt::format("measured: {} on {}", g.measured->device, g.measured->date);
  return fmt::format("derived: datasheets and published measurements, {} sources cited", g.sources.size());
}

std::string gpus() {
  std::string out = fmt::format("{:<16} {:<28} {:>10} {:>12} {:>12} {:>17}  {}\n", "gpu", "name", "memory", "fp32",
                                "fp16/bf16", "W idle/HBM/math", "where its numbers come from");
  for (const auto& name : calibration::profile_names()) {
    const auto g = *calibration::find_profile(name);
    const auto half = g.peak_flops.count(calibration::Precision::fp16)
                          ? fmt::format("{:.1f} TFLOP/s", g.peak_flops.at(calibration::Precision::fp16) / 1e12)
                          : std::string("-");
    const auto draw = g.power.known() ? fmt::format("{:.0f}/{:.0f}/{:.0f}", g.power.idle, g.power.memory, g.power.math)
                                      : std::string("-");
    out += fmt::format(
        "{:<16} {:<28} {:>10} {:>12} {:>12} {:>17}  {}\n", g.name, g.display_name, report::format_bytes(g.memory_bytes),
        fmt::format("{:.1f} TFLOP/s", g.peak_flops.at(calibration::Precision::fp32) / 1e12), half, draw, origin(g));
  }
  out +=
      "\nEach is calibration/profiles/NAME.json, its sources listed in the file. A profile file of your own (dtsim "
      "calibrate -o FILE) goes in cluster.gpu as its path. The draws (watts: idle, streaming from HBM, compute-bound) "
      "were measured on the H100 and H200 and scaled from the H100's by TDP on the others.\n";
  return out;
}

std::string models() {
  std::string out = fmt::format("{:<14} {:>14} {:>22}\n", "model", "parameters", "forward GFLOP/sample");
  for (const auto& name : models::preset_names()) {
    const auto w = *models::build_preset(name);
    out += fmt::format("{:<14} {:>14} {:>22.3f}\n", name, w.parameter_count(), w.forward_flops_per_sample() / 1e9);
  }
  return out;
}

std::string algorithms() {
  std::string out;
  for (const auto& name : collectives::operation_names()) {
    std::vector<std::string> names;
    for (auto a : collectives::supported_algorithms(*collectives::parse_operation(name)))
      names.emplace_back(collectives::to_string(a));
    out += fmt::format("{:<16} {}\n", name, fmt::join(names, ", "));
  }
  return out +
         "\nEvery operation also takes \"auto\": the choice NCCL or MPICH would make (docs/models.md, Collectives).\n";
}

// Each network kind and node fabric a scenario names, with what it is; a description's "\n" continues its line.
struct NamedKind {
  std::string_view name, description;
};
constexpr NamedKind kNetworks[] = {
    {"single-switch", "every node's NIC into one non-blocking switch (the default)"},
    {"leaf-spine", "nodes_per_leaf nodes under each leaf; oversubscription; optional spines: draw that many\nspine "
                   "switches, each leaf linked to every spine, flows spread by ECMP"},
    {"fat-tree",
     "nodes_per_leaf and leaves_per_pod (tiers, aggregated uplinks), or k: a k-ary fat-tree\n(Al-Fares "
     "2008; k even, k^3/4 nodes) with every switch drawn and ECMP; oversubscription\nper tier, e.g. [1, 2]"},
    {"rail-optimized", "rails (NICs per node; default one per GPU or per NIC), nodes_per_group under one set of\nrail "
                       "leaves, spines; NIC r of every node of a group on rail r's leaf (DGX SuperPOD, p5)"},
    {"dragonfly", "groups, routers_per_group, nodes_per_router, links_between_groups: routers of a group\nall-to-all, "
                  "every pair of groups joined by global links (Kim et al. 2008)"},
    {"torus", "dimensions [x, y] or [x, y, z]: each node linked to the next in every dimension"},
    {"ring", "a torus of one dimension"},
    {"explicit", "switches [{name, latency}] and links [{from, to, bandwidth, latency}] between switches\nand nodes "
                 "(\"node0\" ...)"},
};
constexpr NamedKind kFabrics[] = {
    {"nvlink", "every GPU's NVLink port into an NVSwitch (DGX A100/H100, p4d, p5)"},
    {"hybrid-cube-mesh", "DGX-1 V100 / p3.16xlarge: NVLink between chosen pairs, PCIe for the rest"},
    {"pcie", "every GPU on the PCIe root complex"},
    {"pcie-tree", "GPUs behind PCIe switches (gpus_per_pcie_switch each) under the root"},
};

std::string kinds_table(const auto& kinds, int width) {
  std::string out;
  for (const auto& k : kinds) {
    std::string description(k.description);
    for (std::size_t at = description.find('\n'); at != std::string::npos; at = description.find('\n', at + 1))
      description.insert(at + 1, std::string(width + 1, ' '));
    out += fmt::format("{:<{}} {}\n", k.name, width, description);
  }
  return out;
}

std::string topologies_list() {
  return "Networks (cluster.topology.kind):\n" + kinds_table(kNetworks, 15) +
         "\nNode fabrics (cluster.intra_node.fabric):\n" + kinds_table(kFabrics, 17) +
         "\nSingle-switch and tiers are routed by SimGrid's star zones (a tier's uplinks act as one link: perfect\n"
         "spreading); tori by SimGrid's torus zone (dimension order). Networks with every switch drawn are routed\n"
         "by dtsim: shortest paths, and where several are equal each switch picks one by a hash of the flow\n"
         "(ECMP), the same on every run. See docs/scenario-format.md.\n";
}

// What each short name does, in strategy_forms() order.
std::string_view strategy_summary(std::string_view form) {
  static const std::vector<std::pair<std::string_view, std::string_view>> kSummaries{
      {"allreduce", "every gradient all-reduced each iteration, synchronous (PyTorch DDP, Horovod)"},
      {"ps-sync", "parameter servers: a round waits for every worker's push (BSP); 1 dedicated server node"},
      {"ps-async", "parameter servers answer each push at once, whatever the others do (DistBelief)"},
      {"ssp[:S]", "parameter servers; a worker may lead the slowest by S iterations (stale-synchronous, Petuum; S 3)"},
      {"dpsgd", "D-PSGD: each worker averages with its ring neighbours every iteration, synchronous"},
      {"adpsgd", "AD-PSGD: asynchronous pairwise averaging with a random peer"},
      {"gossip[:P]", "GoSGD: push the model to a random peer with probability P per iteration (P 0.1)"},
      {"easgd[:TAU]", "EASGD: elastic averaging with a centre variable on 1 server node every TAU steps (TAU 4)"},
      {"local-sgd[:H]", "local SGD: train alone, all-reduce the model every H steps (H 8)"},
      {"preset:NAME", "a system below by name, case and spaces ignored (preset:petuum, preset:parameter-server)"},
  };
  for (const auto& [name, summary] : kSummaries)
    if (name == form) return summary;
  return "";
}

// A preset's strategy as its short name and what the name leaves out ("ps-async, 2 dedicated servers").
std::string strategy_summary_of(const strategies::StrategySpec& spec) {
  namespace st = strategies;
  st::StrategySpec plain = spec;
  plain.preset.clear();
  std::string out = st::strategy_name(plain);
  if (spec.kind == st::Kind::easgd && spec.schedule != st::Schedule::asynchronous)
    out += spec.schedule == st::Schedule::bounded ? fmt::format(", staleness {}", spec.staleness) : ", sync";
  if (st::uses_servers(spec)) {
    if (spec.servers.placement == st::ServerPlacement::colocated)
      out += spec.servers.count == 0 ? ", a server on every node"
                                     : fmt::format(", {} colocated servers", spec.servers.count);
    else
      out += fmt::format(", {} dedicated server{}", spec.servers.count, spec.servers.count == 1 ? "" : "s");
    if (spec.servers.hierarchical) out += ", in-node reduce first";
    if (spec.servers.tensors != st::TensorPlacement::split)
      out += fmt::format(", tensors whole ({})", st::to_string(spec.servers.tensors));
    if (spec.servers.channel_bandwidth > 0)
      out += fmt::format(", {} channels", io::format(io::Quantity::bandwidth, spec.servers.channel_bandwidth));
  }
  if (spec.kind == st::Kind::parameter_server && spec.period > 1) out += fmt::format(", every {} steps", spec.period);
  if (spec.algorithm) out += fmt::format(", {}", collectives::to_string(*spec.algorithm));
  return out;
}

std::string strategies_list() {
  std::string out = "Strategies (training.strategy; fields of the object form override them):\n";
  for (const auto& form : strategies::strategy_forms())
    out += fmt::format("{:<15} {}\n", form, strategy_summary(form));
  out += fmt::format(
      "\nSystems (Table 1 of Kako et al. 2021, then Horovod and BytePS):\n{:<17} {:<26} {:<26} {:<33} {:<27} {}\n",
      "preset", "citation", "scheduling", "exchange", "topology", "dtsim runs");
  for (const auto& p : strategies::presets())
    out +=
        fmt::format("{:<17} {:<26} {:<26} {:<33} {:<27} {}\n", p.name, p.citation, p.scheduling, p.exchange, p.topology,
                    strategy_summary_of(p.strategy) + (p.splits_model ? ", tensor parallel over every GPU" : ""));
  // The table leaves counts, bounds and periods open; each note says what dtsim chose.
  out += "\nWhat dtsim chose where the table is silent:\n";
  for (const auto& p : strategies::presets())
    out += fmt::format("{:<17} {}\n", p.name, p.note);
  return out;
}

std::string failure_presets() {
  std::string out = fmt::format("{:<18} {:<10} {:>14} {:>16} {:>10}  {}\n", "preset", "component", "units a node",
                                "MTBF of a unit", "detection", "counted");
  for (const auto& name : scenario::failure_preset_names())
    for (const auto& f : scenario::failure_preset(name))
      out += fmt::format("{:<18} {:<10} {:>14} {:>16} {:>10}  {}\n", name, f.component, f.units_per_node,
                         report::format_seconds(f.mtbf), report::format_seconds(f.detection), f.source);
  out += "\nEach is sim/lifecycle/failures/NAME.json: the study's published counts, from which dtsim derives a unit's "
         "MTBF (unit-seconds observed / interruptions). A scenario names one in failures.preset.\n";
  return out;
}

// A framework version's kernels and habits, in words.
struct FrameworkLine {
  std::string name, alias_of, attention, reduce, during_backward, zero;
};

FrameworkLine framework_line(const std::string& name) {
  const auto f = *calibration::find_framework(name);
  using calibration::GradientReduce;
  using calibration::ReduceDuringBackward;
  FrameworkLine l;
  l.name = name;
  l.alias_of = f.name != name ? f.name : std::string();
  l.attention = f.attention == calibration::AttentionImpl::cudnn   ? "fused (cuDNN's on Hopper)"
                : f.attention == calibration::AttentionImpl::fused ? "fused"
                : f.fused_softmax_max_keys > 0
                    ? fmt::format("unfused, softmax fused to {:.0f} keys", f.fused_softmax_max_keys)
                    : std::string(f.fused_softmax ? "unfused, softmax fused" : "unfused");
  l.reduce = f.gradient_reduce == GradientReduce::fp32           ? "fp32"
             : f.gradient_reduce == GradientReduce::bf16_in_fp32 ? "bf16 and fp8 in fp32"
                                                                 : "as trained";
  l.during_backward = f.reduce_during_backward == ReduceDuringBackward::on      ? "yes"
                      : f.reduce_during_backward == ReduceDuringBackward::zero3 ? "with ZeRO-3"
                      : f.reduce_during_backward == ReduceDuringBackward::off   ? "when asked"
                                                                                : "never";
  l.zero = f.distributed_optimizer ? "yes" : "no";
  return l;
}

std::string frameworks_list() {
  std::string out = fmt::format("{:<22} {:<36} {:<22} {:<15} {:<5} {}\n", "FRAMEWORK", "ATTENTION (model: auto)",
                                "GRADIENTS REDUCED IN", "UNDER BACKWARD", "ZERO", "WHAT IT IS");
  for (const auto& name : calibration::framework_names()) {
    const auto l = framework_line(name);
    const auto f = *calibration::find_framework(name);
    out += fmt::format("{:<22} {:<36} {:<22} {:<15} {:<5} {}\n", name, l.attention, l.reduce, l.during_backward, l.zero,
                       l.alias_of.empty() ? f.display_name : "the same as " + l.alias_of);
  }
  out += "\nEach is calibration/frameworks/NAME.json: the version's kernels and habits, each cited to its code. A "
         "scenario names one in training.framework (\"auto\": megatron with tensor, pipeline or expert parallelism, "
         "pytorch-ddp otherwise).\n";
  return out;
}

// The same lists as data: figures in base units (bytes, FLOP/s, W, seconds, USD), null where not published.
nlohmann::json list_json(const std::string& what) {
  using nlohmann::json;
  json items = json::array();
  const auto optional = [](double value) { return value > 0 ? json(value) : json(); };
  if (what == "instances") {
    for (const auto& i : topologies::all_instances())
      items.push_back({{"name", i.name},
                       {"provider", i.provider},
                       {"display_name", i.display_name},
                       {"gpu", i.gpu},
                       {"gpus", i.gpus},
                       {"gpu_memory_bytes", i.gpu_memory_bytes},
                       {"vcpus", i.vcpus},
                       {"host_memory_bytes", i.host_memory_bytes},
                       {"intra_node_topology", i.topology},
                       {"intra_node_bytes_per_second", optional(i.intra_bandwidth)},
                       {"nics", i.nics},
                       {"nic_bytes_per_second", optional(i.nic_bandwidth)},
                       {"network_technology", i.network_technology},
                       {"on_demand_usd_per_hour", i.price.on_demand_per_hour},
                       {"spot_usd_per_hour", i.price.spot_per_hour ? json(*i.price.spot_per_hour) : json()},
                       {"price_date", i.price.date},
                       {"price_region", i.price.region}});
  } else if (what == "gpus") {
    for (const auto& name : calibration::profile_names()) {
      const auto g = *calibration::find_profile(name);
      const auto peak = [&](calibration::Precision p) {
        return g.peak_flops.count(p) ? json(g.peak_flops.at(p)) : json();
      };
      items.push_back(
          {{"name", g.name},
           {"display_name", g.display_name},
           {"memory_bytes", g.memory_bytes},
           {"fp32_flops_per_second", peak(calibration::Precision::fp32)},
           {"fp16_flops_per_second", peak(calibration::Precision::fp16)},
           {"power_watts", g.power.known()
                               ? json{{"idle", g.power.idle}, {"memory", g.power.memory}, {"math", g.power.math}}
                               : json()},
           {"provenance", origin(g)}});
    }
  } else if (what == "models") {
    for (const auto& name : models::preset_names()) {
      const auto w = *models::build_preset(name);
      items.push_back({{"name", name},
                       {"parameters", w.parameter_count()},
                       {"forward_flops_per_sample", w.forward_flops_per_sample()}});
    }
  } else if (what == "algorithms") {
    for (const auto& name : collectives::operation_names()) {
      json algorithms = json::array({"auto"});
      for (auto a : collectives::supported_algorithms(*collectives::parse_operation(name)))
        algorithms.push_back(collectives::to_string(a));
      items.push_back({{"operation", name}, {"algorithms", algorithms}});
    }
  } else if (what == "topologies") {
    const auto described = [](const NamedKind& k, const char* field) {
      std::string text(k.description);
      std::replace(text.begin(), text.end(), '\n', ' ');
      return json{{"name", k.name}, {"field", field}, {"description", text}};
    };
    for (const auto& k : kNetworks)
      items.push_back(described(k, "cluster.topology.kind"));
    for (const auto& k : kFabrics)
      items.push_back(described(k, "cluster.intra_node.fabric"));
  } else if (what == "strategies") {
    for (const auto& form : strategies::strategy_forms())
      items.push_back({{"name", form}, {"description", strategy_summary(form)}, {"kind", "strategy"}});
    for (const auto& p : strategies::presets())
      items.push_back(
          {{"name", p.name},
           {"kind", "preset"},
           {"citation", p.citation},
           {"scheduling", p.scheduling},
           {"exchange", p.exchange},
           {"topology", p.topology},
           {"runs", strategy_summary_of(p.strategy) + (p.splits_model ? ", tensor parallel over every GPU" : "")},
           {"note", p.note}});
  } else if (what == "frameworks") {
    for (const auto& name : calibration::framework_names()) {
      const auto l = framework_line(name);
      items.push_back({{"name", l.name},
                       {"alias_of", l.alias_of.empty() ? json() : json(l.alias_of)},
                       {"attention", l.attention},
                       {"gradients_reduced_in", l.reduce},
                       {"reduces_under_backward", l.during_backward},
                       {"distributed_optimizer", l.zero == "yes"}});
    }
  } else if (what == "failures") {
    for (const auto& name : scenario::failure_preset_names())
      for (const auto& f : scenario::failure_preset(name))
        items.push_back({{"preset", name},
                         {"component", f.component},
                         {"units_per_node", f.units_per_node},
                         {"mtbf_seconds", f.mtbf},
                         {"detection_seconds", f.detection},
                         {"source", f.source}});
  }
  return items;
}

} // namespace

std::vector<std::string> catalog_kinds() {
  return {"instances", "gpus", "models", "algorithms", "topologies", "strategies", "failures", "frameworks"};
}

namespace {

// An unknown kind is refused before anything is built.
void check_kind(const std::string& what) {
  const auto kinds = catalog_kinds();
  if (std::find(kinds.begin(), kinds.end(), what) == kinds.end())
    throw scenario::ScenarioError("list", "",
                                  fmt::format("cannot list \"{}\"; expected instances, gpus, models, algorithms, "
                                              "topologies, strategies, failures or frameworks{}",
                                              what, io::did_you_mean(what, kinds, 1)));
}

} // namespace

std::string catalog_text(const std::string& what) {
  check_kind(what);
  if (what == "instances") return instances();
  if (what == "gpus") return gpus();
  if (what == "models") return models();
  if (what == "algorithms") return algorithms();
  if (what == "topologies") return topologies_list();
  if (what == "strategies") return strategies_list();
  if (what == "failures") return failure_presets();
  return frameworks_list();
}

nlohmann::json catalog_document(const std::string& what) {
  check_kind(what);
  auto document = command_document("list", nlohmann::json());
  document["what"] = what;
  document["items"] = list_json(what);
  return document;
}

} // namespace dtsim::studies
