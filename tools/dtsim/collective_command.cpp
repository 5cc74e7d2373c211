// `dtsim collective`: one collective over a range of sizes, printed as nccl-tests prints it.
#include "sim/report/format.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/collective_bench.hpp"
#include "sim/studies/provenance.hpp"
#include "sim/studies/sweep.hpp"
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

// nccl-tests' table: out-of-place and in-place columns (dtsim models no local copy, so both are the same simulation),
// #wrong "N/A" (no data is checked: nccl-tests prints the same with -c 0), then its average bus bandwidth footer.
std::string table(const std::vector<studies::CollectivePoint>& points, collectives::Operation op) {
  const auto row = [](auto... cells) {
    return fmt::format(
        "{:>13} {:>13} {:>7} {:>6} {:>19} {:>8} {:>8} {:>10} {:>8} {:>8} {:>6} {:>10} {:>8} {:>8} {:>6}\n", cells...);
  };
  std::string out = fmt::format("#{:>104}{:>35}\n", "out-of-place", "in-place");
  out += '#';
  out += row("size", "count", "type", "redop", "algorithm", "protocol", "channels", "time", "algbw", "busbw", "#wrong",
             "time", "algbw", "busbw", "#wrong")
             .substr(1);
  out += '#';
  out += row("(B)", "(elements)", "", "", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
             .substr(1);
  double busbw_sum = 0;
  int measured = 0;
  for (const auto& p : points) {
    const auto algorithm = collectives::to_string(p.algorithm);
    const auto protocol = collectives::to_string(p.protocol);
    const auto channels = p.channels > 0 ? std::to_string(p.channels) : std::string("-");
    const auto size = fmt::format("{:.0f}", p.bytes), count = fmt::format("{:.0f}", p.bytes / 4);
    const char* redop = reduces(op) ? "sum" : "none";
    if (!p.ok) {
      out += fmt::format("{:>13} {:>13} {:>7} {:>6} {:>19} {:>8} {:>8}  failed: {}\n", size, count, "float", redop,
                         algorithm, protocol, channels, p.error);
      continue;
    }
    const auto time = fmt::format("{:.2f}", p.seconds * 1e6), algbw = fmt::format("{:.2f}", p.algbw / 1e9),
               busbw = fmt::format("{:.2f}", p.busbw / 1e9);
    out += row(size, count, "float", redop, algorithm, protocol, channels, time, algbw, busbw, "N/A", time, algbw,
               busbw, "N/A");
    busbw_sum += 2 * p.busbw / 1e9; // nccl-tests averages over both columns
    measured += 2;
  }
  if (measured > 0) out += fmt::format("# Avg bus bandwidth    : {:g} \n#\n", busbw_sum / measured);
  return out;
}

std::string csv(const std::vector<studies::CollectivePoint>& points) {
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

// What the CSV has, in JSON (null where a failed size has no figure), with the run's description and nccl-tests'
// average bus bandwidth.
nlohmann::json json_document(const scenario::Scenario& scenario, const topologies::ClusterSpec& cluster,
                             const studies::CollectiveBench& bench, const std::string& fidelity,
                             const std::vector<studies::CollectivePoint>& points) {
  auto document = studies::command_document("collective", scenario::to_json(scenario));
  document["operation"] = collectives::to_string(bench.op);
  document["ranks"] = bench.ranks > 0 ? bench.ranks : cluster.gpu_count();
  document["nodes"] = cluster.nodes;
  document["gpu"] = scenario.gpu.name;
  document["fidelity"] = fidelity;
  // The links' datasheet peaks a bus bandwidth is held against: a GPU's port into the node's fabric bounds a
  // collective inside a node; across nodes a ring's every byte crosses each node's NICs once each way, so busbw is at
  // most the node's NIC bandwidth (all its rails together). Null where it does not apply.
  const double network = cluster.nic.bandwidth * cluster.nics_per_node();
  document["link_peaks_bytes_per_second"] = {
      {"fabric", cluster.intra.bandwidth}, {"network", cluster.nodes > 1 ? nlohmann::json(network) : nlohmann::json()}};
  auto& rows = document["points"] = nlohmann::json::array();
  double busbw_sum = 0;
  int measured = 0;
  for (const auto& p : points) {
    nlohmann::json row{{"size_bytes", p.bytes},
                       {"algorithm", collectives::to_string(p.algorithm)},
                       {"protocol", collectives::to_string(p.protocol)},
                       {"channels", p.channels},
                       {"ok", p.ok}};
    if (p.ok) {
      row["time_seconds"] = p.seconds;
      row["algbw_bytes_per_second"] = p.algbw;
      row["busbw_bytes_per_second"] = p.busbw;
      busbw_sum += p.busbw;
      ++measured;
    } else {
      row["error"] = p.error;
    }
    rows.push_back(std::move(row));
  }
  document["average_busbw_bytes_per_second"] = measured > 0 ? nlohmann::json(busbw_sum / measured) : nlohmann::json();
  return document;
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
  return studies::instance_scenario(*args.instance, args.nodes.value_or(1), overrides, "--instance");
}

// --sizes, or nccl-tests' -b/-e/-f (not both).
std::vector<double> sizes_of(const CollectiveArgs& args) {
  const bool nccl_style = !args.min_bytes.empty() || !args.max_bytes.empty() || !args.step_factor.empty();
  if (!nccl_style) {
    try {
      return studies::parse_sizes(args.sizes.empty() ? "8B..1GiB" : args.sizes);
    } catch (const std::invalid_argument& e) {
      throw scenario::ScenarioError("--sizes", "", e.what());
    }
  }
  if (!args.sizes.empty())
    throw scenario::ScenarioError("--sizes", "", "give --sizes or nccl-tests' -b/-e/-f, not both");
  if (args.min_bytes.empty())
    throw scenario::ScenarioError("-b", "", "-e and -f need -b, the smallest size, as in nccl-tests");
  return studies::nccl_tests_sizes(args.min_bytes, args.max_bytes, args.step_factor.empty() ? "2" : args.step_factor);
}

} // namespace

int collective_command(const CollectiveArgs& args) {
  const auto scenario = load_cluster(args);

  studies::CollectiveBench bench;
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
  bench.sizes = sizes_of(args);
  if (bench.op == collectives::Operation::all_to_all_v)
    throw scenario::ScenarioError("--op", "", "all-to-all-v needs a size matrix; the benchmark runs all-to-all");
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  // The nodes --ranks adds are nodes of the scenario's cluster: read again with that count, they meet its limits.
  if (bench.ranks > scenario.cluster.gpu_count()) {
    const auto nodes =
        (static_cast<std::int64_t>(bench.ranks) + scenario.cluster.gpus_per_node - 1) / scenario.cluster.gpus_per_node;
    try {
      (void)studies::with_nodes(scenario, static_cast<int>(nodes));
    } catch (const scenario::ScenarioError& e) {
      throw scenario::ScenarioError("--ranks", "",
                                    fmt::format("{} ranks need {} nodes of {} GPUs: {}: {}", bench.ranks, nodes,
                                                scenario.cluster.gpus_per_node, e.pointer(), e.detail()));
    }
  }

  const auto cluster = studies::bench_cluster(scenario, bench.ranks);
  const int ranks = bench.ranks > 0 ? bench.ranks : cluster.gpu_count();
  std::ostream& out = report_stream({args.csv_out, args.json_out, args.html_out});
  out << fmt::format("# dtsim collective: {}, {} ranks on {} nodes of {} x {} ({} fabric, {} NIC), {} "
                     "fidelity, {} network model\n#\n",
                     collectives::to_string(bench.op), ranks, cluster.nodes, cluster.gpus_per_node, scenario.gpu.name,
                     topologies::to_string(cluster.intra_kind), report::format_bandwidth(cluster.nic.bandwidth),
                     args.fidelity, scenario::to_string(scenario.network.model));
  std::vector<studies::CollectivePoint> points;
  {
    const ProgressLine progress("collective: sizes simulated");
    try {
      const int jobs = parallel_jobs(args.jobs);
      points = studies::bench_collective(
          scenario, bench, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
          memory_limit_of(args.max_memory, std::min<int>(jobs, static_cast<int>(bench.sizes.size()))));
    } catch (const std::invalid_argument& e) { // a forced protocol the cluster's collectives cannot run
      throw scenario::ScenarioError("--proto", "", e.what());
    }
  }
  out << table(points, bench.op);
  const bool all_ok = std::all_of(points.begin(), points.end(), [](const auto& p) { return p.ok; });
  return finish_outputs(out, {{args.csv_out, csv(points)}},
                        json_document(scenario, cluster, bench, args.fidelity, points), args.json_out, args.html_out,
                        all_ok ? kExitOk : kExitFailed);
}

} // namespace dtsim::cli
