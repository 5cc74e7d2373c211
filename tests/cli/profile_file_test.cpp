// A GPU profile given by path (cluster.gpu), as a user runs a calibrated profile without rebuilding dtsim: found
// beside the scenario or from the current directory, and refused with its own file and JSON pointer when broken.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;

// The shipped V100 profile under another name, with half its GEMM efficiency and half its memory bandwidth: a run on it
// must be slower.
std::string lab_profile() {
  auto doc = nlohmann::json::parse(read_file(fs::path(DTSIM_SOURCE_DIR) / "calibration/profiles/v100.json"));
  doc["name"] = "lab-v100";
  for (auto& [precision, value] : doc["efficiency"]["gemm"].items())
    value = value.get<double>() / 2;
  doc["memory"]["bandwidth"] = doc["memory"]["bandwidth"].get<double>() / 2;
  return doc.dump(2);
}

std::string scenario(const std::string& gpu) {
  return R"({"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 256},
    "cluster": {"nodes": 1, "gpu": ")" +
         gpu + R"(", "nic": {"bandwidth": "10Gbps"}}, "run": {"iterations": 1, "warmup_iterations": 0}})";
}

double iteration_seconds(const TempDir& dir, const std::string& args) {
  const auto out = dir.path() / "r.json";
  const auto inv = run_dtsim("run " + args + " --json '" + out.string() + "'", dir);
  EXPECT_EQ(inv.status, 0) << inv.err;
  return nlohmann::json::parse(read_file(out)).at("iteration_seconds").at("mean");
}

TEST(ProfileFile, AProfileBesideTheScenarioRuns) {
  TempDir dir;
  fs::create_directories(dir.path() / "runs");
  dir.write("runs/lab.json", lab_profile());
  const auto file = dir.write("runs/s.json", scenario("lab.json"));
  const auto shipped = dir.write("runs/shipped.json", scenario("v100"));
  const double lab = iteration_seconds(dir, "'" + file.string() + "'");
  // The result names the profile as the scenario gave it.
  const auto result = nlohmann::json::parse(read_file(dir.path() / "r.json"));
  EXPECT_EQ(result.at("scenario").at("cluster").at("gpu"), "lab.json");
  const double v100 = iteration_seconds(dir, "'" + shipped.string() + "'");
  EXPECT_GT(lab, v100) << "the profile file's slower GEMMs and memory were not used";
}

TEST(ProfileFile, SetOnTheCommandLineFromTheCurrentDirectory) {
  TempDir dir;
  dir.write("lab.json", lab_profile());
  const auto file = dir.write("s.json", scenario("v100"));
  // run_dtsim runs in the current directory; give the profile as a path from it.
  const auto relative = fs::relative(dir.path() / "lab.json", fs::current_path());
  const double lab = iteration_seconds(dir, "'" + file.string() + "' --set cluster.gpu=" + relative.string());
  const double v100 = iteration_seconds(dir, "'" + file.string() + "'");
  EXPECT_GT(lab, v100);
}

TEST(ProfileFile, ABrokenProfileIsBadInputNamingItsFileAndPointer) {
  TempDir dir;
  auto doc = nlohmann::json::parse(lab_profile());
  doc["memory"].erase("bandwidth");
  dir.write("broken.json", doc.dump(2));
  const auto file = dir.write("s.json", scenario("broken.json"));
  const auto inv = run_dtsim("run '" + file.string() + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("broken.json: /memory/bandwidth: "), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("/cluster/gpu"), std::string::npos) << inv.err; // and where the scenario named it

  dir.write("not-json.json", "{\"name\": ");
  const auto garbled = dir.write("t.json", scenario("not-json.json"));
  const auto bad = run_dtsim("run '" + garbled.string() + "'", dir);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("not-json.json"), std::string::npos) << bad.err;
}

TEST(ProfileFile, NeitherAShippedNameNorAFile) {
  TempDir dir;
  const auto file = dir.write("s.json", scenario("h100-sxm5-custom.json"));
  const auto inv = run_dtsim("run '" + file.string() + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/cluster/gpu: unknown GPU profile \"h100-sxm5-custom.json\""), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("\"h100-sxm\""), std::string::npos) << inv.err;
}

TEST(ProfileFile, ListGpusSaysWhereEachProfileComesFrom) {
  TempDir dir;
  const auto inv = run_dtsim("list gpus", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("where its numbers come from"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("derived: datasheets and published measurements"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("calibration/profiles/NAME.json"), std::string::npos) << inv.out;
}

} // namespace
} // namespace dtsim::testing
