#pragma once
// The scenario round trip both scenario harnesses check: an accepted scenario's canonical JSON reads back, and reads
// back to the same canonical JSON. The two are compared as text: a NaN never equals itself as a JSON value, and an
// integer that turns into a float (8 against 8.0) equals it, where users see the text.
#include "fuzz/harness.hpp"
#include "sim/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <exception>
#include <string>

namespace dtsim::fuzz {

inline void check_round_trip(const scenario::Scenario& accepted) {
  std::string canonical;
  must_succeed("to_json", [&] { canonical = scenario::to_json(accepted).dump(); });
  scenario::Scenario again;
  try {
    again = scenario::parse_scenario(canonical, "canonical.json");
  } catch (const std::exception& e) {
    finding("the canonical form of an accepted scenario is refused: " + std::string(e.what()) +
            "\ncanonical form: " + canonical);
  }
  std::string second;
  must_succeed("to_json of the canonical form read back", [&] { second = scenario::to_json(again).dump(); });
  if (second != canonical)
    finding("the canonical form does not read back to itself\nfirst:  " + canonical + "\nsecond: " + second);
}

} // namespace dtsim::fuzz
