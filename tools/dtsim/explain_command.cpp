// `dtsim explain`: what a scenario's cluster is and what the plan puts on each GPU, without simulating it
// (sim/studies/explain.hpp).
#include "sim/studies/explain.hpp"
#include "tools/dtsim/commands.hpp"

#include <iostream>

namespace dtsim::cli {

int explain_command(const ExplainArgs& args) {
  const auto scenario = load_with_overrides(args.scenario, args.sets);
  check_writable({args.json_out}, {args.scenario});
  const auto explanation = studies::explain(scenario, args.path, memory_limit_of(args.max_memory, 1));
  std::ostream& report = report_stream({args.json_out});
  report << explanation.text;
  return finish_outputs(report, {}, explanation.document, args.json_out, "", kExitOk);
}

} // namespace dtsim::cli
