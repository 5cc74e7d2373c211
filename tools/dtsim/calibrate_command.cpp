// `dtsim calibrate`: a measured GPU profile from dtsim-probe's measurement file (docs/measurement-format.md), or
// alpha-beta costs from nccl-tests output. The fitting lives in calibration/fit.hpp and calibration/nccl_tests.hpp;
// this file reads the command line, prints the tables and writes the profile.
#include "calibration/fit.hpp"
#include "calibration/measurements.hpp"
#include "calibration/nccl_tests.hpp"
#include "sim/report/format.hpp"
#include "sim/scenario/units.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace dtsim::cli {
namespace {

namespace fs = std::filesystem;
using namespace calibration;

// Bytes per second in decimal units, as GPU datasheets and nccl-tests write them: "450.0 GB/s".
std::string rate(double bytes_per_second) {
  if (bytes_per_second >= 1e12) return fmt::format("{:.2f} TB/s", bytes_per_second / 1e12);
  if (bytes_per_second >= 1e9) return fmt::format("{:.1f} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.1f} MB/s", bytes_per_second / 1e6);
}

std::string curve_table(const MeasurementFit& fit) {
  std::vector<std::vector<std::string>> rows{
      {"curve", "points", "held back", "sizes", "knots", "plateau", "held-back error", "efficiency of"},
      {"", "", "", "", "", "(of rate)", "(median / max)", ""}};
  for (const auto& c : fit.curves) {
    const auto& f = c.fit;
    rows.push_back({c.label, std::to_string(f.fitted + f.held_back), std::to_string(f.held_back),
                    fmt::format("{:.3g} .. {:.3g} {}", f.min_size, f.max_size, c.size_unit),
                    std::to_string(f.curve.knots.size()), report::format_percent(f.curve.plateau()),
                    f.median_error ? fmt::format("{} / {}", report::format_percent(*f.median_error),
                                                 report::format_percent(*f.max_error))
                                   : std::string("n/a (< 5 points)"),
                    c.rate_label});
  }
  return aligned_table(rows, 1, "  ");
}

std::string figures_table(const MeasurementFit& fit, const GpuProfile& base) {
  std::vector<std::vector<std::string>> rows{{"fitted figure", "value", "how"}};
  if (fit.launch_overhead)
    rows.push_back({"launch overhead", report::format_seconds(*fit.launch_overhead),
                    fmt::format("median of {} launch measurement(s)", fit.launch_points)});
  else
    rows.push_back({"launch overhead", report::format_seconds(base.launch_overhead),
                    fmt::format("not measured: the base profile's {}", base.name)});
  if (const auto* memory = fit.find(CurveGroup::memory, std::nullopt))
    rows.push_back({"memory efficiency", report::format_percent(std::min(1.0, memory->fit.curve.plateau())),
                    fmt::format("plateau of the memory curve, of the datasheet {}{}", rate(base.memory_bandwidth),
                                memory->fit.curve.plateau() > 1 ? " (capped at 100%)" : "")});
  if (fit.pcie) rows.push_back({"PCIe bandwidth", rate(fit.pcie->bytes_per_second), fit.pcie->how});
  if (fit.nvlink) rows.push_back({"NVLink bandwidth", rate(fit.nvlink->bytes_per_second), fit.nvlink->how});
  for (const auto& c : fit.collectives)
    rows.push_back({fmt::format("{} x {} ranks", c.op, c.ranks),
                    fmt::format("alpha {}, beta {:.4g} s/B ({})", report::format_seconds(c.fit.alpha), c.fit.beta,
                                rate(c.fit.bandwidth())),
                    fmt::format("least squares of time = alpha + bytes x beta on relative error, {} sizes, error "
                                "median {} / max {}",
                                c.fit.points, report::format_percent(c.fit.median_error),
                                report::format_percent(c.fit.max_error))});
  return aligned_table(rows, 3, "  ");
}

// --base: a shipped profile's name, or a profile file; by default the shipped profile of the device.
GpuProfile base_profile(const std::string& base, const MeasurementFile& m) {
  const auto names = fmt::format("{}", fmt::join(profile_names(), ", "));
  if (base.empty()) {
    const auto preset = default_base_profile(m.device.name, m.device.memory_bytes);
    if (!preset)
      throw CalibrationError(m.origin, "/device/name",
                             fmt::format("no shipped profile matches the device \"{}\": give --base (one of: {}, or a "
                                         "profile file) for its peaks and capacities",
                                         m.device.name, names));
    return *find_profile(*preset);
  }
  if (auto g = resolve_profile(base, {"."})) return *g;
  throw scenario::ScenarioError(
      "--base", "", fmt::format("\"{}\" is neither a shipped profile ({}) nor a profile file", base, names));
}

int calibrate_measurements(const CalibrateArgs& args) {
  if (args.output.empty())
    throw scenario::ScenarioError("-o", "", "give the profile to write: -o calibration/profiles/NAME.json");
  if (!args.link_bandwidth.empty())
    throw scenario::ScenarioError("--link-bandwidth", "", "only with --nccl-tests FILE");
  const std::string name = args.name.empty() ? fs::path(args.output).stem().string() : args.name;
  if (name.empty()) throw scenario::ScenarioError("--name", "", "the profile needs a non-empty name");
  check_writable({args.output}, {args.measurements, args.base});

  const MeasurementFile m = load_measurements(args.measurements);
  const GpuProfile base = base_profile(args.base, m);
  const MeasurementFit fit = fit_measurements(m, base);
  std::vector<std::string> notes;
  for (const auto& f : m.failed_checks)
    notes.push_back(fmt::format("the probe's check of {} failed ({}): not measured, so not fitted", f.what, f.why));
  for (const auto& s : m.skipped)
    notes.push_back(fmt::format("the probe skipped {}: {}", s.what, s.why));
  notes.insert(notes.end(), fit.notes.begin(), fit.notes.end());
  const GpuProfile profile = measured_profile(base, m, fit, name, args.measurements, &notes);
  const std::string text = profile_to_json(profile);
  (void)parse_profile(text, args.output); // what is written must read back

  std::cout << fmt::format("{}: {} ({} SMs), dtsim-probe {}, {}, {} measurements\n", args.measurements, m.device.name,
                           m.device.sms, m.probe_version, m.date, m.size());
  std::cout << fmt::format("Base profile {} ({}): peaks, capacities and datasheet bandwidth\n", base.name,
                           base.display_name);
  std::cout << fmt::format("Launch overhead taken out of every kernel time: {} ({})\n\n",
                           report::format_seconds(fit.launch_used), fit.launch_overhead ? "measured" : "base profile");
  if (!fit.curves.empty()) {
    std::cout << "Efficiency curves: monotone in size, piecewise linear in log10(size); every 5th point by size held "
                 "back,\nerror = |predicted - measured time| / measured time on those\n";
    std::cout << curve_table(fit) << "\n";
  }
  std::cout << figures_table(fit, base);
  if (!notes.empty()) {
    std::cout << "\nNotes:\n";
    for (const auto& n : notes)
      std::cout << "  " << n << "\n";
  }
  write_files({{args.output, text}});
  std::cout << fmt::format("\nWrote {} (profile \"{}\", provenance \"measured\")\n", args.output, name);
  if (fs::absolute(args.output).parent_path().filename() == "profiles" &&
      fs::absolute(args.output).parent_path().parent_path().filename() == "calibration")
    std::cout << fmt::format("Profiles in calibration/profiles/ are compiled into dtsim: rebuild (cmake --build build) "
                             "and name it in a scenario as \"gpu\": \"{}\".\n",
                             name);
  return kExitOk;
}

int calibrate_nccl_tests(const CalibrateArgs& args) {
  if (!args.output.empty() || !args.base.empty() || !args.name.empty())
    throw scenario::ScenarioError("--nccl-tests", "",
                                  "fits alpha, beta and the protocol efficiency and prints them: -o, --base and --name "
                                  "go with a measurement file");
  std::optional<double> link;
  if (!args.link_bandwidth.empty()) {
    link = scenario::parse_quantity(args.link_bandwidth, scenario::Dimension::bandwidth);
    if (!link || *link <= 0)
      throw scenario::ScenarioError("--link-bandwidth", "",
                                    fmt::format("expected {}, got \"{}\"",
                                                scenario::describe(scenario::Dimension::bandwidth),
                                                args.link_bandwidth));
  }
  const auto runs = load_nccl_tests(args.nccl_tests);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    const auto fit = fit_nccl_tests(run, link, args.nccl_tests);
    double smallest = run.rows.front().bytes, largest = 0;
    bool in_place = false;
    for (const auto& r : run.rows) {
      smallest = std::min(smallest, r.bytes);
      largest = std::max(largest, r.bytes);
      in_place = in_place || r.in_place;
    }
    if (i > 0) std::cout << "\n";
    std::cout << fmt::format(
        "{}: {} ranks{}, {} sizes from {} to {}, {}\n", run.test.empty() ? std::string("nccl-tests") : run.test,
        run.ranks > 0 ? std::to_string(run.ranks) : std::string("?"), run.device.empty() ? "" : " (" + run.device + ")",
        run.rows.size(), report::format_bytes(smallest), report::format_bytes(largest),
        in_place ? "out-of-place and in-place" : "out-of-place");
    std::vector<std::vector<std::string>> rows{
        {"alpha (latency)", report::format_seconds(fit.cost.alpha)},
        {"beta", fmt::format("{:.4g} s/byte (algorithm bandwidth {})", fit.cost.beta, rate(fit.cost.bandwidth()))},
        {"plateau bus bandwidth", fmt::format("{} (at {}; bus/algorithm bandwidth {:.3f})", rate(fit.plateau_busbw),
                                              report::format_bytes(fit.plateau_bytes), fit.busbw_factor)},
        {"protocol efficiency",
         fit.protocol_efficiency
             ? fmt::format("{} of the {} link", report::format_percent(*fit.protocol_efficiency), rate(*link))
             : std::string("give --link-bandwidth (e.g. 450GB/s) to compare with the link")},
        {"fit error", fmt::format("median {} / max {} of the measured times ({} times)",
                                  report::format_percent(fit.cost.median_error),
                                  report::format_percent(fit.cost.max_error), fit.cost.points)}};
    std::cout << aligned_table(rows, 2, "  ");
  }
  return kExitOk;
}

} // namespace

int calibrate_command(const CalibrateArgs& args) {
  if (args.nccl_tests.empty() == args.measurements.empty())
    throw scenario::ScenarioError("calibrate", "",
                                  "give a measurement file (dtsim calibrate MEASUREMENTS.json -o PROFILE.json) or "
                                  "--nccl-tests FILE, one of the two");
  return args.nccl_tests.empty() ? calibrate_measurements(args) : calibrate_nccl_tests(args);
}

} // namespace dtsim::cli
