// `dtsim collective`: one collective over a range of sizes, printed as nccl-tests prints it.
#include "sim/collective_bench.hpp"
#include "sim/report/format.hpp"
#include "sim/simulate.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <thread>
#include <unistd.h>

namespace dtsim::cli {
namespace {

// nccl-tests reports float data; the reduction operator only means something for reducing operations.
bool reduces(collectives::Operation op) {
  using collectives::Operation;
  return op == Operation::all_reduce || op == Operation::reduce_scatter || op == Operation::reduce;
}

std::string table(const std::vector<CollectivePoint>& points, collectives::Operation op) {
  std::string out = fmt::format("#{:>12} {:>13} {:>7} {:>6} {:>19} {:>8} {:>8} {:>12} {:>9} {:>9}\n", "size", "count",
                                "type", "redop", "algorithm", "protocol", "channels", "time", "algbw", "busbw");
  out += fmt::format("#{:>12} {:>13} {:>7} {:>6} {:>19} {:>8} {:>8} {:>12} {:>9} {:>9}\n", "(B)", "(elements)", "", "",
                     "", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const auto& p : points) {
    const auto algorithm = collectives::to_string(p.algorithm);
    const auto protocol = collectives::to_string(p.protocol);
    const auto channels = p.channels > 0 ? std::to_string(p.channels) : std::string("-");
    if (!p.ok) {
      out += fmt::format(" {:>12.0f} {:>13.0f} {:>7} {:>6} {:>19} {:>8} {:>8}  failed: {}\n", p.bytes, p.bytes / 4,
                         "float", reduces(op) ? "sum" : "none", algorithm, protocol, channels, p.error);
      continue;
    }
    out += fmt::format(" {:>12.0f} {:>13.0f} {:>7} {:>6} {:>19} {:>8} {:>8} {:>12.2f} {:>9.2f} {:>9.2f}\n", p.bytes,
                       p.bytes / 4, "float", reduces(op) ? "sum" : "none", algorithm, protocol, channels,
                       p.seconds * 1e6, p.algbw / 1e9, p.busbw / 1e9);
  }
  return out;
}

std::string csv(const std::vector<CollectivePoint>& points) {
  std::string out =
      "size_bytes,algorithm,protocol,channels,time_seconds,algbw_bytes_per_second,busbw_bytes_per_second,error\n";
  for (const auto& p : points) {
    const auto head = fmt::format("{:.0f},{},{},{}", p.bytes, collectives::to_string(p.algorithm),
                                  collectives::to_string(p.protocol), p.channels);
    out += p.ok ? fmt::format("{},{:.9g},{:.9g},{:.9g},\n", head, p.seconds, p.algbw, p.busbw)
                : fmt::format("{},,,,{}\n", head, csv_field(p.error));
  }
  return out;
}

// The scenario file, or with --instance a minimal document built here (the model is required by the format
// but unused by the benchmark), read by the same loader; errors in it name "--instance" as their origin.
scenario::Scenario load_cluster(const CollectiveArgs& args) {
  if (!args.instance) {
    if (args.nodes)
      throw scenario::ScenarioError("--nodes", "",
                                    "only with --instance; with a scenario file use --set cluster.nodes=N");
    if (args.scenario.empty())
      throw scenario::ScenarioError("collective", "", "give a scenario file or --instance NAME (dtsim list instances)");
    return load_with_overrides(args.scenario, args.sets);
  }
  if (!args.scenario.empty())
    throw scenario::ScenarioError("--instance", "",
                                  fmt::format("give a scenario file ({}) or --instance, not both", args.scenario));
  std::vector<scenario::Override> overrides;
  for (const auto& s : args.sets)
    overrides.push_back(scenario::parse_override(s));
  return instance_scenario(*args.instance, args.nodes.value_or(1), overrides, "--instance");
}

} // namespace

int collective_command(const CollectiveArgs& args) {
  const auto scenario = load_cluster(args);

  CollectiveBench bench;
  const auto op = collectives::parse_operation(args.op);
  if (!op)
    throw scenario::ScenarioError("--op", "",
                                  fmt::format("unknown operation \"{}\"; expected one of {}", args.op,
                                              fmt::join(collectives::operation_names(), ", ")));
  bench.op = *op;
  const auto algorithm = collectives::parse_algorithm(args.algorithm);
  if (!algorithm)
    throw scenario::ScenarioError("--algo", "",
                                  fmt::format("unknown algorithm \"{}\"; expected one of {}", args.algorithm,
                                              fmt::join(collectives::algorithm_names(), ", ")));
  bench.algorithm = *algorithm;
  const auto supported = collectives::supported_algorithms(bench.op);
  if (bench.algorithm != collectives::Algorithm::automatic &&
      std::find(supported.begin(), supported.end(), bench.algorithm) == supported.end()) {
    std::vector<std::string> names;
    for (auto a : supported)
      names.emplace_back(collectives::to_string(a));
    throw scenario::ScenarioError("--algo", "",
                                  fmt::format("{} has no '{}' algorithm; expected auto or one of {}", args.op,
                                              args.algorithm, fmt::join(names, ", ")));
  }
  const auto protocol = collectives::parse_protocol(args.protocol);
  if (!protocol)
    throw scenario::ScenarioError("--proto", "",
                                  fmt::format("unknown protocol \"{}\"; expected one of {}", args.protocol,
                                              fmt::join(collectives::protocol_names(), ", ")));
  bench.protocol = *protocol;
  if (args.fidelity != "step" && args.fidelity != "aggregate")
    throw scenario::ScenarioError("--fidelity", "",
                                  fmt::format("unknown mode \"{}\"; expected step or aggregate", args.fidelity));
  bench.aggregate = args.fidelity == "aggregate";
  bench.ranks = args.ranks;
  try {
    bench.sizes = parse_sizes(args.sizes);
  } catch (const std::invalid_argument& e) {
    throw scenario::ScenarioError("--sizes", "", e.what());
  }
  if (bench.op == collectives::Operation::all_to_all_v)
    throw scenario::ScenarioError("--op", "", "all-to-all-v needs a size matrix; the benchmark runs all-to-all");
  check_writable({args.csv_out}, {args.scenario});
  // The nodes --ranks adds are nodes of the scenario's cluster: read again with that count, they meet its limits.
  if (bench.ranks > scenario.cluster.gpu_count()) {
    const auto nodes =
        (static_cast<std::int64_t>(bench.ranks) + scenario.cluster.gpus_per_node - 1) / scenario.cluster.gpus_per_node;
    try {
      (void)with_nodes(scenario, static_cast<int>(nodes));
    } catch (const scenario::ScenarioError& e) {
      throw scenario::ScenarioError("--ranks", "",
                                    fmt::format("{} ranks need {} nodes of {} GPUs: {}: {}", bench.ranks, nodes,
                                                scenario.cluster.gpus_per_node, e.pointer(), e.detail()));
    }
  }

  const auto cluster = bench_cluster(scenario, bench.ranks);
  const int ranks = bench.ranks > 0 ? bench.ranks : cluster.gpu_count();
  std::cout << fmt::format("# dtsim collective: {}, {} ranks on {} nodes of {} x {} ({} fabric, {} NIC), {} "
                           "fidelity, {} network model\n#\n",
                           collectives::to_string(bench.op), ranks, cluster.nodes, cluster.gpus_per_node,
                           scenario.gpu.name, topologies::to_string(cluster.intra_kind),
                           report::format_bandwidth(cluster.nic.bandwidth), args.fidelity,
                           scenario::to_string(scenario.network.model));
  std::vector<CollectivePoint> points;
  {
    const ProgressLine progress("collective: sizes simulated");
    try {
      const int jobs = parallel_jobs(args.jobs);
      points = bench_collective(
          scenario, bench, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
          memory_limit_of(args.max_memory, std::min<int>(jobs, static_cast<int>(bench.sizes.size()))));
    } catch (const std::invalid_argument& e) { // a forced protocol the cluster's collectives cannot run
      throw scenario::ScenarioError("--proto", "", e.what());
    }
  }
  std::cout << table(points, bench.op);
  return finish_table(args.csv_out, csv(points),
                      std::all_of(points.begin(), points.end(), [](const auto& p) { return p.ok; }) ? kExitOk
                                                                                                    : kExitFailed);
}

} // namespace dtsim::cli
