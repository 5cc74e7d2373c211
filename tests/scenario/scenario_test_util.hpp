#pragma once
// Helpers shared by the scenario tests: a minimal valid document and a way to catch the error of a bad one.
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim::scenario::test {

using nlohmann::json;

inline const char* kBadFile = "scenarios/bad.json";

// The smallest valid scenario: every optional field left to its default.
inline json minimal() {
  return json::parse(R"({
    "version": 1,
    "model": {"preset": "mlp-small", "batch_per_gpu": 32},
    "cluster": {"nodes": 2, "gpu": "v100", "nic": {"bandwidth": "10Gbps"}}
  })");
}

// minimal() with an RFC 7386 merge patch applied (null removes a key).
inline json patched(const json& patch) {
  json doc = minimal();
  doc.merge_patch(patch);
  return doc;
}

inline Scenario parse(const json& doc, const std::vector<Override>& overrides = {}) {
  return parse_scenario(doc.dump(2), "scenarios/ok.json", overrides);
}

// The error a document raises; fails the test if it raises none.
inline ScenarioError error_of_text(const std::string& text, const std::vector<Override>& overrides = {}) {
  try {
    parse_scenario(text, kBadFile, overrides);
  } catch (const ScenarioError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ScenarioError for:\n" << text;
  return ScenarioError("", "", "");
}

inline ScenarioError error_of(const json& doc, const std::vector<Override>& overrides = {}) {
  return error_of_text(doc.dump(2), overrides);
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace dtsim::scenario::test

// Checks the pointer exactly and that the message holds `phrase`.
#define EXPECT_SCENARIO_ERROR(error, expected_pointer, phrase)                                                         \
  do {                                                                                                                 \
    const auto& e_ = (error);                                                                                          \
    EXPECT_EQ(e_.pointer(), expected_pointer) << e_.what();                                                            \
    EXPECT_TRUE(::dtsim::scenario::test::contains(e_.detail(), phrase))                                                \
        << "message: " << e_.what() << "\nexpected to contain: " << (phrase);                                          \
  } while (false)
