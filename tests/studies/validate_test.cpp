// Validation (sim/validate): the statistics by hand, case files refused with the file and the field named, op cases
// priced as the cost model prices them, the held-back points of a measurement file, and the shipped cases of
// calibration/validation/ all running within the median error README states.
#include "sim/studies/validate.hpp"

#include "calibration/fit.hpp"
#include "calibration/profile.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace dtsim::studies::validate {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(DTSIM_SOURCE_DIR);

// docs/validation.md, "Validation cases": the bounds on the median absolute error of the shipped cases, op-level
// (anchors excluded) and end-to-end apart. Regression guards, not claims of accuracy: today's medians are 4.2% and
// 27.5%.
constexpr double kOpMedianBoundPercent = 10;
constexpr double kEndToEndMedianBoundPercent = 30;
constexpr double kCollectiveMedianBoundPercent = 10;
// An anchor reproduces the measurement its profile took a constant from, up to the constant's three digits.
constexpr double kAnchorBoundPercent = 1;

TEST(ValidationStats, SignedErrorIsRelativeToTheMeasurement) {
  EXPECT_DOUBLE_EQ(error_percent(110, 100), 10);
  EXPECT_DOUBLE_EQ(error_percent(90, 100), -10);
  EXPECT_DOUBLE_EQ(error_percent(23.57, 31.47), (23.57 - 31.47) / 31.47 * 100);
}

TEST(ValidationStats, MedianAndMaxOfAbsoluteErrorsByHand) {
  // |errors| 10, 30, 5, 20: sorted 5, 10, 20, 30; median (10 + 20) / 2 = 15; max 30, the second case.
  const auto even = error_stats({10, -30, 5, -20});
  EXPECT_EQ(even.count, 4u);
  EXPECT_DOUBLE_EQ(even.median_abs, 15);
  EXPECT_DOUBLE_EQ(even.max_abs, 30);
  EXPECT_EQ(even.max_index, 1u);
  // |errors| 4, 2, 8: median 4; max 8, the third.
  const auto odd = error_stats({-4, 2, 8});
  EXPECT_DOUBLE_EQ(odd.median_abs, 4);
  EXPECT_DOUBLE_EQ(odd.max_abs, 8);
  EXPECT_EQ(odd.max_index, 2u);
  // A negative error as large as a positive one: the first of equals.
  EXPECT_EQ(error_stats({-7, 7}).max_index, 0u);
  EXPECT_EQ(error_stats({}).count, 0u);
}

// A valid scenario case, to break one field at a time.
nlohmann::json scenario_case() {
  return {{"name", "t"},
          {"source", "a table"},
          {"measured", {{"value", 100}, {"unit", "images/s"}}},
          {"scenario", "scenarios/quickstart.json"},
          {"set", {"cluster.nodes=1"}},
          {"metric", "throughput"}};
}

nlohmann::json op_case() {
  return {
      {"name", "gemm"},
      {"source", "a measurement"},
      {"measured", {{"value", 500}, {"unit", "TFLOP/s"}}},
      {"op", {{"profile", "h100-sxm"}, {"kind", "gemm"}, {"precision", "bf16"}, {"m", 4096}, {"n", 4096}, {"k", 4096}}},
      {"metric", "tflops"}};
}

nlohmann::json collective_case() {
  return {{"name", "all-reduce"},
          {"source", "nccl-tests output"},
          {"measured", {{"value", 12}, {"unit", "GB/s"}}},
          {"collective", {{"instance", "aws.p3.2xlarge"}, {"nodes", 2}, {"op", "all-reduce"}, {"bytes", 1073741824}}},
          {"metric", "bus_bandwidth"}};
}

