// `dtsim validate`: every case of calibration/validation/ (published and measured figures), predicted against
// measured, with the median and maximum absolute error (sim/studies/validate_report.hpp).
#include "sim/studies/validate_report.hpp"
#include "tools/dtsim/commands.hpp"

#include <algorithm>
#include <iostream>

namespace dtsim::cli {

int validate_command(const ValidateArgs& args) {
  const studies::validate::Request request{.filter = args.filter,
                                           .root = args.root,
                                           .measurements = args.measurements,
                                           .profile = args.profile,
                                           .every_point = args.every_point};
  const auto selection = studies::validate::select_cases(request);
  for (const auto& note : selection.notes)
    std::cerr << note << "\n";
  check_writable({args.json_out});
  std::vector<studies::validate::Outcome> outcomes;
  {
    const ProgressLine progress("validate: scenario cases simulated");
    const int jobs = parallel_jobs(args.jobs);
    outcomes = studies::validate::run_cases(
        selection.cases, selection.root, jobs,
        [&](std::size_t done, std::size_t total) { progress.update(done, total); },
        memory_limit_of(args.max_memory, jobs));
  }
  const bool every_case_ran = std::all_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.ok; });
  const int status = every_case_ran ? kExitOk : kExitFailed;
  const auto document = studies::validate::report_document(selection, outcomes);
  if (args.csv) {
    std::cout << studies::validate::report_csv(selection.cases, outcomes);
    return finish_outputs(std::cerr, {}, document, args.json_out, "", status);
  }
  std::ostream& out = report_stream({args.json_out});
  out << studies::validate::report_text(selection, outcomes, request);
  return finish_outputs(out, {}, document, args.json_out, "", status);
}

} // namespace dtsim::cli
