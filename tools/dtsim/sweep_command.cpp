// `dtsim sweep`: the same scenario at several node counts, side by side.
#include "io/units.hpp"
#include "sim/report/format.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/sweep.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <iostream>
#include <thread>
#include <unistd.h>

namespace dtsim::cli {
namespace {

std::string table(const std::vector<studies::SweepPoint>& points, const std::string& unit, bool epochs, bool priced) {
  std::string out = fmt::format("{:>6} {:>6} {:>14} {:>22} {:>8} {:>11}", "nodes", "GPUs", "iteration", "throughput",
                                "speedup", "efficiency");
  out += epochs ? fmt::format(" {:>14}", "time/epoch") : "";
  out += priced ? fmt::format(" {:>11}", epochs ? "$/epoch" : "$/hour") : "";
  out += "\n";
  // One unit a column (io/units.hpp), so that a column never mixes minutes and seconds.
  std::vector<double> iterations, epoch_times;
  for (const auto& p : points)
    if (p.ok) {
      iterations.push_back(p.result.iteration.mean);
      epoch_times.push_back(p.result.epoch_seconds);
    }
  const auto& iteration_unit = io::unit_for_all(io::Quantity::time, iterations);
  const auto& epoch_unit = io::unit_for_all(io::Quantity::time, epoch_times);
  for (const auto& p : points) {
    if (!p.ok) {
      out += fmt::format("{:>6} {:>6}  failed: {}\n", p.nodes, "-", p.error);
      continue;
    }
    const auto& r = p.result;
    out += fmt::format("{:>6} {:>6} {:>14} {:>22} {:>7.2f}x {:>11}", r.nodes, r.gpus,
                       io::format_in(io::Quantity::time, iteration_unit, r.iteration.mean),
                       report::format_rate(r.throughput, unit), p.speedup, report::format_percent(p.efficiency));
    out += epochs ? fmt::format(" {:>14}", io::format_in(io::Quantity::time, epoch_unit, r.epoch_seconds)) : "";
    out += priced ? fmt::format(" {:>11}", fmt::format("${:.2f}", epochs ? r.cost_per_epoch : r.price_per_hour)) : "";
    out += "\n";
  }
  return out;
}

std::string csv(const std::vector<studies::SweepPoint>& points) {
  std::string out = "nodes,gpus,iteration_seconds,throughput_samples_per_second,speedup,efficiency,epoch_seconds,"
                    "exposed_communication_seconds,cost_usd_per_hour,cost_usd_per_epoch,cost_usd_run,error\n";
  for (const auto& p : points) {
    if (!p.ok) {
      out += fmt::format("{},,,,,,,,,,,{}\n", p.nodes, csv_field(p.error));
      continue;
    }
    const auto& r = p.result;
    const bool priced = r.price_per_hour > 0;
    out += fmt::format("{},{},{:.9g},{:.9g},{:.6g},{:.6g},{:.9g},{:.9g},{},{},{},\n", r.nodes, r.gpus, r.iteration.mean,
                       r.throughput, p.speedup, p.efficiency, r.epoch_seconds, r.breakdown.exposed_communication,
                       csv_number(r.price_per_hour, priced), csv_number(r.cost_per_epoch, priced),
                       csv_number(r.cost_of_run, priced));
  }
  return out;
}

} // namespace

int sweep_command(const SweepArgs& args) {
  const auto base = load_with_overrides(args.scenario, args.sets);
  std::vector<int> nodes;
  try {
    nodes = studies::parse_node_counts(args.nodes);
  } catch (const std::invalid_argument& e) {
    throw scenario::ScenarioError("--nodes", "", e.what());
  }
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  const auto resume = open_resume(args.resume, args.sharding);
  const int jobs = parallel_jobs(args.jobs);
  const auto limit = memory_limit_of(args.max_memory, std::min<int>(jobs, static_cast<int>(nodes.size())));

  std::vector<studies::SweepPoint> points;
  {
    const ProgressLine progress("sweep: points simulated");
    points = studies::sweep(
        base, nodes, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); }, resume.get(),
        limit);
  }
  if (const auto status = shard_finished(resume.get())) return *status;

  std::ostream& out = report_stream({args.csv_out, args.json_out, args.html_out});
  out << fmt::format("{}: {} per GPU, {} GPU(s) per node\n\n", base.name,
                     fmt::format("batch {}", base.model.batch_per_gpu), base.cluster.gpus_per_node);
  out << table(points, base.model.workload.sample_unit, base.dataset.samples > 0, base.cluster.price_per_node_hour > 0);
  return finish_outputs(out, {{args.csv_out, csv(points)}}, studies::sweep_document(base, points), args.json_out,
                        args.html_out, points_status(points));
}

} // namespace dtsim::cli
