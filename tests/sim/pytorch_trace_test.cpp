// model.trace {"format": "pytorch-profiler"} end to end: the sample step of tests/kineto/trace_builder.hpp (480 us of
// kernels, 540 us of host gaps, gradients of 4e6 and 2e6 bytes) run on one and on two round GPUs (1 GB/s NICs, 1 us
// latency, ring all-reduce: tests/sim/round_gpu.hpp), every time below worked out by hand.
#include "sim/engine/footprint.hpp"
#include "sim/kineto/kineto.hpp"
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"

#include "tests/kineto/trace_builder.hpp"
#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dtsim {
namespace {

class ProfilerTrace : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("dtsim-profiler-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  scenario::Scenario scenario_of(const test::KinetoTraceBuilder& trace, int nodes) const {
    const auto file = dir_ / "step.json";
    std::ofstream(file) << trace.text();
    auto s = test::hand_scenario({}, nodes);
    s.model.trace = scenario::TraceSpec{"pytorch-profiler", file.string(), std::nullopt, ""};
    return s;
  }

  std::filesystem::path dir_;
};

TEST_F(ProfilerTrace, OneGpuReplaysTheMeasuredStep) {
  const auto s = scenario_of(test::sample_step(), 1);
  const auto plan = plan::make_plan(s);
  EXPECT_EQ(plan.buckets, 0);
  EXPECT_NEAR(plan.host_wait_seconds, 540e-6, 1e-12);
  const auto result = simulate(s).result;
  // 480 us of kernels and 540 us of host gaps, one after the other.
  EXPECT_NEAR(result.iteration.mean, 1020e-6, 1e-9);
  EXPECT_NEAR(result.breakdown.compute, 480e-6, 1e-9);
  EXPECT_NEAR(result.breakdown.exposed_communication, 0, 1e-12);
}

TEST_F(ProfilerTrace, TwoGpusAllReduceTheTracesGradientsInDdpBuckets) {
  const auto s = scenario_of(test::sample_step(), 2);
  const auto plan = plan::make_plan(s);
  // fc.weight's 4e6 bytes pass the first bucket's 1 MiB cap and close it; fc.bias's 2e6 bytes stay under 25 MiB and
  // go out last: two buckets carrying the trace's 6e6 parameter bytes.
  EXPECT_EQ(plan.buckets, 2);
  EXPECT_DOUBLE_EQ(plan.gradient_bytes, 6e6);
  const auto& ops = plan.graph.program_of(0).ops;
  std::vector<double> reduced;
  for (const auto& op : ops)
    if (const auto* c = std::get_if<graph::Collective>(&op.body)) reduced.push_back(c->bytes);
  EXPECT_EQ(reduced, (std::vector<double>{4e6, 2e6}));
  // A ring all-reduce of B bytes over two ranks: 2 steps of (2 us + B/2 / 1 GB/s). From the step's start (the copy at
  // 0): fc grad ends at 500 us and bucket 0 runs 4.004 ms, to 4,504 us; bucket 1 (after bias grad, 610 us) follows on
  // the communication stream, 2.004 ms, to 6,508 us; the optimizer's kernels wait for both (70 us), then the host's
  // 310 us to the next step: 6,888 us.
  const auto result = simulate(s).result;
  EXPECT_NEAR(result.iteration.mean, 6888e-6, 0.5e-6);
  EXPECT_NEAR(result.breakdown.compute, 480e-6, 1e-9);
}

TEST_F(ProfilerTrace, WithoutOverlapOneAllReduceAfterBackward) {
  auto s = scenario_of(test::sample_step(), 2);
  s.training.overlap = false;
  EXPECT_EQ(plan::make_plan(s).buckets, 1);
  // 6e6 bytes from the end of bias grad (610 us): 2 x (2 us + 3 ms) = 6.004 ms, to 6,614 us; + 70 + 310 us.
  EXPECT_NEAR(simulate(s).result.iteration.mean, 6994e-6, 0.5e-6);
}

