#pragma once
// What made a JSON result, and from what: dtsim's version, the git commit it was built from, and a hash of the
// resolved scenario, so that a result found later says which build and which exact input produced it.
#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::studies {

// {"dtsim_version", "git_commit", "scenario_hash"}: the hash is FNV-1a (64 bits) of the resolved scenario's compact
// JSON, so two files or overrides that resolve to the same scenario hash the same, and any change of it shows; null
// for a command that reads no scenario (list, validate).
nlohmann::json provenance(const nlohmann::json& resolved_scenario);

// `result` with "provenance" added, from its own "scenario" field (a run's result carries its resolved scenario).
nlohmann::json with_provenance(nlohmann::json result);

// The head of a command's JSON document: {"command", "provenance", "scenario"} (no "scenario" when it is null); the
// command adds its own fields.
nlohmann::json command_document(const std::string& command, const nlohmann::json& resolved_scenario);

} // namespace dtsim::studies
