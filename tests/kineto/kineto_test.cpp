// PyTorch profiler traces read into one GPU's step: the sample step of trace_builder.hpp, whose times are worked out
// there by hand, and the traces that must be refused.
#include "sim/kineto/kineto.hpp"

#include "io/gzip.hpp"
#include "tests/kineto/trace_builder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dtsim::kineto {
namespace {

using test::sample_step;

TEST(Kineto, StepKeepsMeasuredKernelsGapsAndPhases) {
  const auto step = parse_profile(sample_step().text(), "t.json");
  EXPECT_EQ(step.step, "ProfilerStep#1"); // the last step another step follows
  ASSERT_EQ(step.activities.size(), 6u);
  const double seconds[] = {10e-6, 100e-6, 200e-6, 100e-6, 50e-6, 20e-6};
  const double gaps[] = {0, 40e-6, 150e-6, 10e-6, 60e-6, 0}; // the 60 us before sgd held the NCCL kernel's 30 us
  const Phase phases[] = {Phase::forward,  Phase::forward,   Phase::backward,
                          Phase::backward, Phase::optimizer, Phase::optimizer};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(step.activities[i].seconds, seconds[i], 1e-12) << i;
    EXPECT_NEAR(step.activities[i].gap_before, gaps[i], 1e-12) << i;
    EXPECT_NEAR(step.activities[i].comm_wait, i == 4 ? 30e-6 : 0, 1e-12) << i;
    EXPECT_EQ(step.activities[i].phase, phases[i]) << i;
  }
  EXPECT_TRUE(step.activities[0].copy);
  EXPECT_DOUBLE_EQ(step.activities[0].bytes, 4e6);
  EXPECT_EQ(step.activities[1].name, "ampere_sgemm_128x64_nn");
  EXPECT_NEAR(step.gap_after, 310e-6, 1e-12);
  EXPECT_NEAR(step.busy_seconds(), 480e-6, 1e-12);
  EXPECT_NEAR(step.gap_seconds(), 570e-6, 1e-12);
  EXPECT_EQ(step.communication_kernels, 1);
  EXPECT_TRUE(step.collectives.empty()); // one GPU's trace: no record_param_comms
}

TEST(Kineto, GradientsInTheOrderBackwardStoredThem) {
  const auto step = parse_profile(sample_step().text(), "t.json");
  EXPECT_TRUE(step.shapes);
  EXPECT_EQ(step.parameter_tensors, 2);
  ASSERT_EQ(step.gradients.size(), 2u);
  EXPECT_DOUBLE_EQ(step.gradients[0].bytes, 1000.0 * 1000 * 4); // [1000, 1000] float
  EXPECT_EQ(step.gradients[0].ready_after, 2u);
  EXPECT_DOUBLE_EQ(step.gradients[1].bytes, 500000.0 * 4);
  EXPECT_EQ(step.gradients[1].ready_after, 3u);
  EXPECT_DOUBLE_EQ(step.gradient_bytes(), 6e6);
}

TEST(Kineto, WithoutRecordShapesTheGradientsAreCountedNotSized) {
  const auto step = parse_profile(sample_step(false).text(), "t.json");
  EXPECT_FALSE(step.shapes);
  EXPECT_EQ(step.parameter_tensors, 2);
  EXPECT_TRUE(step.gradients.empty());
}

TEST(Kineto, PeakMemoryOfTheStepFromTheAllocatorsRecord) {
  EXPECT_FALSE(parse_profile(sample_step().text(), "t.json").peak_allocated); // recorded without profile_memory
  auto t = sample_step();
  t.memory(100, 1e9, 4e9).memory(200, 3e9, 4e9).memory(300, 2e9, 5e9); // in step 1
  t.memory(1500, 9e9, 9e9);                                            // in step 2
  t.memory(250, 20e9, 20e9, 0);                                        // the host's memory
  const auto step = parse_profile(t.text(), "t.json");
  EXPECT_EQ(step.peak_allocated, 3e9);
  EXPECT_EQ(step.peak_reserved, 5e9);
}

TEST(Kineto, ChosenStepAndTheLastStep) {
  const auto second = parse_profile(sample_step().text(), "t.json", {2});
  EXPECT_EQ(second.step, "ProfilerStep#2");
  ASSERT_EQ(second.activities.size(), 1u);
  EXPECT_NEAR(second.activities[0].seconds, 50e-6, 1e-12);
  EXPECT_DOUBLE_EQ(second.gap_after, 0); // no step follows
  try {
    parse_profile(sample_step().text(), "t.json", {7});
    FAIL() << "step 7 accepted";
  } catch (const ProfileError& e) {
    EXPECT_TRUE(e.about_step());
    EXPECT_NE(std::string(e.what()).find("no step 7 in the trace; it has 1, 2"), std::string::npos) << e.what();
  }
}