TEST_F(ProfilerTrace, WithoutShapesTheNamedModelGivesTheGradients) {
  auto s = scenario_of(test::sample_step(false), 2);
  s.model.trace->model = "mlp-small"; // fc1 784 x 1024, fc2 1024 x 1024, fc3 1024 x 10, with biases; fp32 gradients
  const auto plan = plan::make_plan(s);
  // Backward's 300 us of kernels (fc grad 200 us, then bias grad 100 us) spent in proportion to the layers' backward
  // FLOPs, last layer first: fc3 (2 x 2 x 1024 x 10 a sample) and fc2 (2 x 2 x 1024 x 1024) are done within the
  // first 200 us (57% of the FLOPs: 171 us), fc1 at the end. Buckets: fc3's 41,000 bytes are under 1 MiB, fc2's
  // 4,198,400 close the first (4,239,400 bytes, after fc grad); fc1's 3,215,360 go last, after bias grad.
  std::vector<double> reduced;
  for (const auto& op : plan.graph.program_of(0).ops)
    if (const auto* c = std::get_if<graph::Collective>(&op.body)) reduced.push_back(c->bytes);
  EXPECT_EQ(reduced, (std::vector<double>{4'239'400, 3'215'360}));
  EXPECT_DOUBLE_EQ(plan.gradient_bytes, 1'863'690.0 * 4); // mlp-small's parameters
  // Bucket 0 from 500 us: 2 x (2 us + 2,119,700 B / 1 GB/s) = 4,243.4 us, to 4,743.4 us; bucket 1 after it,
  // 2 x (2 us + 1,607,680 B / 1 GB/s) = 3,219.36 us, to 7,962.76 us; then 70 us of optimizer and 310 us of host.
  EXPECT_NEAR(simulate(s).result.iteration.mean, 8342.76e-6, 0.5e-6);
}

TEST_F(ProfilerTrace, MemoryPerGpuIsTheTracedPeakWhereTheTraceHasIt) {
  EXPECT_TRUE(plan::make_plan(scenario_of(test::sample_step(), 2)).memory.items.empty());
  auto t = test::sample_step();
  t.memory(100, 1e9, 4e9).memory(200, 3e9, 4e9).memory(300, 2e9, 5e9);
  const auto memory = plan::make_plan(scenario_of(t, 2)).memory;
  ASSERT_EQ(memory.items.size(), 2u);
  EXPECT_EQ(memory.items[0].bytes, 3e9);       // the tensors' peak
  EXPECT_EQ(memory.items[1].bytes, 5e9 - 3e9); // the allocator's reserve beyond it
  EXPECT_EQ(memory.total(), 5e9);              // what the GPU held at the peak reservation
  EXPECT_TRUE(memory.fits());                  // of the round GPU's 64 GB
}

