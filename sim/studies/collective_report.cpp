#include "sim/studies/collective_report.hpp"

#include "sim/report/format.hpp"
#include "sim/studies/provenance.hpp"
#include "sim/studies/sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace dtsim::studies {
namespace {

// nccl-tests reports float data; the reduction operator only means something for reducing operations.
bool reduces(collectives::Operation op) {
  using collectives::Operation;
  return op == Operation::all_reduce || op == Operation::reduce_scatter || op == Operation::reduce;
}

} // namespace

CollectiveBench collective_bench(const scenario::Scenario& scenario, const CollectiveOptions& options) {
  CollectiveBench bench;
  const auto op = collectives::parse_operation(options.op);
  if (!op)
    throw scenario::ScenarioError("--op", "",
                                  fmt::format("unknown operation \"{}\"; expected one of {}", options.op,
                                              fmt::join(collectives::operation_names(), ", ")));
  bench.op = *op;
  const auto algorithm = collectives::parse_algorithm(options.algorithm);
  if (!algorithm)
    throw scenario::ScenarioError("--algo", "",
                                  fmt::format("unknown algorithm \"{}\"; expected one of {}", options.algorithm,
                                              fmt::join(collectives::algorithm_names(), ", ")));
  bench.algorithm = *algorithm;
  const auto supported = collectives::supported_algorithms(bench.op);
  if (bench.algorithm != collectives::Algorithm::automatic &&
      std::find(supported.begin(), supported.end(), bench.algorithm) == supported.end()) {
    std::vector<std::string> names;
    for (auto a : supported)
      names.emplace_back(collectives::to_string(a));
    throw scenario::ScenarioError("--algo", "",
                                  fmt::format("{} has no '{}' algorithm; expected auto or one of {}", options.op,
                                              options.algorithm, fmt::join(names, ", ")));
  }
  const auto protocol = collectives::parse_protocol(options.protocol);
  if (!protocol)
    throw scenario::ScenarioError("--proto", "",
                                  fmt::format("unknown protocol \"{}\"; expected one of {}", options.protocol,
                                              fmt::join(collectives::protocol_names(), ", ")));
  bench.protocol = *protocol;
  if (options.fidelity != "step" && options.fidelity != "aggregate")
    throw scenario::ScenarioError("--fidelity", "",
                                  fmt::format("unknown mode \"{}\"; expected step or aggregate", options.fidelity));
  bench.aggregate = options.fidelity == "aggregate";
  bench.ranks = options.ranks;
  bench.sizes = options.sizes;
  if (bench.op == collectives::Operation::all_to_all_v)
    throw scenario::ScenarioError("--op", "", "all-to-all-v needs a size matrix; the benchmark runs all-to-all");
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
  return bench;
}

std::vector<double> collective_sizes(const std::string& text) {
  try {
    return parse_sizes(text.empty() ? "8B..1GiB" : text);
  } catch (const std::invalid_argument& e) {
    throw scenario::ScenarioError("--sizes", "", e.what());
  }
}

std::vector<CollectivePoint> run_collective_bench(const scenario::Scenario& scenario, const CollectiveBench& bench,
                                                  int jobs,
                                                  const std::function<void(std::size_t, std::size_t)>& progress,
                                                  const engine::ChildLimits& limit) {
  try {
    return bench_collective(scenario, bench, jobs, progress, limit);
  } catch (const std::invalid_argument& e) { // a forced protocol the cluster's collectives cannot run
    throw scenario::ScenarioError("--proto", "", e.what());
  }
}

std::string collective_header(const scenario::Scenario& scenario, const CollectiveBench& bench,
                              const std::string& fidelity) {
  const auto cluster = bench_cluster(scenario, bench.ranks);
  const int ranks = bench.ranks > 0 ? bench.ranks : cluster.gpu_count();
  return fmt::format("# dtsim collective: {}, {} ranks on {} nodes of {} x {} ({} fabric, {} NIC), {} "
                     "fidelity, {} network model\n#\n",
                     collectives::to_string(bench.op), ranks, cluster.nodes, cluster.gpus_per_node, scenario.gpu.name,
                     topologies::to_string(cluster.intra_kind), report::format_bandwidth(cluster.nic.bandwidth),
                     fidelity, scenario::to_string(scenario.network.model));
}

// nccl-tests' table: out-of-place and in-place columns (dtsim models no local copy, so both are the same simulation),
// #wrong "N/A" (no data is checked: nccl-tests prints the same with -c 0), then its average bus bandwidth footer.
std::string collective_table(const std::vector<CollectivePoint>& points, collectives::Operation op) {

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

std::string collective_csv(const std::vector<CollectivePoint>& points) {
  std::string out =
      "size_bytes,algorithm,protocol,channels,time_seconds,algbw_bytes_per_second,busbw_bytes_per_second,error\n";
  for (const auto& p : points) {
    const auto head = fmt::format("{:.0f},{},{},{}", p.bytes, collectives::to_string(p.algorithm),
                                  collectives::to_string(p.protocol), p.channels);
    out += p.ok ? fmt::format("{},{:.9g},{:.9g},{:.9g},\n", head, p.seconds, p.algbw, p.busbw)
                : fmt::format("{},,,,{}\n", head, report::csv_field(p.error));
  }
  return out;
}

nlohmann::json collective_document(const scenario::Scenario& scenario, const CollectiveBench& bench,
                                   const std::string& fidelity, const std::vector<CollectivePoint>& points) {
  const auto cluster = bench_cluster(scenario, bench.ranks);
  auto document = command_document("collective", scenario::to_json(scenario));
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

} // namespace dtsim::studies
