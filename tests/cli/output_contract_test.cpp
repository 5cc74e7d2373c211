// The output contract of every output flag: `-` is standard output; an output that is an input of the run, or two
// outputs naming one file, are refused before anything runs and the files are left as they were; a symlink's target
// is written and the link stays; a result that cannot be written fails the run.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sys/wait.h>

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

// A result that cannot be written (standard output on a full disk: /dev/full) fails the run, saying so, whether it is
// the report or the JSON on standard output.
TEST(OutputContract, AResultThatCannotBeWrittenFailsTheRun) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  TempDir dir;
  for (const std::string flags : {"", " --json -"}) {
    const auto err = dir.path() / "stderr.txt";
    const std::string command = std::string(DTSIM_BINARY) + " run '" + kQuickstart.string() + "'" + flags +
                                " > /dev/full 2> '" + err.string() + "' < /dev/null";
    const int raw = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(raw)) << flags;
    EXPECT_EQ(WEXITSTATUS(raw), 1) << flags;
    EXPECT_NE(read_file(err).find("standard output could not be written"), std::string::npos) << flags;
  }
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

// A figure that does not apply is empty, not 0: the quickstart scenario names no instance and no price, so its costs
// are null in the JSON and empty in sweep's and compare's CSV; with --price-per-hour 2 they are 2 USD an hour and
// that times the epoch's hours.
TEST(OutputContract, CostsWithoutAPriceAreEmptyNotZero) {
  TempDir dir;
  const auto run = run_dtsim("run '" + kQuickstart.string() + "' --json -", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto cost = nlohmann::json::parse(run.out).at("cost_usd");
  EXPECT_TRUE(cost.at("per_hour").is_null() && cost.at("per_epoch").is_null() && cost.at("run").is_null()) << cost;
  const auto sweep = run_dtsim("sweep '" + kQuickstart.string() + "' --nodes 1 --jobs 1 --csv -", dir);
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const auto row = sweep.out.substr(sweep.out.find('\n') + 1);
  EXPECT_EQ(row.substr(row.size() - 5), ",,,,\n") << sweep.out; // three costs and the error, all empty
  const auto priced = run_dtsim("run '" + kQuickstart.string() + "' --price-per-hour 2 --json -", dir);
  ASSERT_EQ(priced.status, 0) << priced.err;
  const auto result = nlohmann::json::parse(priced.out);
  EXPECT_DOUBLE_EQ(result.at("cost_usd").at("per_hour").get<double>(), 2 * result.at("nodes").get<double>());
  EXPECT_NEAR(result.at("cost_usd").at("per_epoch").get<double>(),
              2 * result.at("nodes").get<double>() * result.at("epoch_seconds").get<double>() / 3600, 1e-12);
}

} // namespace
} // namespace dtsim::testing