// The error a broken case raises: it must name the file and the field's JSON pointer.
void expect_refused(const nlohmann::json& document, const std::string& pointer, const std::string& words) {
  try {
    parse_case(document.dump(), "calibration/validation/x.json");
    ADD_FAILURE() << "accepted: " << document.dump();
  } catch (const CaseError& e) {
    EXPECT_EQ(e.file(), "calibration/validation/x.json");
    EXPECT_EQ(e.pointer(), pointer) << e.what();
    EXPECT_NE(std::string(e.what()).find("calibration/validation/x.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(ValidationCases, ParsesAScenarioAndAnOpCase) {
  const auto s = parse_case(scenario_case().dump(), "s.json");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.metric, Metric::throughput);
  EXPECT_EQ(s.unit, "images/s");
  const auto& run = std::get<ScenarioRun>(s.what);
  EXPECT_EQ(run.scenario, "scenarios/quickstart.json");
  ASSERT_EQ(run.overrides.size(), 1u);
  EXPECT_EQ(run.overrides[0].path, "cluster.nodes");

  const auto o = parse_case(op_case().dump(), "o.json");
  const auto& op = std::get<KernelOp>(o.what);
  EXPECT_EQ(op.profile, "h100-sxm");
  EXPECT_EQ(op.kind, calibration::KernelClass::gemm);
  EXPECT_EQ(op.precision, calibration::Precision::bf16);
  EXPECT_DOUBLE_EQ(op.cost().flops, 2.0 * 4096 * 4096 * 4096);
}

TEST(ValidationCases, AMissingFieldIsNamed) {
  for (const char* field : {"name", "source", "measured", "metric"}) {
    auto d = scenario_case();
    d.erase(field);
    expect_refused(d, std::string("/") + field, std::string("missing field \"") + field + "\"");
  }
  auto d = scenario_case();
  d["measured"].erase("unit");
  expect_refused(d, "/measured/unit", "missing field \"unit\"");
  d = scenario_case();
  d.erase("scenario");
  expect_refused(d, "/scenario", "missing field \"scenario\", \"op\" or \"collective\"");
  d = op_case();
  d["op"].erase("k");
  expect_refused(d, "/op/k", "missing field \"k\"");
  d = op_case();
  d["op"] = {{"profile", "h100-sxm"}, {"kind", "memory"}};
  d["metric"] = "seconds";
  d["measured"]["unit"] = "us";
  expect_refused(d, "/op/bytes", "missing field \"bytes\"");
}

TEST(ValidationCases, BadValuesAreNamed) {
  auto d = scenario_case();
  d["measured"]["value"] = -3;
  expect_refused(d, "/measured/value", "positive number");
  d = scenario_case();
  d["metric"] = "speed";
  expect_refused(d, "/metric", "unknown metric \"speed\"");
  d = scenario_case();
  d["metric"] = "tflops"; // an op metric on a scenario
  expect_refused(d, "/metric", "tokens_per_second");
  d = scenario_case();
  d["measured"]["unit"] = "min"; // not a throughput unit
  expect_refused(d, "/measured/unit", "does not fit metric \"throughput\"");
  d = scenario_case();
  d["set"] = {"cluster.nodes"};
  expect_refused(d, "/set/0", "");
  d = scenario_case();
  d["notes"] = "typo";
  expect_refused(d, "/notes", "unknown field \"notes\"");
  d = scenario_case();
  d["op"] = op_case()["op"];
  expect_refused(d, "/op", "give one of");
  d = op_case();
  d["op"]["profile"] = "h300";
  expect_refused(d, "/op/profile", "unknown GPU profile \"h300\"");
  d = op_case();
  d["op"]["precision"] = "fp4";
  expect_refused(d, "/op/precision", "unknown precision");
  d = op_case();
  d["metric"] = "bytes_per_second";
  d["measured"]["unit"] = "TB/s";
  expect_refused(d, "/metric", "memory kernel");
  d = collective_case();
  d["collective"]["op"] = "all-reduced";
  expect_refused(d, "/collective/op", "unknown operation");
  d = collective_case();
  d["metric"] = "throughput";
  expect_refused(d, "/metric", "bus_bandwidth");
  try {
    parse_case("{\"name\": ", "broken.json");
    ADD_FAILURE() << "accepted broken JSON";
  } catch (const CaseError& e) {
    EXPECT_EQ(e.file(), "broken.json");
  }
}

// Two p3.2xlarge over TCP: a ring of 2 ranks moves S each way over the node's NIC, 10 Gb/s of line rate carrying
// 8949/9039 of it as data in 9001-byte frames; its bus bandwidth (x 1 for two ranks) is that, less the latency (tens
// of microseconds against 0.87 s).
// A file of kernels at training shapes becomes one case per timing, all of its group; the 8192^3 bf16 GEMM held at the
// limit on the H100 took 1.6277 ms a run (calibration/measurements/h100-sxm-2026-11-28-training-shapes.json):
// 2 x 8192^3 / 1.6277e-3 s = 675.5 TFLOP/s. What is left out names its file's group; an anchor that names no case is
// refused at its pointer.
TEST(ValidationCases, TrainingShapeFilesExpandIntoBurstAndSustainedCases) {
  const auto file = (kRoot / "calibration/validation/shapes.json").string();
  nlohmann::json d = {
      {"name", "H100 shapes"},
      {"source", "test"},
      {"measurements",
       {{"file", "../measurements/h100-sxm-2026-11-28-training-shapes.json"}, {"profile", "h100-sxm"}}}};
  const auto expanded = shape_cases(d, file);
  ASSERT_FALSE(expanded.cases.empty());
  for (const auto& c : expanded.cases)
    EXPECT_EQ(c.group, "H100 shapes") << c.name;
  for (const auto& why : expanded.skipped)
    EXPECT_EQ(why.rfind("H100 shapes: ", 0), 0u) << why;
  const auto sustained = std::find_if(expanded.cases.begin(), expanded.cases.end(), [](const Case& c) {
    return c.name == "H100 shapes: llama3-70b attn.out forward 8192x8192x8192 bf16, sustained";
  });
  ASSERT_NE(sustained, expanded.cases.end());
  EXPECT_NEAR(sustained->measured, 675.5, 0.1);
  EXPECT_TRUE(std::get<KernelOp>(sustained->what).sustained);
  d["measurements"]["anchors"] = {"H100 shapes: no such kernel, burst"};
  try {
    shape_cases(d, file);
    ADD_FAILURE() << "an anchor naming no case was accepted";
  } catch (const CaseError& e) {
    EXPECT_EQ(e.pointer(), "/measurements/anchors") << e.what();
  }
}

TEST(ValidationCases, CollectiveCasesAreBenchmarkedAsDtsimCollectiveRunsThem) {
  const auto c = parse_case(collective_case().dump(), "c.json");
  EXPECT_EQ(c.level(), Level::collective);
  const auto outcomes = run_cases({c}, kRoot, 1);
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_NEAR(outcomes[0].predicted, 10.0 / 8 * 8949 / 9039, 0.01);
}

// A small call's time: 8 bytes over 2 nodes of 8 H100 on NDR InfiniBand run NCCL's tree with LL, whose time is NCCL's
// latency model, 6.8 us + 2 x (7 x 0.6 us down a node's chain + 5.0 us between the nodes) = 25.2 us; shown in the
// case's unit. A bandwidth unit is refused for a time.
TEST(ValidationCases, CollectiveTimeIsTheTimeOfOneCall) {
  auto d = collective_case();
  d["metric"] = "collective_time";
  d["measured"] = {{"value", 25}, {"unit", "us"}};
  d["collective"] = {{"instance", "azure.nd-h100-v5"}, {"nodes", 2}, {"op", "all-reduce"}, {"bytes", 8}};
  const auto c = parse_case(d.dump(), "t.json");
  EXPECT_EQ(c.level(), Level::collective);
  const auto outcomes = run_cases({c}, kRoot, 1);
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_NEAR(outcomes[0].predicted, 25.2, 0.1);
  d["measured"]["unit"] = "GB/s";
  expect_refused(d, "/measured/unit", "us");
}

// A speed-up as a publication states one: the case's throughput over its baseline's, both runs of the same scenario.
// It is the quotient of the two throughputs the plain cases predict, and 1 against a baseline that is the same run.
TEST(ValidationCases, AThroughputRatioDividesTheCaseByItsBaseline) {
  auto ratio = scenario_case();
  ratio["metric"] = "throughput_ratio";
  ratio["measured"] = {{"value", 1.5}, {"unit", "x"}};
  ratio["set"] = {"cluster.nodes=2"};
  ratio["baseline"] = {{"set", {"cluster.nodes=1"}}};
  auto two = scenario_case();
  two["set"] = {"cluster.nodes=2"};
  auto same = ratio;
  same["baseline"]["set"] = {"cluster.nodes=2"};
  const auto outcomes = run_cases({parse_case(ratio.dump(), "r.json"), parse_case(two.dump(), "2.json"),
                                   parse_case(scenario_case().dump(), "1.json"), parse_case(same.dump(), "s.json")},
                                  kRoot, 1);
  for (const auto& o : outcomes)
    ASSERT_TRUE(o.ok) << o.error;
  EXPECT_DOUBLE_EQ(outcomes[0].predicted, outcomes[1].predicted / outcomes[2].predicted);
  EXPECT_DOUBLE_EQ(outcomes[3].predicted, 1);

  auto d = ratio;
  d.erase("baseline");
  expect_refused(d, "/baseline", "missing field \"baseline\"");
  d = ratio;
  d["baseline"] = nlohmann::json::object();
  expect_refused(d, "/baseline/set", "the run the ratio is taken against");
  d = ratio;
  d["baseline"]["sets"] = {"cluster.nodes=1"};
  expect_refused(d, "/baseline/sets", "unknown field");
  d = ratio;
  d["measured"]["unit"] = "images/s";
  expect_refused(d, "/measured/unit", "x");
  d = scenario_case();
  d["baseline"] = ratio["baseline"];
  expect_refused(d, "/baseline", "throughput_ratio");
}

TEST(ValidationCases, OpCasesArePricedByTheCostModel) {
  auto d = op_case();
  const auto c = parse_case(d.dump(), "o.json");
  const auto outcomes = run_cases({c}, kRoot, 1);
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  const auto h100 = *calibration::find_profile("h100-sxm");
  const double m = 4096;
  const calibration::KernelCost cost{
      calibration::KernelClass::gemm, calibration::Precision::bf16, 2 * m * m * m, 3 * m * m * 2, 1, {{m, m, m, 1}}};
  EXPECT_DOUBLE_EQ(std::get<KernelOp>(c.what).cost().bytes, 3 * m * m * 2);
  const double tflops = cost.flops / calibration::kernel_time(h100, cost) / 1e12;
  EXPECT_NEAR(outcomes[0].predicted, tflops, 1e-9 * tflops);
  EXPECT_NEAR(outcomes[0].error_percent, (tflops - 500) / 500 * 100, 1e-9);

  // A memory kernel: bytes over its time, converted to the case's unit.
  d["op"] = {{"profile", "h100-sxm"}, {"kind", "memory"}, {"bytes", 1e9}};
  d["metric"] = "bytes_per_second";
  d["measured"] = {{"value", 3}, {"unit", "TB/s"}};
  const auto memory = run_cases({parse_case(d.dump(), "m.json")}, kRoot, 1);
  ASSERT_TRUE(memory[0].ok);
  const double seconds = 1e9 / (h100.memory_bandwidth * h100.memory_efficiency) + h100.launch_overhead;
  EXPECT_NEAR(memory[0].predicted, 1e9 / seconds / 1e12, 1e-9);
}

TEST(ValidationCases, AScenarioThatDoesNotRunFailsItsCaseOnly) {
  auto missing = scenario_case();
  missing["scenario"] = "scenarios/no-such-file.json";
  auto fine = op_case();
  const auto outcomes = run_cases({parse_case(missing.dump(), "a.json"), parse_case(fine.dump(), "b.json")}, kRoot, 2);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_NE(outcomes[0].error.find("no-such-file.json"), std::string::npos) << outcomes[0].error;
  EXPECT_TRUE(outcomes[1].ok);
  // A metric the run does not report: tokens/s of an MLP, whose samples are not sequences.
  auto no_tokens = scenario_case();
  no_tokens["metric"] = "tokens_per_second";
  no_tokens["measured"]["unit"] = "tokens/s";
  const auto tokens = run_cases({parse_case(no_tokens.dump(), "c.json")}, kRoot, 1);
  EXPECT_FALSE(tokens[0].ok);
  EXPECT_NE(tokens[0].error.find("no tokens/s"), std::string::npos) << tokens[0].error;
}

// A measurement file of 10 bf16 GEMMs and 6 copies in shuffled order: the fit sorts each group by size and holds back
// every 5th point, so the GEMMs of sorted index 4 and 9 (n = 5 x 256 and 10 x 256) and the 5th-smallest copy.
TEST(ValidationCases, HeldBackPointsOfAMeasurementFile) {
  ASSERT_EQ(calibration::CurveFitOptions{}.hold_back_every, 5u);
  calibration::MeasurementFile m;
  m.origin = "lab.json";
  m.device.name = "NVIDIA H100 80GB HBM3";
  m.device.sms = 132;
  m.date = "2026-11-22T01:30:00Z";
  for (int i : {7, 2, 10, 4, 1, 9, 3, 6, 8, 5}) {
    calibration::GemmMeasurement g;
    g.m = 1024;
    g.n = 256.0 * i;
    g.k = 1024;
    g.flops = 2 * g.m * g.n * g.k;
    g.stats = {20, 1e-6 * i};
    m.gemms.push_back(g);
  }
  for (int i : {3, 1, 6, 2, 5, 4}) {
    calibration::MemoryMeasurement k;
    k.op = "copy";
    k.bytes = 1e8 * i;
    k.stats = {20, 1e-5 * i};
    m.memory.push_back(k);
  }
  const auto h100 = *calibration::find_profile("h100-sxm");
  const auto cases = held_back_cases(m, h100, "h100-sxm");
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(std::get<KernelOp>(cases[0].what).n, 5 * 256);
  EXPECT_EQ(std::get<KernelOp>(cases[1].what).n, 10 * 256);
  EXPECT_EQ(std::get<KernelOp>(cases[2].what).bytes, 5e8);
  EXPECT_EQ(cases[2].name, "held back: memory copy 500000000 B");
  EXPECT_DOUBLE_EQ(cases[0].measured, 5); // microseconds
  EXPECT_EQ(cases[0].unit, "us");
  EXPECT_EQ(cases[0].metric, Metric::seconds);
  EXPECT_NE(cases[0].source.find("lab.json"), std::string::npos);
  const auto outcomes = run_cases(cases, kRoot, 1);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(outcomes[i].ok) << outcomes[i].error;
    const auto cost = std::get<KernelOp>(cases[i].what).cost();
    EXPECT_NEAR(outcomes[i].predicted, calibration::kernel_time(h100, cost) * 1e6, 1e-9);
  }
}

// A case another source contradicts says why, and is counted in no statistics; an empty reason is refused.
TEST(ValidationCases, ADisputedCaseSaysWhyAndIsNotCounted) {
  auto d = scenario_case();
  EXPECT_TRUE(parse_case(d.dump(), "s.json").counted());
  d["disputed"] = "the hardware cannot have run it as described";
  const auto c = parse_case(d.dump(), "s.json");
  EXPECT_EQ(c.disputed, "the hardware cannot have run it as described");
  EXPECT_FALSE(c.counted());
  d["disputed"] = "";
  expect_refused(d, "/disputed", "expected a non-empty string");
}

TEST(ValidationCases, FilterMatchesNameOrFileIgnoringCase) {
  auto a = parse_case(scenario_case().dump(), "dir/modak2022-x.json");
  auto b = parse_case(op_case().dump(), "dir/op-y.json");
  EXPECT_EQ(filter_cases({a, b}, "MODAK2022").size(), 1u);
  EXPECT_EQ(filter_cases({a, b}, "Gemm").size(), 1u);
  EXPECT_EQ(filter_cases({a, b}, "").size(), 2u);
}

TEST(ValidationRoot, FoundAtOrAboveAStartingFolder) {
  EXPECT_EQ(find_root({kRoot / "scenarios"}), fs::weakly_canonical(kRoot));
  EXPECT_EQ(find_root({fs::path(), kRoot}), fs::weakly_canonical(kRoot));
  const auto elsewhere = fs::temp_directory_path() / ("dtsim-validate-root-" + std::to_string(::getpid()));
  fs::create_directories(elsewhere);
  EXPECT_THROW(find_root({elsewhere}), std::runtime_error);
  fs::remove_all(elsewhere);
}

// Every shipped case runs, each names its source, the anchors reproduce the figures their profiles were anchored on,
// and the median absolute error of each level stays within docs/validation.md's bound.
TEST(ValidationShipped, EveryCaseRunsWithinTheMedianBounds) {
  const auto start = std::chrono::steady_clock::now();
  const auto cases = load_cases(cases_directory(kRoot));
  ASSERT_GE(cases.size(), 60u);
  const auto outcomes = run_cases(cases, kRoot, 2);
  std::vector<double> op, collective, end_to_end;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_FALSE(cases[i].source.empty()) << cases[i].file;
    ASSERT_TRUE(outcomes[i].ok) << cases[i].file << ": " << outcomes[i].error;
    if (cases[i].anchor) {
      EXPECT_TRUE(cases[i].op_level()) << cases[i].file << ": only a kernel can anchor a profile's constant";
      EXPECT_LT(std::fabs(outcomes[i].error_percent), kAnchorBoundPercent) << cases[i].name;
      continue;
    }
    if (!cases[i].disputed.empty()) continue; // shown by dtsim validate, counted by neither it nor this bound
    const auto level = cases[i].level();
    (level == Level::op           ? op
     : level == Level::collective ? collective
                                  : end_to_end)
        .push_back(outcomes[i].error_percent);
  }
  ASSERT_GE(collective.size(), 12u);
  const auto collective_stats = error_stats(collective);
  EXPECT_LE(collective_stats.median_abs, kCollectiveMedianBoundPercent)
      << "median |error| over " << collective_stats.count << " collective cases";
  RecordProperty("collective_median_abs_error_percent", std::to_string(collective_stats.median_abs));
  ASSERT_GE(op.size(), 40u);
  ASSERT_GE(end_to_end.size(), 15u);
  const auto op_stats = error_stats(op), end_stats = error_stats(end_to_end);
  EXPECT_LE(op_stats.median_abs, kOpMedianBoundPercent) << "median |error| over " << op_stats.count << " op cases";
  EXPECT_LE(end_stats.median_abs, kEndToEndMedianBoundPercent)
      << "median |error| over " << end_stats.count << " end-to-end cases";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("seconds", std::to_string(seconds));
  RecordProperty("op_median_abs_error_percent", std::to_string(op_stats.median_abs));
  RecordProperty("end_to_end_median_abs_error_percent", std::to_string(end_stats.median_abs));
}

} // namespace
} // namespace dtsim::studies::validate
