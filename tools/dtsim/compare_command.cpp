// `dtsim compare`: the same scenario under several synchronization strategies, side by side.
#include "sim/simulate.hpp"
#include "sim/studies/compare.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/provenance.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <stdexcept>

namespace dtsim::cli {
namespace {

// Below a picosecond a sum of op times is rounding noise (as report::format_seconds reads it).
std::string milliseconds(double seconds) {
  return report::significant(std::fabs(seconds) < 1e-12 ? 0.0 : seconds * 1e3);
}

// Cents, and three significant digits below a dollar: a small job's epoch costs fractions of a cent.
std::string dollars(double usd) {
  return usd >= 1 ? fmt::format("{:.2f}", usd) : report::significant(usd, 3);
}

// Staleness is measured where gradients are applied, on parameter servers (and EASGD's centre).
bool has_staleness(const report::RunResult& r) {
  return r.strategy.servers > 0;
}

std::string table(const std::vector<studies::ComparePoint>& points, const scenario::Scenario& base) {
  const bool priced = base.cluster.price_per_node_hour > 0;
  const bool epochs = base.dataset.samples > 0;
  // Two header lines, the figure and its unit, as `dtsim collective` prints them.
  std::vector<std::vector<std::string>> rows{
      {"strategy", "workers", "iteration", "throughput", "exposed comm", "staleness", "sent per worker", "cost"},
      {"", "", "(ms)", fmt::format("({}/s)", base.model.workload.sample_unit), "(ms/iteration)",
       "(mean/max iterations)", "(MiB/iteration)",
       epochs ? "(USD/epoch)" : fmt::format("(USD/{} iterations)", base.run.iterations)}};
  for (const auto& p : points) {
    if (!p.ok) continue;
    const auto& r = p.result;
    const auto& measure = r.strategy.time_per;
    const auto& stale = r.strategy.staleness;
    rows.push_back({p.strategy, std::to_string(r.strategy.workers),
                    milliseconds(r.iteration.mean) + (measure == "iteration" ? "" : " per " + measure),
                    fmt::format("{:.1f}", r.throughput), milliseconds(r.breakdown.exposed_communication),
                    has_staleness(r) ? fmt::format("{:.2f}/{:.0f}", stale.mean, stale.max) : "-",
                    report::significant(r.bytes_sent_per_gpu / (1024.0 * 1024.0)),
                    priced ? dollars(epochs ? r.cost_per_epoch : r.cost_of_run) : "-"});
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& p : points)
    widths[0] = std::max(widths[0], p.strategy.size());
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  const auto line = [&](const std::vector<std::string>& row) {
    std::string out = fmt::format("{:<{}}", row[0], widths[0]);
    for (std::size_t c = 1; c < row.size(); ++c)
      out += fmt::format("  {:>{}}", row[c], widths[c]);
    return out + "\n";
  };
  // Rows in the order the strategies were given, failed ones with their reason.
  std::string out = line(rows[0]) + line(rows[1]);
  std::size_t next = 2;
  for (const auto& p : points)
    out += p.ok ? line(rows[next++]) : fmt::format("{:<{}}  failed: {}\n", p.strategy, widths[0], p.error);
  return out;
}

// CSV fields in base units, named with them; empty where a figure does not apply.
std::string csv(const std::vector<studies::ComparePoint>& points) {
  std::string out = "strategy,strategy_name,workers,servers,asynchronous,iteration_seconds,iteration_per,"
                    "throughput_samples_per_second,exposed_communication_seconds_per_iteration,"
                    "staleness_mean_iterations,staleness_max_iterations,bytes_sent_per_worker_per_iteration,"
                    "cost_usd_per_hour,cost_usd_per_epoch,cost_usd_run,updates_per_second,staleness_p50_iterations,"
                    "staleness_p99_iterations,mean_update_lag_updates,dropped_gradients,"
                    "barrier_wait_seconds_per_iteration,bytes_received_per_worker_per_iteration,"
                    "server_bytes_per_second,server_nic_utilization,gossip_rounds_per_worker_per_iteration,"
                    "spectral_gap,compression_ratio,error\n";
  constexpr int kFields = 28;
  for (const auto& p : points) {
    if (!p.ok) {
      out += p.strategy + std::string(kFields - 1, ',') + csv_field(p.error) + "\n";
      continue;
    }
    const auto& r = p.result;
    const auto& m = r.strategy;
    const bool stale = has_staleness(r);
    const auto if_stale = [&](double v) { return stale ? fmt::format("{:.9g}", v) : std::string(); };
    const bool priced = r.price_per_hour > 0;
    out += fmt::format("{},{},{},{},{},{:.9g},{},{:.9g},{:.9g},{},{},{:.9g},{},{},{},", p.strategy, m.name, m.workers,
                       m.servers, m.asynchronous, r.iteration.mean, r.strategy.time_per, r.throughput,
                       r.breakdown.exposed_communication, if_stale(m.staleness.mean), if_stale(m.staleness.max),
                       r.bytes_sent_per_gpu, csv_number(r.price_per_hour, priced), csv_number(r.cost_per_epoch, priced),
                       csv_number(r.cost_of_run, priced));
    out += fmt::format("{:.9g},{},{},{:.9g},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{:.9g},\n", m.updates_per_second,
                       if_stale(m.staleness.p50), if_stale(m.staleness.p99), m.mean_update_lag, m.dropped,
                       m.barrier_wait, m.bytes_received_per_worker, m.server_bytes_per_second, m.server_nic_utilization,
                       m.gossip_rounds_per_worker,
                       m.spectral_gap < 0 ? std::string() : fmt::format("{:.9g}", m.spectral_gap), m.compression_ratio);
  }
  return out;
}

} // namespace

int compare_command(const CompareArgs& args) {
  const auto base = load_with_overrides(args.scenario, args.sets);
  std::vector<std::string> names;
  try {
    names = studies::parse_strategy_list(args.strategies);
  } catch (const std::invalid_argument& e) {
    throw scenario::ScenarioError("--strategies", "", e.what());
  }
  check_writable({args.csv_out, args.json_out, args.html_out}, {args.scenario});
  const auto resume = open_resume(args.resume, args.sharding);
  const int jobs = parallel_jobs(args.jobs);
  const auto limit = memory_limit_of(args.max_memory, std::min<int>(jobs, static_cast<int>(names.size())));

  std::vector<studies::ComparePoint> points;
  {
    const ProgressLine progress("compare: strategies simulated");
    points = studies::compare(
        base, names, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); }, resume.get(),
        limit);
  }
  if (const auto status = shard_finished(resume.get())) return *status;

  std::ostream& out = report_stream({args.csv_out, args.json_out, args.html_out});
  out << fmt::format("{}: {} node(s) x {} GPU(s), batch {} per GPU\n\n", base.name, base.cluster.nodes,
                     base.cluster.gpus_per_node, base.model.batch_per_gpu);
  out << table(points, base);
  if (std::any_of(points.begin(), points.end(), [](const auto& p) { return p.ok && p.result.strategy.asynchronous; }))
    out << "\nAsynchronous throughput is not progress: a gradient computed on parameters s iterations old "
           "(staleness s) moves the model less, so those strategies need more iterations to converge "
           "(docs/guide.md, \"Staleness\").\n";
  // The JSON file is the array of results; the HTML report's document names its command around it.
  const auto results = studies::compare_document(points);
  auto document = studies::command_document("compare", scenario::to_json(base));
  document["results"] = results;
  // As in a sweep: a strategy that failed makes the status 1 (2 when its input cannot run), after the others were
  // printed and written.
  return finish_outputs(out, {{args.csv_out, csv(points)}, {args.json_out, results.dump(2) + "\n"}}, document, "",
                        args.html_out, points_status(points));
}

} // namespace dtsim::cli
