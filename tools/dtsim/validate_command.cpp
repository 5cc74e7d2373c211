// `dtsim validate`: every case of calibration/validation/ (published and measured figures), predicted against
// measured, with the median and maximum absolute error.
#include "calibration/fit.hpp"
#include "calibration/measurements.hpp"
#include "sim/studies/provenance.hpp"
#include "sim/studies/validate.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>

namespace dtsim::cli {
namespace {

namespace fs = std::filesystem;

std::string percent(double value) {
  return fmt::format("{:+.1f}%", value);
}

// The repository root: --root, else the first folder holding calibration/validation/ at or above the current
// directory, else at or above the executable's folder (build/dtsim finds the tree it was built in), else the cases
// installed beside it (PREFIX/bin/dtsim: PREFIX/share/dtsim).
fs::path repository_root(const std::string& given) {
  if (!given.empty()) {
    if (!fs::is_directory(studies::validate::cases_directory(given)))
      throw scenario::ScenarioError("--root", "", fmt::format("{} has no calibration/validation/ folder", given));
    return fs::absolute(given);
  }
  std::error_code ec;
  const auto executable = fs::read_symlink("/proc/self/exe", ec);
  try {
    return studies::validate::find_root({fs::current_path(), ec ? fs::path() : executable.parent_path(),
                                         ec ? fs::path() : executable.parent_path().parent_path() / "share" / "dtsim"});
  } catch (const std::runtime_error& e) {
    throw scenario::ScenarioError("--root", "", e.what()); // bad input: status 2
  }
}

// --profile: a shipped profile's name or a profile file (what `dtsim calibrate -o` wrote); by default the shipped
// profile of the measured device. Returns the profile and how to name it.
std::pair<calibration::GpuProfile, std::string> held_back_profile(const std::string& given,
                                                                  const calibration::MeasurementFile& m) {
  const auto names = fmt::format("{}", fmt::join(calibration::profile_names(), ", "));
  if (given.empty()) {
    const auto preset = calibration::default_base_profile(m.device.name, m.device.memory_bytes);
    if (!preset)
      throw scenario::ScenarioError("--profile", "",
                                    fmt::format("no shipped profile matches the measured device \"{}\": give "
                                                "--profile (one of: {}, or a profile file)",
                                                m.device.name, names));
    return {*calibration::find_profile(*preset), *preset};
  }
  if (auto g = calibration::resolve_profile(given, {"."})) return {*g, given};
  throw scenario::ScenarioError(
      "--profile", "", fmt::format("\"{}\" is neither a shipped profile ({}) nor a profile file", given, names));
}

// The cases `which` (indices into cases), one line each; a failed case says why.
std::string table(const std::vector<studies::validate::Case>& cases,
                  const std::vector<studies::validate::Outcome>& outcomes, const std::vector<std::size_t>& which) {
  std::vector<std::vector<std::string>> rows{{"case", "metric", "predicted", "measured", "unit", "error"}};
  for (const auto i : which) {
    const auto& c = cases[i];
    const auto& o = outcomes[i];
    if (o.ok)
      rows.push_back({c.name + (c.anchor ? " [anchor]" : "") + (c.disputed.empty() ? "" : " [disputed]"),
                      std::string(to_string(c.metric)), report::significant(o.predicted),
                      report::significant(c.measured), c.unit, percent(o.error_percent)});
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto i : which)
    widths[0] = std::max(widths[0], cases[i].name.size());
  for (const auto& row : rows)
    for (std::size_t col = 0; col < row.size(); ++col)
      widths[col] = std::max(widths[col], row[col].size());
  const auto line = [&](const std::vector<std::string>& row) {
    return fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:<{}}  {:>{}}\n", row[0], widths[0], row[1], widths[1], row[2],
                       widths[2], row[3], widths[3], row[4], widths[4], row[5], widths[5]);
  };
  std::string out = line(rows[0]);
  std::size_t next = 1;
  for (const auto i : which)
    out += outcomes[i].ok ? line(rows[next++])
                          : fmt::format("{:<{}}  failed: {}\n", cases[i].name, widths[0], outcomes[i].error);
  return out;
}

const char* level_name(const studies::validate::Case& c) {
  return c.level() == studies::validate::Level::op           ? "op"
         : c.level() == studies::validate::Level::collective ? "collective"
                                                             : "end-to-end";
}