TEST(Kineto, WithoutStepAnnotationsTheWholeTraceIsTheStep) {
  test::KinetoTraceBuilder t;
  t.gpu("a", 0, 10, 5, 1).gpu("b", 1, 20, 5, 1);
  const auto step = parse_profile(t.text(), "t.json");
  EXPECT_EQ(step.step, "");
  ASSERT_EQ(step.activities.size(), 2u);
  EXPECT_NEAR(step.activities[1].gap_before, 5e-6, 1e-12);
}

TEST(Kineto, ChromeTraceAsAnArrayOfEvents) {
  // The JSON Array Format of the Trace Event Format: the events without the enclosing object. Two steps; step 1's
  // forward GEMM (launched in aten::mm) and backward GEMM (launched in the autograd engine), 50 us each, 30 us apart,
  // the backward one launched before its gradient's AccumulateGrad of 1024 x 1024 bf16 (2 MiB), whose node then
  // launches DDP's all-reduce of 1,048,576 bf16 elements (its reducer's hook).
  const auto step = parse_profile(R"([
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 500},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 500, "dur": 500},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 5,
     "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": 100, "dur": 50,
     "args": {"correlation": 7, "stream": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 1, "tid": 2,
     "ts": 40, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 45, "dur": 5,
     "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16_nt", "pid": 0, "tid": 7, "ts": 180, "dur": 50,
     "args": {"correlation": 8, "stream": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
     "pid": 1, "tid": 2, "ts": 61, "dur": 9},
    {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 1, "tid": 2, "ts": 62, "dur": 3,
     "args": {"Input Dims": [[1024, 1024]], "Input type": ["c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 2, "ts": 66, "dur": 3,
     "args": {"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
              "dtype": "BFloat16"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 505, "dur": 5,
     "args": {"correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": 600, "dur": 50,
     "args": {"correlation": 9, "stream": 7}}
  ])",
                                  "t.json");
  ASSERT_EQ(step.activities.size(), 2u);
  EXPECT_EQ(step.activities[0].phase, Phase::forward);
  EXPECT_EQ(step.activities[1].phase, Phase::backward);
  EXPECT_NEAR(step.activities[1].gap_before, 30e-6, 1e-12);
  EXPECT_NEAR(step.gap_after, 370e-6, 1e-12); // 230 us to step 2's first kernel at 600 us
  ASSERT_EQ(step.gradients.size(), 1u);
  EXPECT_DOUBLE_EQ(step.gradients[0].bytes, 1024.0 * 1024 * 2);
  EXPECT_EQ(step.gradients[0].ready_after, 1u);
  ASSERT_EQ(step.collectives.size(), 1u);
  EXPECT_EQ(step.collectives[0].name, "allreduce");
  EXPECT_DOUBLE_EQ(step.collectives[0].bytes, 1048576.0 * 2);
  EXPECT_EQ(step.collectives[0].phase, Phase::backward);
  EXPECT_EQ(step.collectives[0].ready_after, 1u);
}

TEST(Kineto, GzipTraceReadsAsThePlainOne) {
  const auto dir = std::filesystem::temp_directory_path() / ("dtsim-kineto-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "step.pt.trace.json.gz";
  const auto text = sample_step().text();
  const auto compressed = io::gzip(text);
  std::ofstream(file, std::ios::binary) << compressed;
  const auto step = read_profile(file);
  EXPECT_EQ(step.activities.size(), 6u);
  EXPECT_NEAR(step.busy_seconds(), 480e-6, 1e-12);
  // Reading it holds the compressed copy, then the text and the events kept from it (2.1 times the text); the text's
  // length from gzip's trailer.
  EXPECT_DOUBLE_EQ(reading_bytes(file),
                   static_cast<double>(compressed.size()) + 2.1 * static_cast<double>(text.size()));
  std::filesystem::remove_all(dir);
}

void expect_refused(const std::string& text, const std::string& says) {
  try {
    parse_profile(text, "bad.json");
    FAIL() << "accepted: " << text.substr(0, 200);
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.json: ", 0), 0u) << e.what();
  }
}

TEST(Kineto, BadTracesAreRefusedSayingWhy) {
  expect_refused("{", "not a JSON trace");
  expect_refused(R"({"events": []})", "no \"traceEvents\" array");
  expect_refused(R"("trace")", "expected a Chrome trace");
  expect_refused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]})",
                 "/traceEvents/0: a \"kernel\" event without a number \"ts\"");
  expect_refused(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -1}]})",
                 "/traceEvents/0: \"dur\" is -1");
  expect_refused(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1}]})",
                 "no GPU kernels, copies or sets besides NCCL's");
  auto pipelined = sample_step(); // a kernel launched in step 1 that runs until 1,200 us, past step 2's first (1,100)
  pipelined.gpu("embedding_backward", 600, 1000, 200, 1, 9);
  expect_refused(pipelined.text(), "ProfilerStep#1's GPU work runs 0.10 ms into the next step's");
  auto t = sample_step();
  t.range("cpu_op", "torch::autograd::AccumulateGrad", 430, 1, 2,
          {{"Input Dims", {{4}}}, {"Input type", {"c10::QInt8"}}});
  expect_refused(t.text(), "gradient has type \"c10::QInt8\"");
}

} // namespace
} // namespace dtsim::kineto
