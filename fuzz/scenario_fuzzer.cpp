// The scenario reader on arbitrary text: it either refuses the text with a ScenarioError, or gives a scenario whose
// canonical JSON (to_json: what results echo, and what users feed back to `dtsim run`) reads back to the same
// canonical JSON. A canonical form that is refused, or that reads back different, is a finding like a crash.
#include "fuzz/harness.hpp"
#include "fuzz/round_trip.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::scenario::Scenario scenario;
  if (dtsim::fuzz::reads_or_refuses<dtsim::scenario::ScenarioError>(
          "parse_scenario", [&] { scenario = dtsim::scenario::parse_scenario(text, "fuzz.json"); }))
    dtsim::fuzz::check_round_trip(scenario);
  return 0;
}
