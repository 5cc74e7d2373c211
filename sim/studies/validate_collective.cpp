// Collective cases of `dtsim validate`: one collective over a cloud instance's nodes, benchmarked as `dtsim
// collective` runs it, against a published nccl-tests row (its bus bandwidth, or its time where that rounds to 0).
#include "sim/studies/collective_bench.hpp"
#include "sim/studies/validate_detail.hpp"

namespace dtsim::studies::validate::detail {

CollectiveRun parse_collective(const Reader& r, const json& object) {
  const std::string at = "/collective";
  r.only(object, at, {"instance", "nodes", "op", "algorithm", "protocol", "bytes", "set"});
  CollectiveRun run;
  run.instance = r.text(object, at, "instance");
  run.nodes = static_cast<int>(r.positive(object, at, "nodes"));
  if (run.nodes != r.positive(object, at, "nodes")) r.fail(at + "/nodes", "expected a whole number of nodes");
  run.op = r.name(object, at, "op", collectives::parse_operation, collectives::operation_names(), "operation");
  if (object.contains("algorithm"))
    run.algorithm =
        r.name(object, at, "algorithm", collectives::parse_algorithm, collectives::algorithm_names(), "algorithm");
  if (object.contains("protocol"))
    run.protocol =
        r.name(object, at, "protocol", collectives::parse_protocol, collectives::protocol_names(), "protocol");
  run.bytes = r.positive(object, at, "bytes");
  r.sets(object, at, run.sets, run.overrides);
  return run;
}

CollectivePoint run_collective(const CollectiveRun& run) {
  const auto scenario = instance_scenario(run.instance, run.nodes, run.overrides, "collective case");
  CollectiveBench bench;
  bench.op = run.op;
  bench.algorithm = run.algorithm;
  bench.protocol = run.protocol;
  bench.sizes = {run.bytes};
  const auto points = bench_collective(scenario, bench, 1, {});
  if (!points.front().ok) throw std::runtime_error(points.front().error);
  return points.front();
}

} // namespace dtsim::studies::validate::detail
