// Every JSON result says what made it and from what: dtsim's version, the git commit it was built from and a hash of
// the resolved scenario (FNV-1a, 64 bits, of its compact JSON: io::fnv1a64, checked against published values in
// tests/io).
#include "cli_util.hpp"
#include "io/hash.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;
const fs::path kQuickstart = fs::path(DTSIM_SOURCE_DIR) / "scenarios" / "quickstart.json";

// What a shell command prints, its trailing newline dropped; its exit status in `status`.
std::string shell(const std::string& command, int* status = nullptr) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe))
      out += buffer;
    const int code = ::pclose(pipe);
    if (status) *status = code;
  }
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

nlohmann::json run_json(const TempDir& dir, const std::string& sets = "") {
  const auto file = dir.path() / "result.json";
  const auto inv = run_dtsim("run '" + kQuickstart.string() + "' --json '" + file.string() + "'" + sets, dir);
  EXPECT_EQ(inv.status, 0) << inv.err;
  return nlohmann::json::parse(read_file(file));
}

TEST(Provenance, ARunsJsonCarriesVersionCommitAndTheResolvedScenariosHash) {
  TempDir dir;
  const auto result = run_json(dir);
  ASSERT_TRUE(result.contains("provenance")) << result.dump(2).substr(0, 400);
  const auto& p = result["provenance"];
  const auto version = run_dtsim("--version", dir).out;
  EXPECT_EQ("dtsim " + p["dtsim_version"].get<std::string>() + "\ncommit " + p["git_commit"].get<std::string>() + "\n",
            version);
  char hash[32];
  std::snprintf(hash, sizeof hash, "fnv1a64:%016llx",
                static_cast<unsigned long long>(io::fnv1a64(result["scenario"].dump())));
  EXPECT_EQ(p["scenario_hash"], hash);
  // The commit of the source tree the binary was built from (CI builds a clean clone, so it is HEAD).
  int status = 0;
  const auto head = shell("git -C '" + std::string(DTSIM_SOURCE_DIR) + "' rev-parse HEAD 2>/dev/null", &status);
  const auto commit = p["git_commit"].get<std::string>();
  if (status != 0 || head.empty())
    EXPECT_EQ(commit, "unknown");
  else
    EXPECT_TRUE(commit == head || commit == head + "-dirty") << commit << " vs HEAD " << head;
}

// The hash is of the resolved scenario: an override that restates what the file resolves to leaves it, one that
// changes the scenario changes it.
TEST(Provenance, TheHashFollowsTheResolvedScenarioNotHowItWasWritten) {
  TempDir dir;
  const auto plain = run_json(dir)["provenance"]["scenario_hash"];
  const auto seed = run_json(dir)["scenario"]["run"]["seed"].get<int>();
  EXPECT_EQ(run_json(dir, " --set run.seed=" + std::to_string(seed))["provenance"]["scenario_hash"], plain);
  EXPECT_NE(run_json(dir, " --set run.seed=" + std::to_string(seed + 1))["provenance"]["scenario_hash"], plain);
}

} // namespace
} // namespace dtsim::testing
