#pragma once
// `dtsim validate` without the command line: the cases it finds (the shipped ones, and the held-back points of a
// measurement file), and what it prints and writes once they ran. Shared by the CLI and the Python module.
#include "sim/studies/validate.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace dtsim::studies::validate {

// The command's options. Errors name the flag (--root, --profile, --every-point), which the Python module renames
// to its argument.
struct Request {
  std::string filter;       // only the cases whose name or file name contains it (case-insensitive)
  std::string root;         // the repository root; empty: found from the current directory or the executable
  std::string measurements; // dtsim-probe's measurement file: its held-back points become op cases too
  std::string profile;      // the profile those are predicted on (a shipped name or a profile file); empty: the
                            // shipped profile of the measured device
  bool every_point = false; // every GEMM and memory point of the measurements, not only the held-back ones
};

struct Selection {
  std::filesystem::path root;
  std::filesystem::path directory;   // root/calibration/validation
  std::vector<Case> cases;           // those the filter keeps, never empty
  std::vector<std::string> left_out; // timings of the training-shape files not taken as cases, and why
  std::size_t held_back = 0;         // cases from the measurement file
  std::string held_back_origin;      // the measurement file, as the held-back cases name it
  std::vector<std::string> notes;    // what the CLI says on stderr ("... holds back no GEMM or memory point")
};

// The cases a request selects. Throws scenario::ScenarioError when there is no case folder, no case matches, or the
// measurement options do not go together.
Selection select_cases(const Request& request);

// What `dtsim validate` prints: the cases by level, each level's |error| median and maximum over the counted cases
// (neither anchors nor disputed), and the cases that failed to run.
std::string report_text(const Selection& selection, const std::vector<Outcome>& outcomes, const Request& request);

// One row per case: its file, level, figures in the case's unit, source and note; empty figures where it failed.
std::string report_csv(const std::vector<Case>& cases, const std::vector<Outcome>& outcomes);

// `dtsim validate --json`: the CSV's rows (null figures where a case failed), the training-shape timings left out, and
// the |error| statistics of each level over the counted cases.
nlohmann::json report_document(const Selection& selection, const std::vector<Outcome>& outcomes);

} // namespace dtsim::studies::validate
