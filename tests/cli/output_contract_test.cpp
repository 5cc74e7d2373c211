// The output contract of every output flag: `-` is standard output; an output that is an input of the run, or two
// outputs naming one file, are refused before anything runs and the files are left as they were; a symlink's target
// is written and the link stays.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kQuickstart = fs::path(DTSIM_SOURCE_DIR) / "scenarios" / "quickstart.json";

std::string copy_scenario(const TempDir& dir) {
  const auto path = dir.path() / "s.json";
  fs::copy_file(kQuickstart, path);
  return path.string();
}

TEST(OutputContract, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  TempDir dir;
  const auto scenario = copy_scenario(dir);
  const auto before = read_file(scenario);
  const auto run = run_dtsim("run '" + scenario + "' --json '" + scenario + "'", dir);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("is an input of this run"), std::string::npos) << run.err;
  EXPECT_EQ(read_file(scenario), before);
  const auto sweep = run_dtsim("sweep '" + scenario + "' --nodes 1,2 --csv '" + scenario + "'", dir);
  EXPECT_EQ(sweep.status, 2);
  EXPECT_EQ(read_file(scenario), before);
}

TEST(OutputContract, TwoOutputsNamingOneFileAreRefused) {
  TempDir dir;
  const auto out = (dir.path() / "r.json").string();
  const auto inv = run_dtsim("run '" + kQuickstart.string() + "' --json '" + out + "' --trace '" + out + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("is also the output"), std::string::npos) << inv.err;
  EXPECT_FALSE(fs::exists(out));
  const auto both = run_dtsim("run '" + kQuickstart.string() + "' --json - --ops -", dir);
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("standard output"), std::string::npos) << both.err;
}

TEST(OutputContract, DashIsStandardOutputAndTheReportGoesToStandardError) {
  TempDir dir;
  const auto inv = run_dtsim("run '" + kQuickstart.string() + "' --json -", dir);
  EXPECT_EQ(inv.status, 0) << inv.err;
  EXPECT_TRUE(nlohmann::json::accept(inv.out)) << inv.out.substr(0, 200);
  EXPECT_NE(inv.err.find("throughput"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path() / "-"));
}

TEST(OutputContract, ASymlinkIsFollowedAndKept) {
  TempDir dir;
  const auto link = dir.path() / "link.json";
  fs::create_symlink("target.json", link); // dangling until written
  const auto inv = run_dtsim("run '" + kQuickstart.string() + "' --json '" + link.string() + "'", dir);
  EXPECT_EQ(inv.status, 0) << inv.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(nlohmann::json::accept(read_file(dir.path() / "target.json")));
}

} // namespace
} // namespace dtsim::testing
