// `dtsim export --chakra DIR SCENARIO`: the scenario's execution graph as MLCommons Chakra execution traces, one
// file per rank, for ASTRA-sim and the other tools that replay Chakra; dtsim reads them back with model.trace.
#include "sim/chakra/chakra.hpp"
#include "sim/simulate.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>

#include <iostream>

namespace dtsim::cli {

int export_command(const ExportArgs& args) {
  auto scenario = load_with_overrides(args.scenario, args.sets);
  // Every rank's program, each collective as its flows: coarse fidelity leaves ranks without programs and aggregate
  // marks collectives for dtsim's own shortcut, neither of which another tool would read.
  scenario.run.fidelity = scenario::Fidelity::step;
  plan::Plan plan;
  try {
    plan = checked_plan(scenario, memory_limit_of("", 1));
  } catch (const plan::PlanError& e) {
    throw scenario::ScenarioError(args.scenario, "", e.what());
  }
  const auto name = args.name.empty() ? scenario.name : args.name;
  std::vector<std::filesystem::path> files;
  try {
    files = chakra::write_trace(plan.graph, args.chakra_dir, name);
  } catch (const chakra::TraceError& e) {
    throw scenario::ScenarioError(args.scenario, "", e.what());
  }
  std::size_t ops = 0;
  for (int r = 0; r < plan.graph.rank_count(); ++r)
    ops += plan.graph.program_of(r).ops.size();
  std::cout << fmt::format("Wrote {} Chakra execution trace file(s), {} to {} ({} nodes in all, one iteration).\n"
                           "dtsim replays them on any cluster of {} GPUs with \"model\": {{\"trace\": {{\"format\": "
                           "\"chakra\", \"path\": \"{}\"}}, ...}}.\n",
                           files.size(), files.front().string(), files.back().filename().string(), ops, files.size(),
                           (std::filesystem::path(args.chakra_dir) / name).string());
  return kExitOk;
}

} // namespace dtsim::cli
