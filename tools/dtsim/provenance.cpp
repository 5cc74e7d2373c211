#include "tools/dtsim/provenance.hpp"

#include "git_commit.hpp" // generated at build time (tools/cmake/git_commit.cmake)

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace dtsim::cli {
namespace {

// FNV-1a, 64 bits (Fowler, Noll and Vo; the offset basis and prime of its published parameters).
std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

} // namespace

nlohmann::json provenance(const nlohmann::json& resolved_scenario) {
  return {{"dtsim_version", DTSIM_VERSION},
          {"git_commit", DTSIM_GIT_COMMIT},
          {"scenario_hash", resolved_scenario.is_null()
                                ? nlohmann::json()
                                : nlohmann::json(fmt::format("fnv1a64:{:016x}", fnv1a64(resolved_scenario.dump())))}};
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

} // namespace dtsim::cli