// One row per case, the figures in the case's unit, its source and note; empty figures where it failed.
std::string csv(const std::vector<studies::validate::Case>& cases,
                const std::vector<studies::validate::Outcome>& outcomes) {
  std::string out =
      "file,level,anchor,disputed,name,metric,predicted,measured,unit,error_percent,source,note,failure\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& o = outcomes[i];
    out += fmt::format("{},{},{},{},{},{},{},{:.9g},{},{},{},{},{}\n", csv_field(fs::path(c.file).filename().string()),
                       level_name(c), c.anchor ? "true" : "false", csv_field(c.disputed), csv_field(c.name),
                       to_string(c.metric), o.ok ? fmt::format("{:.9g}", o.predicted) : "", c.measured,
                       csv_field(c.unit), o.ok ? fmt::format("{:.4f}", o.error_percent) : "", csv_field(c.source),
                       csv_field(c.note), o.ok ? "" : csv_field(o.error));
  }
  return out;
}

// The CSV's rows in JSON (null figures where a case failed), and the |error| statistics of each level over the cases
// that are neither anchors nor disputed.
nlohmann::json json_document(const std::vector<studies::validate::Case>& cases,
                             const std::vector<studies::validate::Outcome>& outcomes,
                             const std::vector<std::string>& left_out) {
  using nlohmann::json;
  auto document = studies::command_document("validate", json());
  document["left_out"] = left_out;
  auto& rows = document["cases"] = json::array();
  std::map<std::string, std::vector<double>> errors; // by level
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& o = outcomes[i];
    rows.push_back({{"file", fs::path(c.file).filename().string()},
                    {"level", level_name(c)},
                    {"anchor", c.anchor},
                    {"disputed", c.disputed.empty() ? json() : json(c.disputed)},
                    {"name", c.name},
                    {"metric", to_string(c.metric)},
                    {"predicted", o.ok ? json(o.predicted) : json()},
                    {"measured", c.measured},
                    {"unit", c.unit},
                    {"error_percent", o.ok ? json(o.error_percent) : json()},
                    {"source", c.source},
                    {"note", c.note},
                    {"failure", o.ok ? json() : json(o.error)}});
    if (o.ok && c.counted()) errors[level_name(c)].push_back(o.error_percent);
  }
  auto& summary = document["summary"] = json::object();
  for (const auto& [level, values] : errors) {
    const auto stats = studies::validate::error_stats(values);
    summary[level] = {{"cases", stats.count},
                      {"median_abs_error_percent", stats.median_abs},
                      {"max_abs_error_percent", stats.max_abs}};
  }
  return document;
}

} // namespace

