#pragma once
// sim/kineto's private parts: the trace's events as the reader keeps them, and the reader, whose collection of events
// (events.cpp) and making of the step from them (kineto.cpp) are two files.
#include "sim/kineto/kineto.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtsim::kineto::detail {

using json = nlohmann::json;

constexpr double kMicro = 1e-6; // Chrome trace times are microseconds

// A host range open on a thread: an op (cpu_op) or a record_function (user_annotation).
struct HostRange {
  double start = 0, end = 0;
  std::string thread;
  Phase marks = Phase::forward; // backward for the autograd engine's nodes, optimizer for torch.optim's steps
  bool marking = false;
};

struct GpuEvent {
  std::string name;
  double start = 0, end = 0; // microseconds
  bool copy = false;
  double bytes = 0;
  std::optional<std::int64_t> correlation;
  double launch = 0;  // when the host launched it (its own start when the launch is not in the trace)
  std::string thread; // the launching thread (empty: unknown)
};

struct StepSpan {
  std::int64_t number = 0;
  std::string name;
  double start = 0, end = 0;
};

struct CommLaunch {
  Collective collective;
  double start = 0;
  std::string thread;
};

struct AccumulateGrad {
  double start = 0, end = 0;
  std::optional<double> bytes; // unset without record_shapes
};

class Reader {
public:
  Reader(const std::string& file, const ReadOptions& options) : file_(file), options_(options) {}
  // Keeps what the reader needs of one trace event (the index-th of "traceEvents"), as the parser reads it.
  void collect(const json& event, std::size_t index);
  // The step, from the events collected; `rest` is the document without its events (the form is checked here).
  ProfiledStep finish(const json& rest);

private:
  [[noreturn]] void fail(const std::string& message, bool about_step = false) const {
    throw ProfileError(fmt::format("{}: {}", file_, message), about_step);
  }
  [[noreturn]] void fail_at(std::size_t index, const std::string& message) const {
    fail(fmt::format("/traceEvents/{}: {}", index, message));
  }
  void collect_memory(const json& event);
  void collect_comm(const json& args, double start, std::string thread, std::size_t index);
  void collect_annotated_comm(const std::string& name, const json& args, double start, std::string thread,
                              std::size_t index);
  void choose_step();
  std::optional<double> gradient_bytes(const json& args, std::size_t index) const;
  double nccl_overlap(double from, double to) const;
  // Phase of each (thread, time) asked: the host ranges open on that thread then.
  std::vector<Phase> phases_at(const std::vector<std::pair<std::string, double>>& asked) const;
  void assign_phases(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const;
  void place_collectives(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const;
  // For each of `times`, the last activity (in GPU order) among those launched at or before it.
  std::vector<std::optional<std::size_t>> launched_by(const std::vector<GpuEvent*>& kept,
                                                      const std::vector<double>& times) const;
  void place_gradients(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const;
  bool in_step(double t) const { return t >= window_.first && t <= window_.second; }

  std::string file_;
  ReadOptions options_;
  std::vector<StepSpan> steps_;
  std::vector<HostRange> ranges_;
  std::unordered_map<std::int64_t, std::pair<double, std::string>> launches_; // correlation -> (time, thread)
  std::vector<GpuEvent> gpu_;
  std::vector<std::pair<double, double>> nccl_; // NCCL kernels' spans, merged, in order
  std::vector<AccumulateGrad> accumulates_;
  std::vector<CommLaunch> comms_;
  struct MemorySample {
    double time = 0, allocated = 0, reserved = 0;
  };
  std::vector<MemorySample> memory_;        // the GPU's caching allocator after each allocation or free
  std::vector<CommLaunch> annotated_comms_; // "nccl:NAME" ranges with their inputs' shapes (PyTorch before 2.1)
  std::pair<double, double> window_{-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  std::optional<std::pair<double, double>> next_window_;
  std::string step_name_;
};

// Bytes a trace can plausibly name for one tensor or collective; more is a corrupt field, not a workload.
constexpr double kMaxBytes = 1e15;

} // namespace dtsim::kineto::detail
