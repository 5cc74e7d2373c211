#include "sim/studies/provenance.hpp"

#include "io/hash.hpp"

#include "git_commit.hpp" // generated at build time (tools/cmake/git_commit.cmake)

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace dtsim::studies {

nlohmann::json provenance(const nlohmann::json& resolved_scenario) {
  return {
      {"dtsim_version", DTSIM_VERSION},
      {"git_commit", DTSIM_GIT_COMMIT},
      {"scenario_hash", resolved_scenario.is_null()
                            ? nlohmann::json()
                            : nlohmann::json(fmt::format("fnv1a64:{:016x}", io::fnv1a64(resolved_scenario.dump())))}};
}

nlohmann::json with_provenance(nlohmann::json result) {
  if (result.is_object() && result.contains("scenario")) result["provenance"] = provenance(result["scenario"]);
  return result;
}

nlohmann::json command_document(const std::string& command, const nlohmann::json& resolved_scenario) {
  nlohmann::json document{{"command", command}, {"provenance", provenance(resolved_scenario)}};
  if (!resolved_scenario.is_null()) document["scenario"] = resolved_scenario;
  return document;
}

} // namespace dtsim::studies
