#pragma once
// `dtsim list` without the command line: what a scenario can name (instances, GPUs, models, algorithms, topologies,
// strategies, failure presets, frameworks), as the table the CLI prints and as the JSON items it writes. Shared by the
// CLI and the Python module.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim::studies {

// The kinds `dtsim list` takes, in the order its help names them.
std::vector<std::string> catalog_kinds();

// What `dtsim list WHAT` prints. Throws scenario::ScenarioError (origin "list") for a kind it does not know.
std::string catalog_text(const std::string& what);

// `dtsim list WHAT --json`: the command's head, "what" and "items", one object per entry.
nlohmann::json catalog_document(const std::string& what);

} // namespace dtsim::studies
