// `--set path=value` overrides on arbitrary text, one assignment a line, applied to the quick-start scenario: each
// line either parses or is refused with a ScenarioError, and the overridden scenario either reads or is refused with
// a ScenarioError; one that reads must round-trip through its canonical form as any scenario must.
#include "fuzz/harness.hpp"
#include "fuzz/round_trip.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The document the overrides apply to, read once: a real scenario, so that an override reaches the checks a valid
// document goes through rather than stopping at the first missing section.
const std::string& base_scenario() {
  static const std::string text = [] {
    std::ifstream in(DTSIM_FUZZ_BASE_SCENARIO, std::ios::binary);
    if (!in) dtsim::fuzz::finding("cannot read the base scenario " DTSIM_FUZZ_BASE_SCENARIO);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }();
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dtsim::scenario::ScenarioError;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<dtsim::scenario::Override> overrides;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!dtsim::fuzz::reads_or_refuses<ScenarioError>(
            "parse_override", [&] { overrides.push_back(dtsim::scenario::parse_override(line)); }))
      return 0;

  dtsim::scenario::Scenario scenario;
  if (dtsim::fuzz::reads_or_refuses<ScenarioError>("parse_scenario with overrides", [&] {
        scenario = dtsim::scenario::parse_scenario(base_scenario(), "quickstart.json", overrides);
      }))
    dtsim::fuzz::check_round_trip(scenario);
  return 0;
}
