#include "sim/studies/validate_report.hpp"

#include "calibration/fit.hpp"
#include "calibration/measurements.hpp"
#include "sim/report/format.hpp"
#include "sim/studies/provenance.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

namespace dtsim::studies::validate {
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
    if (!fs::is_directory(cases_directory(given)))
      throw scenario::ScenarioError("--root", "", fmt::format("{} has no calibration/validation/ folder", given));
    return fs::absolute(given);
  }
  std::error_code ec;
  const auto executable = fs::read_symlink("/proc/self/exe", ec);
  try {
    return find_root({fs::current_path(), ec ? fs::path() : executable.parent_path(),
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
std::string table(const std::vector<Case>& cases, const std::vector<Outcome>& outcomes,
                  const std::vector<std::size_t>& which) {
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

const char* level_name(const Case& c) {
  return c.level() == Level::op ? "op" : c.level() == Level::collective ? "collective" : "end-to-end";
}

} // namespace

std::string report_csv(const std::vector<Case>& cases, const std::vector<Outcome>& outcomes) {
  std::string out =
      "file,level,anchor,disputed,name,metric,predicted,measured,unit,error_percent,source,note,failure\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& o = outcomes[i];
    out += fmt::format("{},{},{},{},{},{},{},{:.9g},{},{},{},{},{}\n",
                       report::csv_field(fs::path(c.file).filename().string()), level_name(c),
                       c.anchor ? "true" : "false", report::csv_field(c.disputed), report::csv_field(c.name),
                       to_string(c.metric), o.ok ? fmt::format("{:.9g}", o.predicted) : "", c.measured,
                       report::csv_field(c.unit), o.ok ? fmt::format("{:.4f}", o.error_percent) : "",
                       report::csv_field(c.source), report::csv_field(c.note), o.ok ? "" : report::csv_field(o.error));
  }
  return out;
}

nlohmann::json report_document(const Selection& selection, const std::vector<Outcome>& outcomes) {
  using nlohmann::json;
  const auto& cases = selection.cases;
  auto document = command_document("validate", json());
  document["left_out"] = selection.left_out;
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
    const auto stats = error_stats(values);
    summary[level] = {{"cases", stats.count},
                      {"median_abs_error_percent", stats.median_abs},
                      {"max_abs_error_percent", stats.max_abs}};
  }
  return document;
}

Selection select_cases(const Request& request) {
  Selection selection;
  selection.root = repository_root(request.root);
  selection.directory = cases_directory(selection.root);
  auto all = load_cases(selection.directory, &selection.left_out);
  if (!request.measurements.empty()) {
    const auto m = calibration::load_measurements(request.measurements);
    const auto [profile, label] = held_back_profile(request.profile, m);
    auto extra = held_back_cases(m, profile, label, request.every_point);
    selection.held_back = extra.size();
    selection.held_back_origin = m.origin;
    if (extra.empty())
      selection.notes.push_back(fmt::format("note: {} holds back no GEMM or memory point (fewer than {} of a kind)",
                                            request.measurements, calibration::CurveFitOptions{}.hold_back_every));
    all.insert(all.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  } else if (!request.profile.empty() || request.every_point) {
    throw scenario::ScenarioError(request.every_point ? "--every-point" : "--profile", "",
                                  "goes with --measurements FILE (the measured points it predicts)");
  }
  selection.cases = filter_cases(all, request.filter);
  if (selection.cases.empty())
    throw scenario::ScenarioError(selection.directory.string(), "",
                                  request.filter.empty()
                                      ? "no validation cases (*.json) here"
                                      : fmt::format("no case matches --filter \"{}\"", request.filter));
  return selection;
}

std::string report_text(const Selection& selection, const std::vector<Outcome>& outcomes, const Request& request) {
  const auto& cases = selection.cases;
  const auto& directory = selection.directory;
  const auto held_back = selection.held_back;
  const auto& held_back_origin = selection.held_back_origin;
  const bool every_case_ran = std::all_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.ok; });
  std::ostringstream out;
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
    const auto stats = error_stats(errors);
    if (stats.count > 0)
      out << fmt::format("|error| over {} {}: median {:.1f}%, max {:.1f}% ({})\n", stats.count, label, stats.median_abs,
                         stats.max_abs, cases[ran[stats.max_index]].name);
  };
  std::vector<std::size_t> op, anchors, collectives, end_to_end, held;
  // Cases of a measurement file of many kernels (training shapes) get a line per file unless --filter picks them.
  std::map<std::string, std::vector<std::size_t>> grouped;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].level() == Level::collective)
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
        if (request.filter.empty() && !cases[i].group.empty())
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
      if (!selection.left_out.empty())
        out << fmt::format("{} timing(s) of these measurements left out as unreliable or without a cost model "
                           "(--json lists them under left_out)\n",
                           selection.left_out.size());
    }
    summary("op-level case(s) (anchors excluded)", op);
  }
  if (!held.empty()) {
    out << (request.every_point ? "\nEvery GEMM and memory point of " : "\nHeld back from the fit of ")
        << held_back_origin << "\n\n"
        << table(cases, outcomes, held) << "\n";
    summary(request.every_point ? "measurement(s)" : "held-back measurement(s)", held);
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
  return out.str();
}

} // namespace dtsim::studies::validate
