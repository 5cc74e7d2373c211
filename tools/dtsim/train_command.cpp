// `dtsim train`: the whole run, from the first step to the last, on hardware that fails and capacity that is taken
// back: time and cost to train as a distribution over seeded trials.
#include "sim/scenario/units.hpp"
#include "sim/train.hpp"
#include "tools/dtsim/commands.hpp"
#include "tools/dtsim/provenance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace dtsim::cli {

int train_command(const TrainArgs& args) {
  const auto scenario = load_with_overrides(args.scenario, args.sets);
  run_steps(scenario); // a run without a length is refused before anything runs
  check_writable({args.csv_out, args.json_out}, {args.scenario});
  const int jobs = parallel_jobs(args.jobs);
  const auto limit = memory_limit_of(args.max_memory, std::min(jobs, args.trials));
  const std::uint64_t seed = args.seed.value_or(scenario.run.seed);
  std::optional<double> iteration;
  if (!args.iteration_time.empty()) {
    iteration = scenario::parse_quantity(args.iteration_time, scenario::Dimension::duration);
    if (!iteration || *iteration < 1e-3 || *iteration > 86400)
      throw scenario::ScenarioError(
          "--iteration-time", "",
          fmt::format("expected a duration from 1 ms to a day, such as \"6.1s\", got \"{}\"", args.iteration_time));
  }

  TrainResult result;
  {
    const ProgressLine progress("train: trials run");
    result = train(
        scenario, args.trials, seed, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
        limit, iteration);
  }
  const bool json_to_stdout = args.json_out == "-" || args.csv_out == "-";
  std::ostream& report_stream = json_to_stdout ? std::cerr : std::cout;
  report_stream << format_train(result);
  std::vector<OutputFile> files;
  if (!args.csv_out.empty()) files.push_back({args.csv_out, train_csv(result)});
  if (!args.json_out.empty()) {
    auto doc = to_json(result);
    doc["provenance"] = provenance(result.scenario);
    files.push_back({args.json_out, doc.dump(2) + "\n"});
  }
  write_files(files);
  report_stream << wrote(files);
  return kExitOk;
}

} // namespace dtsim::cli