TEST_F(ProfilerTrace, RefusedWhereItCannotBeRun) {
  auto s = scenario_of(test::sample_step(false), 2);
  try {
    plan::make_plan(s);
    FAIL() << "a trace without shapes planned on two GPUs";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_EQ(e.pointer(), "/model/trace/path");
    EXPECT_NE(std::string(e.what()).find("record_shapes=True"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(plan::make_plan(scenario_of(test::sample_step(false), 1))); // one GPU needs no gradient sizes
  s = scenario_of(test::sample_step(), 2);
  s.training.zero_stage = 1;
  try {
    plan::make_plan(s);
    FAIL() << "ZeRO planned over a profiler trace";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_EQ(e.pointer(), "/training/zero_stage");
  }
  s = scenario_of(test::sample_step(), 2);
  s.model.trace->step = 9;
  try {
    plan::make_plan(s);
    FAIL() << "step 9 accepted";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_EQ(e.pointer(), "/model/trace/step");
  }
}

// A trace is read in this process before anything is planned, so the memory limit bounds its reading first: its text
// and the events kept from it, 2.1 times the text (kineto::reading_bytes). The sample step padded with whitespace to
// 64 MiB reads in about 134 MiB: refused under 100 MiB, naming the file, let through under 200 MiB.
TEST_F(ProfilerTrace, ATraceIsReadWithinTheMemoryLimit) {
  auto s = scenario_of(test::sample_step(), 1);
  const double text = 64.0 * (1 << 20);
  std::ofstream(s.model.trace->path, std::ios::app)
      << std::string(static_cast<std::size_t>(text) - std::filesystem::file_size(s.model.trace->path), ' ');
  ASSERT_EQ(std::filesystem::file_size(s.model.trace->path), text);
  EXPECT_DOUBLE_EQ(kineto::reading_bytes(s.model.trace->path), 2.1 * text);
  try {
    check_scenario_size(s, MemoryLimit{100.0 * (1 << 20), "100 MiB (--max-memory)"});
    FAIL() << "a trace read in 134 MiB under a limit of 100 MiB";
  } catch (const engine::ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find(s.model.trace->path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("134 MiB"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_scenario_size(s, MemoryLimit{200.0 * (1 << 20), "200 MiB (--max-memory)"}));
  EXPECT_NEAR(simulate(s).result.iteration.mean, 1020e-6, 1e-9); // the padding changes nothing
}

// The shipped traces: torch.profiler traces of real jobs (Holistic Trace Analysis' test data, scenarios/traces/).
// Their compute and host gaps are replayed as measured; what dtsim adds is the communication, on a p4d.24xlarge node.
// The measured figure is the trace's own: from the chosen step's first GPU activity to the next step's.
namespace shipped {

const std::string kScenarios = std::string(DTSIM_SOURCE_DIR) + "/scenarios/";

TEST(ShippedProfilerTraces, ResNet50DdpAllReducesItsParametersAsTheJobDid) {
  const auto s = scenario::load_scenario(kScenarios + "resnet50-ddp-a100x2-pytorch-trace.json");
  const auto plan = plan::make_plan(s);
  // DDP's five buckets carry every ResNet-50 parameter once (25,557,032 in torchvision, fp32), the two broadcasts its
  // batch-norm buffers (53,120 floats of running statistics, 53 int64 batch counts).
  EXPECT_EQ(plan.buckets, 5);
  EXPECT_DOUBLE_EQ(plan.gradient_bytes, 25'557'032.0 * 4);
  std::vector<double> broadcasts;
  for (const auto& op : plan.graph.program_of(0).ops)
    if (const auto* c = std::get_if<graph::Collective>(&op.body); c && c->op == collectives::Operation::broadcast)
      broadcasts.push_back(c->bytes);
  EXPECT_EQ(broadcasts, (std::vector<double>{53'120.0 * 4, 53.0 * 8}));
  // Measured: ProfilerStep#5's first GPU activity to ProfilerStep#6's, 219.73 ms. The job is host-bound (39.3 ms of
  // kernels): the all-reduces hide in the host's gaps on NVSwitch as they did in the job.
  const double measured = 219.73e-3;
  EXPECT_NEAR(simulate(s).result.iteration.mean, measured, 0.01 * measured);
}

// HTA's trace names the GPU it was recorded on ("NVIDIA A100-PG509-200"): on the scenario's A100 cluster nothing is
// said; on H100s the plan and the run's report say that the kernels keep the A100's times.
TEST(ShippedProfilerTraces, ATraceFromAnotherGpuSaysSo) {
  const auto path = kScenarios + "resnet50-ddp-a100x2-pytorch-trace.json";
  EXPECT_TRUE(plan::make_plan(scenario::load_scenario(path)).warnings.empty());
  const auto h100 = scenario::load_scenario(path, {{"cluster.gpu", "h100-sxm"}});
  const auto plan = plan::make_plan(h100);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("recorded on NVIDIA A100-PG509-200, but the cluster's GPU is h100-sxm"),
            std::string::npos)
      << plan.warnings[0];
  const auto result = simulate(h100).result;
  EXPECT_EQ(result.warnings, plan.warnings);
  EXPECT_NE(report::format_summary(result).find("recorded on NVIDIA A100-PG509-200"), std::string::npos);
  EXPECT_EQ(report::run_result_from_json(report::to_json(result)).warnings, plan.warnings); // across processes too
}

TEST(ShippedProfilerTraces, OneGpuReplaysTheMeasuredStepWithoutItsCommunication) {
  auto s = scenario::load_scenario(kScenarios + "resnet50-ddp-a100x2-pytorch-trace.json");
  s.cluster.gpus_per_node = 1;
  const auto plan = plan::make_plan(s);
  EXPECT_EQ(plan.buckets, 0);
  double kernels = 0;
  for (const auto& op : plan.graph.program_of(0).ops)
    if (const auto* c = std::get_if<graph::Compute>(&op.body); c && op.stream == graph::Stream::compute)
      kernels += c->seconds;
  // ProfilerStep#5's kernels, copies and sets besides NCCL's: 39.30 ms (summed from the trace's events).
  EXPECT_NEAR(kernels, 39.30e-3, 0.01e-3);
  EXPECT_NEAR(simulate(s).result.breakdown.compute, kernels, 1e-9);
}

TEST(ShippedProfilerTraces, EightRankJobWithinItsMeasuredStep) {
  const auto s = scenario::load_scenario(kScenarios + "ddp-a100x8-pytorch-trace.json");
  // Measured: ProfilerStep#1013's first GPU activity to ProfilerStep#1014's, 78.52 ms. dtsim: 76.09 ms (-3.1%): its
  // all-to-alls run at NVSwitch's rate where the job's NCCL kernels took longer (they include waits for the other
  // ranks, which a replay of one rank's step cannot know).
  const double measured = 78.52e-3;
  EXPECT_NEAR(simulate(s).result.iteration.mean, measured, 0.05 * measured);
}

} // namespace shipped

} // namespace
} // namespace dtsim
