#pragma once
// The shipped scenarios (scenarios/*.json), for the suites that run every one of them: the CLI's commands, the
// fidelities' agreement, the model invariants.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

namespace dtsim::testing {

// Their names (the files' without the extension), sorted: one test each, so that ctest spreads them over its jobs.
inline std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(DTSIM_SOURCE_DIR) / "scenarios"))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A scenario's name as a test's name: letters and digits, the rest underscores.
inline std::string test_name(std::string name) {
  std::replace_if(
      name.begin(), name.end(), [](unsigned char c) { return !std::isalnum(c); }, '_');
  return name;
}

} // namespace dtsim::testing
