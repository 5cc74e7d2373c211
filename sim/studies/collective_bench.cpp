#include "sim/studies/collective_bench.hpp"

#include "sim/collectives/nccl.hpp"

#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/graph/collective_request.hpp"
#include "sim/scenario/limits.hpp"
#include "sim/scenario/units.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/series.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace dtsim::studies {
namespace {

double parse_size(const std::string& text, const std::string& whole) {
  auto bytes = scenario::parse_quantity(text, scenario::Dimension::bytes);
  if (!bytes || *bytes < 0)
    throw std::invalid_argument(fmt::format("bad size \"{}\" in \"{}\": expected {}", text, whole,
                                            scenario::describe(scenario::Dimension::bytes)));
  // A buffer holds whole bytes, at least one (nccl-tests' smallest is one element), at most the format's 1 PiB.
  if (*bytes < 1 || *bytes > scenario::limits::kMaxBytes || std::floor(*bytes) != *bytes)
    throw std::invalid_argument(fmt::format("bad size \"{}\" in \"{}\": expected a whole number of bytes from 1 B "
                                            "to 1 PiB",
                                            text, whole));
  return *bytes;
}

graph::ExecutionGraph one_collective(const scenario::Scenario& s, const CollectiveBench& bench, int ranks, double bytes,
                                     collectives::Algorithm algorithm, collectives::Protocol protocol) {
  graph::Collective c;
  c.op = bench.op;
  c.algorithm = algorithm;
  c.protocol = protocol;
  c.bytes = bytes;
  c.aggregate = bench.aggregate;
  c.reduce_seconds_per_byte = s.gpu.reduce_seconds_per_byte();
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{std::string(collectives::to_string(bench.op)), graph::Stream::comm, c, {}}}});
  g.rank_program.assign(ranks, 0);
  g.groups.emplace_back();
  for (int r = 0; r < ranks; ++r)
    g.groups[0].push_back(r);
  return g;
}

} // namespace

scenario::Scenario instance_scenario(const std::string& instance, int nodes,
                                     const std::vector<scenario::Override>& overrides, const std::string& origin) {
  const nlohmann::json document = {
      {"version", scenario::kFormatVersion},
      {"name", fmt::format("{} x {}", instance, nodes)},
      {"model", {{"preset", "mlp-small"}, {"batch_per_gpu", 1}}},
      {"cluster", {{"instance", instance}, {"nodes", nodes}}},
  };
  return scenario::parse_scenario(document.dump(), origin, overrides);
}

topologies::ClusterSpec bench_cluster(const scenario::Scenario& s, int ranks) {
  auto cluster = s.cluster;
  if (ranks > 0) cluster.nodes = (ranks + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  return cluster;
}

std::vector<CollectivePoint> bench_collective(const scenario::Scenario& s, const CollectiveBench& bench, int jobs,
                                              const std::function<void(std::size_t, std::size_t)>& progress,
                                              const engine::ChildLimits& limit) {
  const auto cluster = bench_cluster(s, bench.ranks);
  const int ranks = bench.ranks > 0 ? bench.ranks : cluster.gpu_count();
  auto options = replay_options(s, limit); // the scenario's network model...
  options.iterations = 1;                  // ...but one collective, not the scenario's training iterations

  std::vector<CollectivePoint> points;
  std::vector<engine::ChildJob> work;
  std::vector<int> members(ranks);
  for (int r = 0; r < ranks; ++r)
    members[r] = r;
  for (double bytes : bench.sizes) {
    graph::Collective c;
    c.op = bench.op;
    c.algorithm = bench.algorithm;
    c.protocol = bench.protocol;
    c.bytes = bytes;
    CollectivePoint point;
    point.bytes = bytes;
    const auto request = graph::resolved_request(c, members, cluster);
    point.algorithm = request.algorithm;
    point.protocol = request.protocol;
    point.channels = collectives::wire_model(request).channels;
    points.push_back(point);
    work.push_back([&s, &bench, &cluster, options, ranks, bytes, algorithm = point.algorithm,
                    protocol = point.protocol]() -> std::string {
      const auto g = one_collective(s, bench, ranks, bytes, algorithm, protocol);
      return fmt::format("{:.17g}", engine::replay_in_this_process(cluster, g, options).simulated_seconds);
    });
  }
  // Every size replays the same graph but for its bytes: one estimate, in the parent, before anything runs.
  if (!bench.sizes.empty())
    engine::check_footprint(
        engine::estimate_footprint(
            cluster,
            one_collective(s, bench, ranks, bench.sizes.front(), points.front().algorithm, points.front().protocol),
            options),
        options);
  const auto outcomes = engine::run_in_children(
      work, jobs, [&](std::size_t done, std::size_t total, std::size_t) { progress ? progress(done, total) : void(); },
      {}, limit);
  const double factor = collectives::bus_bandwidth_factor(bench.op, ranks);
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& p = points[i];
    p.ok = outcomes[i].ok;
    if (!p.ok) {
      p.error = outcomes[i].output;
      continue;
    }
    p.seconds = std::stod(outcomes[i].output);
    p.algbw = p.seconds > 0 ? p.bytes / p.seconds : 0;
    p.busbw = p.algbw * factor;
  }
  return points;
}

std::vector<double> parse_sizes(const std::string& text) {
  return parse_series(text, [&text](const std::string& item) { return parse_size(item, text); });
}

namespace {

// nccl-tests' parsesize (src/common.cu): digits with an optional K, M or G, powers of 1024. Anything else is read
// in dtsim's units (1MiB, 64KB). Errors name `option`.
double nccl_tests_size(const std::string& text, const std::string& option) {
  static const std::string suffixes = "KMGkmg";
  std::string digits = text;
  double multiplier = 1;
  if (const auto suffix = text.empty() ? std::string::npos : suffixes.find(text.back()); suffix != std::string::npos) {
    multiplier = std::pow(1024.0, 1 + static_cast<int>(suffix % 3));
    digits.pop_back();
  }
  if (!digits.empty() && digits.size() <= 18 &&
      std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const double bytes = std::stod(digits) * multiplier;
    if (bytes < 1 || bytes > scenario::limits::kMaxBytes)
      throw scenario::ScenarioError(
          option, "", fmt::format("bad size \"{}\": expected a whole number of bytes from 1 B to 1 PiB", text));
    return bytes;
  }
  try {
    return parse_size(text, text);
  } catch (const std::invalid_argument& e) {
    throw scenario::ScenarioError(option, "",
                                  fmt::format("{} (or as nccl-tests writes them: 8, 128K, 1M, 8G)", e.what()));
  }
}

} // namespace

std::vector<double> nccl_tests_sizes(const std::string& min, const std::string& max, const std::string& factor) {
  const double from = nccl_tests_size(min, "-b");
  const double to = max.empty() ? from : nccl_tests_size(max, "-e");
  if (to < from)
    throw scenario::ScenarioError("-e", "", fmt::format("{} is below -b {}: expected MAX >= MIN", max, min));
  std::size_t end = 0;
  int step = 0;
  try {
    step = std::stoi(factor, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end != factor.size() || factor.empty() || step < 2)
    throw scenario::ScenarioError("-f", "",
                                  fmt::format("bad factor \"{}\": expected a whole number of at least 2", factor));
  std::vector<double> sizes;
  for (double size = from; size <= to; size *= step)
    sizes.push_back(size);
  return sizes;
}

} // namespace dtsim::studies