int validate_command(const ValidateArgs& args) {
  const auto root = repository_root(args.root);
  const auto directory = studies::validate::cases_directory(root);
  std::vector<std::string> left_out; // timings of the training-shape files not taken as cases, and why
  auto all = studies::validate::load_cases(directory, &left_out);
  std::size_t held_back = 0;
  std::string held_back_origin; // the measurement file, as the held-back cases name it
  if (!args.measurements.empty()) {
    const auto m = calibration::load_measurements(args.measurements);
    const auto [profile, label] = held_back_profile(args.profile, m);
    auto extra = studies::validate::held_back_cases(m, profile, label, args.every_point);
    held_back = extra.size();
    held_back_origin = m.origin;
    if (extra.empty())
      std::cerr << fmt::format("note: {} holds back no GEMM or memory point (fewer than {} of a kind)\n",
                               args.measurements, calibration::CurveFitOptions{}.hold_back_every);
    all.insert(all.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  } else if (!args.profile.empty() || args.every_point) {
    throw scenario::ScenarioError(args.every_point ? "--every-point" : "--profile", "",
                                  "goes with --measurements FILE (the measured points it predicts)");
  }
  const auto cases = studies::validate::filter_cases(all, args.filter);
  if (cases.empty())
    throw scenario::ScenarioError(directory.string(), "",
                                  args.filter.empty() ? "no validation cases (*.json) here"
                                                      : fmt::format("no case matches --filter \"{}\"", args.filter));

  check_writable({args.json_out});
  std::vector<studies::validate::Outcome> outcomes;
  {
    const ProgressLine progress("validate: scenario cases simulated");
    const int jobs = parallel_jobs(args.jobs);
    outcomes = studies::validate::run_cases(
        cases, root, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
        memory_limit_of(args.max_memory, jobs));
  }
  const bool every_case_ran = std::all_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.ok; });
  const int status = every_case_ran ? kExitOk : kExitFailed;
  if (args.csv) {
    std::cout << csv(cases, outcomes);
    return finish_outputs(std::cerr, {}, json_document(cases, outcomes, left_out), args.json_out, "", status);
  }
  std::ostream& out = report_stream({args.json_out});

  std::error_code ec;
  // Relative to the current directory when inside it (the usual run from the source tree), else in full.
  auto shown = fs::proximate(directory, ec);
  if (ec || shown.empty() || *shown.begin() == "..") shown = directory;
  out << fmt::format("dtsim validate: {} case(s) from {}/; error = (predicted - measured) / measured\n", cases.size(),
                     shown.string());

  const auto summary = [&](const std::string& label, const std::vector<std::size_t>& which) {
    std::vector<double> errors;
    std::vector<std::size_t> ran;
    for (const auto i : which)
      if (outcomes[i].ok && cases[i].counted()) { // anchors and disputed cases are shown, never counted
        errors.push_back(outcomes[i].error_percent);
        ran.push_back(i);
      }
    const auto stats = studies::validate::error_stats(errors);
    if (stats.count > 0)
      out << fmt::format("|error| over {} {}: median {:.1f}%, max {:.1f}% ({})\n", stats.count, label, stats.median_abs,
                         stats.max_abs, cases[ran[stats.max_index]].name);
  };
  std::vector<std::size_t> op, anchors, collectives, end_to_end, held;
  // Cases of a measurement file of many kernels (training shapes) get a line per file unless --filter picks them.
  std::map<std::string, std::vector<std::size_t>> grouped;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].level() == studies::validate::Level::collective)
      collectives.push_back(i);
    else if (!cases[i].op_level())
      end_to_end.push_back(i);
    else if (cases[i].anchor)
      anchors.push_back(i);
    else
      (cases[i].file == held_back_origin && held_back > 0 ? held : op).push_back(i);
  }
  if (!op.empty() || !anchors.empty()) {
    std::vector<std::size_t> shown_ops;
    for (const auto& which : {anchors, op})
      for (const auto i : which) {
        if (args.filter.empty() && !cases[i].group.empty())
          grouped[cases[i].group].push_back(i);
        else
          shown_ops.push_back(i);
      }
    out << "\nOp level: single kernels priced by the cost model against published measurements\n"
           "([anchor]: a profile took its constant from this measurement, so it checks arithmetic and is left "
           "out of the statistics)\n\n"
        << table(cases, outcomes, shown_ops) << "\n";
    if (!grouped.empty()) {
      out << "Kernels at training shapes, each in a burst and held at the power limit (one line per measurement; "
             "--filter with its name lists every kernel)\n";
      for (const auto& [name, which] : grouped) {
        std::vector<std::size_t> counted;
        for (const auto i : which)
          if (!cases[i].anchor) counted.push_back(i);
        summary(fmt::format("case(s) of \"{}\" ({} anchors)", name, which.size() - counted.size()), counted);
      }
      if (!left_out.empty())
        out << fmt::format("{} timing(s) of these measurements left out as unreliable or without a cost model "
                           "(--json lists them under left_out)\n",
                           left_out.size());
    }
    summary("op-level case(s) (anchors excluded)", op);
  }
  if (!held.empty()) {
    out << (args.every_point ? "\nEvery GEMM and memory point of " : "\nHeld back from the fit of ") << held_back_origin
        << "\n\n"
        << table(cases, outcomes, held) << "\n";
    summary(args.every_point ? "measurement(s)" : "held-back measurement(s)", held);
  }
  if (!collectives.empty()) {
    out << "\nCollectives: one collective over a cloud instance's nodes (dtsim collective) against published "
           "nccl-tests rows (bus bandwidth; the time of one call where that rounds to 0)\n\n"
        << table(cases, outcomes, collectives) << "\n";
    summary("collective case(s)", collectives);
  }
  if (!end_to_end.empty()) {
    std::vector<std::size_t> disputed;
    for (const auto i : end_to_end)
      if (!cases[i].disputed.empty()) disputed.push_back(i);
    out << "\nEnd to end: whole training runs simulated against published figures (checks only: no constant "
           "is fitted to them)\n"
        << (disputed.empty() ? ""
                             : "([disputed]: another source contradicts the published figure itself; shown, and "
                               "left out of the statistics)\n")
        << "\n"
        << table(cases, outcomes, end_to_end) << "\n";
    for (const auto i : disputed)
      out << fmt::format("{} is disputed: {}\n", cases[i].name, cases[i].disputed);
    summary(disputed.empty() ? "end-to-end case(s)" : "end-to-end case(s) (disputed excluded)", end_to_end);
  }
  const auto failed = std::count_if(outcomes.begin(), outcomes.end(), [](const auto& o) { return !o.ok; });
  if (!every_case_ran) out << fmt::format("{} case(s) failed to run\n", failed);
  return finish_outputs(out, {}, json_document(cases, outcomes, left_out), args.json_out, "", status);
}

} // namespace dtsim::cli
