#pragma once
// Chrome trace events as torch.profiler writes them (the fields sim/kineto reads), for tests that build small traces.
#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::test {

struct KinetoTraceBuilder {
  nlohmann::json events = nlohmann::json::array();
  int next_correlation = 1;

  // A host range on thread `tid` of process 1: a cpu_op, or a user_annotation (record_function, ProfilerStep#N).
  KinetoTraceBuilder& range(const std::string& cat, const std::string& name, double ts, double dur, int tid,
                            nlohmann::json args = nlohmann::json::object()) {
    events.push_back({{"ph", "X"},
                      {"cat", cat},
                      {"name", name},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", ts},
                      {"dur", dur},
                      {"args", std::move(args)}});
    return *this;
  }
  // A GPU activity launched by thread `tid` at `launch` (cudaLaunchKernel, or cudaMemcpyAsync for a copy) and run on
  // the GPU from `start` for `dur` microseconds, on `stream`.
  KinetoTraceBuilder& gpu(const std::string& name, double launch, double start, double dur, int tid, int stream = 7,
                          const std::string& cat = "kernel", nlohmann::json args = nlohmann::json::object()) {
    const int correlation = next_correlation++;
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", cat == "kernel" ? "cudaLaunchKernel" : "cudaMemcpyAsync"},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", launch},
                      {"dur", 2.0},
                      {"args", {{"correlation", correlation}}}});
    args["correlation"] = correlation;
    args["stream"] = stream;
    args["device"] = 0;
    events.push_back({{"ph", "X"},
                      {"cat", cat},
                      {"name", name},
                      {"pid", 0},
                      {"tid", stream},
                      {"ts", start},
                      {"dur", dur},
                      {"args", std::move(args)}});
    return *this;
  }
  // profile_memory=True's record of one allocation or free: the caching allocator's totals after it.
  KinetoTraceBuilder& memory(double ts, double allocated, double reserved, int device_type = 1) {
    events.push_back({{"ph", "i"},
                      {"cat", "cpu_instant_event"},
                      {"s", "t"},
                      {"name", "[memory]"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", ts},
                      {"args",
                       {{"Total Reserved", reserved},
                        {"Total Allocated", allocated},
                        {"Bytes", 1024},
                        {"Device Type", device_type},
                        {"Device Id", device_type == 1 ? 0 : -1}}}});
    return *this;
  }
  std::string text() const { return nlohmann::json{{"schemaVersion", 1}, {"traceEvents", events}}.dump(); }
};

// One step of a made-up model, every time in microseconds, traced over two steps (ProfilerStep#1 at [0, 1000],
// ProfilerStep#2 at [1000, 2000]); thread 1 runs the Python loop, thread 2 the autograd engine.
//   GPU, stream 7:  copy [50, 60]  fc [100, 200]  fc grad [350, 550]  bias grad [560, 660]  (NCCL [670, 700])
//                   sgd [720, 770], and on stream 8 sgd2 [740, 790]; next step's first kernel at 1100.
//   Busy: 10 + 100 + 200 + 100 + 50 + (790 - 770 = 20, sgd2 beside sgd) = 480 us.
//   Gaps: 40 + 150 + 10 + 60 (30 of them beside an NCCL kernel) + 0, and 310 to the next step = 570 us; 1,050 us in
//   all, or 1,020 us where the wait beside the NCCL kernel goes (it is the wait for communication after backward).
//   Gradients: fc.weight [1000, 1000] float = 4e6 bytes, stored by an AccumulateGrad ending at 358 (after fc grad's
//   launch at 310: ready after activity 2); fc.bias [500000] float = 2e6 bytes, ending at 428 (after bias grad's launch
//   at 405: ready after activity 3).
inline KinetoTraceBuilder sample_step(bool shapes = true) {
  using nlohmann::json;
  const auto grad = [&](std::int64_t elements) {
    return shapes ? json{{"Input Dims", {{elements}}}, {"Input type", {"float"}}} : json::object();
  };
  KinetoTraceBuilder t;
  t.range("user_annotation", "ProfilerStep#1", 0, 1000, 1).range("user_annotation", "ProfilerStep#2", 1000, 1000, 1);
  t.gpu("Memcpy HtoD (Pageable -> Device)", 5, 50, 10, 1, 7, "gpu_memcpy", {{"bytes", 4e6}});
  t.range("cpu_op", "aten::linear", 10, 30, 1).gpu("ampere_sgemm_128x64_nn", 20, 100, 100, 1);
  t.range("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 300, 40, 2)
      .gpu("ampere_sgemm_128x64_nt", 310, 350, 200, 2);
  t.range("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 345, 15, 2)
      .range("cpu_op", "torch::autograd::AccumulateGrad", 346, 12, 2, grad(1000 * 1000));
  t.range("cpu_op", "autograd::engine::evaluate_function: SumBackward0", 400, 20, 2)
      .gpu("reduce_kernel", 405, 560, 100, 2);
  t.range("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 422, 8, 2)
      .range("cpu_op", "torch::autograd::AccumulateGrad", 423, 5, 2, grad(500000));
  t.events.push_back({{"ph", "X"},
                      {"cat", "kernel"},
                      {"name", "ncclKernel_AllReduce_RING_LL_Sum_float"},
                      {"pid", 0},
                      {"tid", 20},
                      {"ts", 670},
                      {"dur", 30},
                      {"args", {{"stream", 20}}}});
  t.range("user_annotation", "Optimizer.step#SGD.step", 700, 100, 1)
      .range("cpu_op", "aten::_foreach_add_", 705, 20, 1)
      .gpu("multi_tensor_apply_kernel", 710, 720, 50, 1)
      .gpu("multi_tensor_apply_kernel", 712, 740, 50, 1, 8);
  t.range("cpu_op", "aten::linear", 1005, 30, 1).gpu("ampere_sgemm_128x64_nn", 1010, 1100, 50, 1);
  return t;
}

} // namespace dtsim::test
