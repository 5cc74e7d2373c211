// Collective cases of `dtsim validate`: one collective over a cloud instance's nodes, benchmarked as `dtsim
// collective` runs it, against a published nccl-tests row (its bus bandwidth at one size).
#include "sim/collective_bench.hpp"
#include "sim/validate_detail.hpp"

namespace dtsim::validate::detail {

CollectiveRun parse_collective(const Reader& r, const json& object) {
  const std::string at = "/collective";
  r.only(object, at, {"instance", "nodes", "op", "algorithm", "protocol", "bytes", "set"});
  CollectiveRun run;
  run.instance = r.text(object, at, "instance");
  run.nodes = static_cast<int>(r.positive(object, at, "nodes"));
  if (run.nodes != r.positive(object, at, "nodes")) r.fail(at + "/nodes", "expected a whole number of nodes");
  const auto op = collectives::parse_operation(r.text(object, at, "op"));
  if (!op)
    r.fail(at + "/op", fmt::format("unknown operation (expected one of: {})", join(collectives::operation_names())));
  run.op = *op;
  if (object.contains("algorithm")) {
    const auto algorithm = collectives::parse_algorithm(r.text(object, at, "algorithm"));
    if (!algorithm)
      r.fail(at + "/algorithm",
             fmt::format("unknown algorithm (expected one of: {})", join(collectives::algorithm_names())));
    run.algorithm = *algorithm;
  }
  if (object.contains("protocol")) {
    const auto protocol = collectives::parse_protocol(r.text(object, at, "protocol"));
    if (!protocol)
      r.fail(at + "/protocol",
             fmt::format("unknown protocol (expected one of: {})", join(collectives::protocol_names())));
    run.protocol = *protocol;
  }
  run.bytes = r.positive(object, at, "bytes");
  if (object.contains("set")) {
    const auto& sets = object.at("set");
    if (!sets.is_array()) r.fail(at + "/set", "expected an array of \"path=value\" strings");
    for (std::size_t i = 0; i < sets.size(); ++i) {
      const auto pointer = fmt::format("{}/set/{}", at, i);
      if (!sets[i].is_string()) r.fail(pointer, "expected a \"path=value\" string");
      run.sets.push_back(sets[i].get<std::string>());
      try {
        run.overrides.push_back(scenario::parse_override(run.sets.back()));
      } catch (const scenario::ScenarioError& e) {
        r.fail(pointer, e.detail());
      }
    }
  }
  return run;
}

double bus_bandwidth(const CollectiveRun& run) {
  const auto scenario = instance_scenario(run.instance, run.nodes, run.overrides, "collective case");
  CollectiveBench bench;
  bench.op = run.op;
  bench.algorithm = run.algorithm;
  bench.protocol = run.protocol;
  bench.sizes = {run.bytes};
  const auto points = bench_collective(scenario, bench, 1, {});
  if (!points.front().ok) throw std::runtime_error(points.front().error);
  return points.front().busbw;
}

} // namespace dtsim::validate::detail
