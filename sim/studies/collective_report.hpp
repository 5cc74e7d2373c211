#pragma once
// `dtsim collective` without the command line: its options read and checked, and what it prints and writes (the
// nccl-tests table, the CSV and the JSON document), shared by the CLI and the Python module.
#include "sim/studies/collective_bench.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim::studies {

// The benchmark's options as the command line gives them. Errors name the flag (--op, --algo, --proto, --fidelity,
// --ranks), which the Python module renames to its argument.
struct CollectiveOptions {
  std::string op = "all-reduce";
  std::string algorithm = "auto";
  std::string protocol = "auto";
  std::string fidelity = "step"; // step or aggregate
  int ranks = 0;                 // 0: every GPU of the scenario's cluster
  std::vector<double> sizes;     // bytes
};

// The benchmark those options ask for on `scenario`'s cluster. Throws scenario::ScenarioError for an unknown
// operation, algorithm, protocol or fidelity, an algorithm the operation does not have, all-to-all-v, and a rank
// count whose nodes the scenario's cluster cannot have.
CollectiveBench collective_bench(const scenario::Scenario& scenario, const CollectiveOptions& options);

// --sizes: "8B..8GiB" (doubling) or "1MiB,64MiB,1GiB"; empty: 8 B to 1 GiB, the command's default. Throws
// scenario::ScenarioError naming --sizes.
std::vector<double> collective_sizes(const std::string& text);

// bench_collective, with a forced protocol the cluster's collectives cannot run refused as bad input naming --proto.
std::vector<CollectivePoint> run_collective_bench(const scenario::Scenario& scenario, const CollectiveBench& bench,
                                                  int jobs,
                                                  const std::function<void(std::size_t, std::size_t)>& progress,
                                                  const engine::ChildLimits& limit);

// "# dtsim collective: all-reduce, 64 ranks on 8 nodes of ..." and the blank comment line under it.
std::string collective_header(const scenario::Scenario& scenario, const CollectiveBench& bench,
                              const std::string& fidelity);

// nccl-tests' table of the points, with its average bus bandwidth footer.
std::string collective_table(const std::vector<CollectivePoint>& points, collectives::Operation op);

// One row per size: size_bytes, algorithm, protocol, channels, time_seconds, algbw and busbw in bytes per second, or
// why the size failed.
std::string collective_csv(const std::vector<CollectivePoint>& points);

// `dtsim collective --json`: what the CSV has (null where a size failed), the run's description, the links' datasheet
// peaks and nccl-tests' average bus bandwidth.
nlohmann::json collective_document(const scenario::Scenario& scenario, const CollectiveBench& bench,
                                   const std::string& fidelity, const std::vector<CollectivePoint>& points);

} // namespace dtsim::studies
