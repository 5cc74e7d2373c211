// `dtsim train`: the whole run, from the first step to the last, on hardware that fails and capacity that is taken
// back: time and cost to train as a distribution over seeded trials.
#include "sim/studies/train.hpp"
#include "sim/studies/train_report.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace dtsim::cli {

int train_command(const TrainArgs& args) {
  const auto scenario = load_with_overrides(args.scenario, args.sets);
  studies::run_steps(scenario); // a run without a length is refused before anything runs
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  const int jobs = parallel_jobs(args.jobs);
  const auto limit = memory_limit_of(args.max_memory, std::min(jobs, args.trials));
  const std::uint64_t seed = args.seed.value_or(scenario.run.seed);
  const auto iteration = studies::measured_iteration_time(args.iteration_time);

  studies::TrainResult result;
  {
    const ProgressLine progress("train: trials run");
    result = studies::train(
        scenario, args.trials, seed, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
        limit, iteration);
  }
  std::ostream& out = report_stream({args.csv_out, args.json_out, args.html_out});
  out << studies::format_train(result);
  return finish_outputs(out, {{args.csv_out, studies::train_csv(result)}}, studies::train_document(result),
                        args.json_out, args.html_out, kExitOk);
}

} // namespace dtsim::cli
