#include "sim/kineto/kineto.hpp"

#include "io/gzip.hpp"
#include "io/json_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

namespace dtsim::kineto {

std::string_view to_string(Phase phase) {
  switch (phase) {
  case Phase::forward:
    return "forward";
  case Phase::backward:
    return "backward";
  case Phase::optimizer:
    return "optimizer";
  }
  return "?";
}

double ProfiledStep::busy_seconds() const {
  return std::accumulate(activities.begin(), activities.end(), 0.0,
                         [](double sum, const Activity& a) { return sum + a.seconds; });
}

double ProfiledStep::gap_seconds() const {
  return std::accumulate(activities.begin(), activities.end(), gap_after,
                         [](double sum, const Activity& a) { return sum + a.gap_before; });
}

double ProfiledStep::gradient_bytes() const {
  return std::accumulate(gradients.begin(), gradients.end(), 0.0,
                         [](double sum, const Gradient& g) { return sum + g.bytes; });
}

namespace {

using json = nlohmann::json;

// A step of a large model is tens to hundreds of megabytes of JSON; its parsed form takes several times that.
constexpr std::size_t kMaxTraceBytes = std::size_t{512} << 20;
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
  ProfiledStep read(const json& root);

private:
  [[noreturn]] void fail(const std::string& message, bool about_step = false) const {
    throw ProfileError(fmt::format("{}: {}", file_, message), about_step);
  }
  [[noreturn]] void fail_at(std::size_t index, const std::string& message) const {
    fail(fmt::format("/traceEvents/{}: {}", index, message));
  }
  void collect(const json& event, std::size_t index);
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

// A string field, or "" when it is absent or not a string (json::value would throw on another type).
std::string text_of(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Bytes a trace can plausibly name for one tensor or collective; more is a corrupt field, not a workload.
constexpr double kMaxBytes = 1e15;

std::string thread_key(const json& event) {
  const auto part = [&](const char* key) { return event.contains(key) ? event[key].dump() : std::string("?"); };
  return part("pid") + "/" + part("tid");
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Bytes of one element of a tensor type as the profiler names it (c10's ScalarType names).
std::optional<double> element_bytes(std::string_view type) {
  static const std::map<std::string_view, double, std::less<>> sizes = {{"float", 4},
                                                                        {"double", 8},
                                                                        {"c10::Half", 2},
                                                                        {"c10::BFloat16", 2},
                                                                        {"c10::Float8_e4m3fn", 1},
                                                                        {"c10::Float8_e5m2", 1},
                                                                        {"c10::complex<float>", 8},
                                                                        {"c10::complex<double>", 16}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? std::nullopt : std::optional<double>(it->second);
}

// Bytes of one element as c10d's record_param_comms names the dtype (ScalarType's short names).
std::optional<double> comm_element_bytes(std::string_view type) {
  static const std::map<std::string_view, double, std::less<>> sizes = {
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Long", 8},          {"Int", 4},
      {"Short", 2}, {"Byte", 1},   {"Char", 1}, {"Bool", 1},     {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? std::nullopt : std::optional<double>(it->second);
}

void Reader::collect_comm(const json& args, double start, std::string thread, std::size_t index) {
  if (!args.contains("Collective name") || !args["Collective name"].is_string()) return;
  const std::string name = args["Collective name"];
  if (name == "wait" || name == "init") return; // not communication
  const auto nelems = [&](const char* key) {
    if (!args.contains(key)) return 0.0;
    if (!args[key].is_number_integer() || args[key].get<std::int64_t>() < 0)
      fail_at(index, fmt::format("record_param_comms' \"{}\" is {}; expected a count >= 0", key, args[key].dump()));
    return args[key].get<double>();
  };
  const double elements = std::max(nelems("In msg nelems"), nelems("Out msg nelems"));
  const std::string dtype = args.contains("dtype") && args["dtype"].is_string() ? args["dtype"].get<std::string>() : "";
  const auto size = comm_element_bytes(dtype);
  if (!size && elements > 0)
    fail_at(index,
            fmt::format("record_param_comms' dtype \"{}\" is not one dtsim knows (Float, Half, BFloat16, ...)", dtype));
  if (elements * size.value_or(0) > kMaxBytes)
    fail_at(index,
            fmt::format("record_param_comms moves {} bytes; expected at most 1e15", elements * size.value_or(0)));
  CommLaunch launch;
  launch.collective.name = name;
  launch.collective.bytes = elements * size.value_or(0);
  launch.start = start;
  launch.thread = std::move(thread);
  comms_.push_back(std::move(launch));
}

// Before PyTorch 2.1 record_param_comms carried no sizes; ProcessGroupNCCL's "nccl:all_reduce" range did, as its
// inputs' shapes and types when recorded with record_shapes=True: the collective's bytes are its inputs' (an
// all-gather's output is the group size times them, which this reading leaves to the replay's group).
void Reader::collect_annotated_comm(const std::string& name, const json& args, double start, std::string thread,
                                    std::size_t index) {
  if (!args.contains("Input Dims") || !args["Input Dims"].is_array()) return;
  const json& dims = args["Input Dims"];
  const auto& types = args.contains("Input type") && args["Input type"].is_array() ? args["Input type"] : json::array();
  double bytes = 0;
  for (std::size_t t = 0; t < dims.size() && t < types.size(); ++t) {
    if (!dims[t].is_array() || !types[t].is_string()) continue;
    const auto size = element_bytes(types[t].get<std::string>());
    if (!size) continue; // scalars, lists
    double elements = 1;
    for (const auto& d : dims[t]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        fail_at(index, fmt::format("\"nccl:{}\"'s \"Input Dims\" holds {}; expected sizes >= 0", name, d.dump()));
      elements *= d.get<double>();
    }
    bytes += elements * *size;
  }
  if (!(bytes <= kMaxBytes))
    fail_at(index, fmt::format("\"nccl:{}\" moves {} bytes; expected at most 1e15", name, bytes));
  CommLaunch launch;
  launch.collective.name = name == "all_reduce" ? "allreduce" : name;
  launch.collective.bytes = bytes;
  launch.start = start;
  launch.thread = std::move(thread);
  annotated_comms_.push_back(std::move(launch));
}

// profile_memory=True: an instant event per allocation and free, with the allocator's totals after it ("Device Type"
// 1 is CUDA; the host's allocations have type 0).
void Reader::collect_memory(const json& event) {
  if (!event.contains("args") || !event["args"].is_object() || !event.contains("ts") || !event["ts"].is_number())
    return;
  const json& args = event["args"];
  const auto number = [&](const char* key) {
    return args.contains(key) && args[key].is_number() ? args[key].get<double>() : -1.0;
  };
  if (number("Device Type") != 1 || number("Total Allocated") < 0) return;
  memory_.push_back({event["ts"].get<double>(), number("Total Allocated"), std::max(0.0, number("Total Reserved"))});
}

void Reader::collect(const json& event, std::size_t index) {
  if (!event.is_object()) return;
  if (text_of(event, "ph") == "i" && text_of(event, "name") == "[memory]") {
    collect_memory(event);
    return;
  }
  if (text_of(event, "ph") != "X" || !event.contains("cat") || !event["cat"].is_string())
    return; // metadata, flow arrows, counters, other instant events
  const std::string cat = event["cat"];
  const bool host = cat == "cpu_op" || cat == "user_annotation";
  const bool runtime = cat == "cuda_runtime" || cat == "cuda_driver";
  const bool gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
  if (!host && !runtime && !gpu) return;
  const auto number = [&](const char* key) {
    if (!event.contains(key) || !event[key].is_number())
      fail_at(index, fmt::format("a \"{}\" event without a number \"{}\" (microseconds)", cat, key));
    const double value = event[key];
    if (!std::isfinite(value) || (key == std::string_view("dur") && value < 0))
      fail_at(index, fmt::format("\"{}\" is {}; expected a finite time, a duration >= 0", key, value));
    return value;
  };
  const double start = number("ts"), end = start + number("dur");
  if (!std::isfinite(end)) fail_at(index, "\"ts\" + \"dur\" is not a finite time");
  const std::string name = text_of(event, "name");
  static const json no_args = json::object();
  const json& args = event.contains("args") && event["args"].is_object() ? event["args"] : no_args;
  std::optional<std::int64_t> correlation;
  if (args.contains("correlation") && args["correlation"].is_number_integer())
    correlation = args["correlation"].get<std::int64_t>();
  if (cat == "user_annotation" && starts_with(name, "ProfilerStep#")) {
    const auto digits = name.substr(13);
    if (!digits.empty() && digits.size() < 18 && std::all_of(digits.begin(), digits.end(), ::isdigit))
      steps_.push_back({std::stoll(digits), name, start, end});
    return;
  }
  if (host) {
    HostRange range;
    range.start = start;
    range.end = end;
    range.thread = thread_key(event);
    if (starts_with(name, "autograd::engine::evaluate_function")) {
      range.marks = Phase::backward;
      range.marking = true;
    } else if (starts_with(name, "Optimizer.step#") || starts_with(name, "Optimizer.zero_grad#")) {
      range.marks = Phase::optimizer;
      range.marking = true;
    }
    ranges_.push_back(std::move(range));
    if (cat == "cpu_op" && name == "torch::autograd::AccumulateGrad")
      accumulates_.push_back({start, end, gradient_bytes(args, index)});
    if (cat == "cpu_op" && name == "record_param_comms") collect_comm(args, start, thread_key(event), index);
    if (starts_with(name, "nccl:")) collect_annotated_comm(name.substr(5), args, start, thread_key(event), index);
  } else if (runtime) {
    if (correlation) launches_[*correlation] = {start, thread_key(event)};
  } else if (starts_with(name, "nccl")) { // ncclKernel_AllReduce_..., ncclDevKernel_...
    nccl_.emplace_back(start, end);
  } else {
    GpuEvent g;
    g.name = name;
    g.start = start;
    g.end = end;
    g.copy = cat != "kernel";
    if (args.contains("bytes") && args["bytes"].is_number()) g.bytes = std::max(0.0, args["bytes"].get<double>());
    g.correlation = correlation;
    gpu_.push_back(std::move(g));
  }
}

// With record_shapes=True the profiler gives each op's inputs' shapes ("Input Dims": [[64, 3, 7, 7]]) and types
// ("Input type": ["float"]); AccumulateGrad's one input is the gradient.
std::optional<double> Reader::gradient_bytes(const json& args, std::size_t index) const {
  if (!args.contains("Input Dims") || !args["Input Dims"].is_array() || args["Input Dims"].empty()) return std::nullopt;
  const json& dims = args["Input Dims"][0];
  if (!dims.is_array()) return std::nullopt;
  double elements = 1;
  for (const auto& d : dims) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
      fail_at(index, fmt::format("AccumulateGrad's \"Input Dims\" holds {}; expected sizes >= 0", d.dump()));
    elements *= d.get<double>();
  }
  const auto& types = args.contains("Input type") && args["Input type"].is_array() ? args["Input type"] : json::array();
  // Newer profilers write [[]] and [""] for AccumulateGrad's input: no shape given.
  if (types.empty() || !types[0].is_string() || types[0].get<std::string>().empty()) return std::nullopt;
  const auto size = element_bytes(types[0].get<std::string>());
  if (!size)
    fail_at(index, fmt::format("AccumulateGrad's gradient has type \"{}\"; expected float, double, c10::Half, "
                               "c10::BFloat16 or an fp8 type",
                               types[0].get<std::string>()));
  if (elements * *size > kMaxBytes)
    fail_at(index, fmt::format("AccumulateGrad's gradient of {} bytes; expected at most 1e15", elements * *size));
  return elements * *size;
}

void Reader::choose_step() {
  std::sort(steps_.begin(), steps_.end(), [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  if (steps_.empty()) {
    if (options_.step)
      fail(fmt::format("no step {}: the trace has no \"ProfilerStep#N\" annotations (call profiler.step() each "
                       "iteration), so its whole span is one step",
                       *options_.step),
           true);
    return;
  }
  std::size_t chosen = steps_.size() >= 2 ? steps_.size() - 2 : 0;
  if (options_.step) {
    const auto it =
        std::find_if(steps_.begin(), steps_.end(), [&](const StepSpan& s) { return s.number == *options_.step; });
    if (it == steps_.end()) {
      std::vector<std::int64_t> numbers;
      for (const auto& s : steps_)
        numbers.push_back(s.number);
      fail(fmt::format("no step {} in the trace; it has {}", *options_.step, fmt::join(numbers, ", ")), true);
    }
    chosen = static_cast<std::size_t>(it - steps_.begin());
  }
  window_ = {steps_[chosen].start, steps_[chosen].end};
  step_name_ = steps_[chosen].name;
  if (chosen + 1 < steps_.size()) next_window_ = {steps_[chosen + 1].start, steps_[chosen + 1].end};
}

// Microseconds in [from, to] that an NCCL kernel ran in.
double Reader::nccl_overlap(double from, double to) const {
  double covered = 0;
  for (const auto& [start, end] : nccl_)
    covered += std::max(0.0, std::min(end, to) - std::max(start, from));
  return covered;
}

// The phase at each (thread, time) from the host ranges open on that thread then: a sweep per thread with a stack of
// open ranges (a thread's ranges nest).
std::vector<Phase> Reader::phases_at(const std::vector<std::pair<std::string, double>>& asked) const {
  std::vector<Phase> phases(asked.size(), Phase::forward);
  std::map<std::string, std::vector<const HostRange*>> by_thread;
  for (const auto& r : ranges_)
    by_thread[r.thread].push_back(&r);
  std::map<std::string, std::vector<std::size_t>> queries;
  for (std::size_t i = 0; i < asked.size(); ++i)
    if (!asked[i].first.empty()) queries[asked[i].first].push_back(i);
  for (auto& [thread, indices] : queries) {
    auto& ranges = by_thread[thread];
    std::sort(ranges.begin(), ranges.end(), [](const HostRange* a, const HostRange* b) {
      return a->start != b->start ? a->start < b->start : a->end > b->end;
    });
    std::sort(indices.begin(), indices.end(),
              [&](std::size_t a, std::size_t b) { return asked[a].second < asked[b].second; });
    std::vector<const HostRange*> open;
    int backward = 0, optimizer = 0;
    const auto count = [&](const HostRange* r, int by) {
      if (r->marking) (r->marks == Phase::backward ? backward : optimizer) += by;
    };
    const auto close_before = [&](double t) {
      while (!open.empty() && open.back()->end < t) {
        count(open.back(), -1);
        open.pop_back();
      }
    };
    std::size_t next = 0;
    for (std::size_t q : indices) {
      const double t = asked[q].second;
      for (; next < ranges.size() && ranges[next]->start <= t; ++next) {
        close_before(ranges[next]->start);
        open.push_back(ranges[next]);
        count(ranges[next], +1);
      }
      close_before(t);
      phases[q] = optimizer > 0 ? Phase::optimizer : backward > 0 ? Phase::backward : Phase::forward;
    }
  }
  return phases;
}

void Reader::assign_phases(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const {
  std::vector<std::pair<std::string, double>> asked;
  for (const auto* g : kept)
    asked.emplace_back(g->thread, g->launch);
  const auto phases = phases_at(asked);
  for (std::size_t i = 0; i < kept.size(); ++i)
    out.activities[i].phase = phases[i];
}

std::vector<std::optional<std::size_t>> Reader::launched_by(const std::vector<GpuEvent*>& kept,
                                                            const std::vector<double>& times) const {
  std::vector<std::size_t> by_launch(kept.size());
  std::iota(by_launch.begin(), by_launch.end(), 0);
  std::stable_sort(by_launch.begin(), by_launch.end(),
                   [&](std::size_t a, std::size_t b) { return kept[a]->launch < kept[b]->launch; });
  std::vector<std::size_t> latest(by_launch.size()); // the last activity in GPU order among the first k launched
  for (std::size_t k = 0; k < by_launch.size(); ++k)
    latest[k] = std::max(by_launch[k], k ? latest[k - 1] : 0);
  std::vector<std::optional<std::size_t>> out;
  for (double t : times) {
    const auto launched = std::upper_bound(by_launch.begin(), by_launch.end(), t,
                                           [&](double time, std::size_t i) { return time < kept[i]->launch; }) -
                          by_launch.begin();
    out.push_back(launched > 0 ? std::optional(latest[static_cast<std::size_t>(launched) - 1]) : std::nullopt);
  }
  return out;
}

// A collective waits for what its stream was given before it: the activities launched before it.
void Reader::place_collectives(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const {
  std::vector<const CommLaunch*> step;
  for (const auto& c : comms_)
    if (in_step(c.start)) step.push_back(&c);
  if (step.empty()) // an older trace: the sizes are on ProcessGroupNCCL's ranges
    for (const auto& c : annotated_comms_)
      if (in_step(c.start)) step.push_back(&c);
  std::stable_sort(step.begin(), step.end(), [](const auto* a, const auto* b) { return a->start < b->start; });
  std::vector<std::pair<std::string, double>> asked;
  std::vector<double> times;
  for (const auto* c : step) {
    asked.emplace_back(c->thread, c->start);
    times.push_back(c->start);
  }
  const auto phases = phases_at(asked);
  const auto after = launched_by(kept, times);
  for (std::size_t i = 0; i < step.size(); ++i) {
    Collective c = step[i]->collective;
    c.phase = phases[i];
    c.ready_after = after[i];
    out.collectives.push_back(std::move(c));
  }
}

// A gradient is ready once the GPU has run everything launched before its AccumulateGrad ended.
void Reader::place_gradients(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const {
  std::vector<AccumulateGrad> step;
  for (const auto& a : accumulates_)
    if (in_step(a.start)) step.push_back(a);
  std::stable_sort(step.begin(), step.end(), [](const auto& a, const auto& b) { return a.end < b.end; });
  out.parameter_tensors = static_cast<int>(step.size());
  out.shapes =
      !step.empty() && std::all_of(step.begin(), step.end(), [](const auto& a) { return a.bytes.has_value(); });
  if (!out.shapes) return;
  std::vector<double> ends;
  for (const auto& a : step)
    ends.push_back(a.end);
  const auto after = launched_by(kept, ends);
  for (std::size_t i = 0; i < step.size(); ++i) {
    Gradient g;
    g.bytes = *step[i].bytes;
    g.ready_after = after[i];
    out.gradients.push_back(g);
  }
}

ProfiledStep Reader::read(const json& root) {
  const json* events = &root;
  if (root.is_object()) {
    if (!root.contains("traceEvents") || !root["traceEvents"].is_array())
      fail("no \"traceEvents\" array; expected a Chrome trace as torch.profiler's export_chrome_trace writes it");
    events = &root["traceEvents"];
  } else if (!root.is_array()) {
    fail("expected a Chrome trace: an object with \"traceEvents\", or an array of events");
  }
  for (std::size_t i = 0; i < events->size(); ++i)
    collect((*events)[i], i);
  choose_step();
  std::sort(nccl_.begin(), nccl_.end());

  std::vector<GpuEvent*> kept;
  std::optional<double> next_first; // the next step's first activity
  for (auto& g : gpu_) {
    g.launch = g.start;
    if (g.correlation)
      if (const auto it = launches_.find(*g.correlation); it != launches_.end()) {
        g.launch = it->second.first;
        g.thread = it->second.second;
      }
    if (in_step(g.launch))
      kept.push_back(&g);
    else if (next_window_ && g.launch >= next_window_->first && g.launch <= next_window_->second)
      next_first = std::min(next_first.value_or(g.start), g.start);
  }
  if (kept.empty())
    fail(step_name_.empty() ? std::string("no GPU kernels, copies or sets besides NCCL's")
                            : fmt::format("no GPU kernels, copies or sets launched in {}", step_name_));
  std::stable_sort(kept.begin(), kept.end(), [](const GpuEvent* a, const GpuEvent* b) {
    return a->start != b->start ? a->start < b->start : a->launch < b->launch;
  });
  ProfiledStep out;
  out.step = step_name_;
  double cursor = kept.front()->start;
  for (const auto* g : kept) {
    Activity a;
    a.name = g->name;
    a.copy = g->copy;
    a.bytes = g->bytes;
    if (g->start > cursor) {
      a.gap_before = (g->start - cursor) * kMicro;
      a.comm_wait = nccl_overlap(cursor, g->start) * kMicro;
    }
    a.seconds = std::max(0.0, g->end - std::max(g->start, cursor)) * kMicro;
    cursor = std::max(cursor, g->end);
    out.activities.push_back(std::move(a));
  }
  // A loop that launches the next step before this one's work is done (TorchRec's pipelined training, for one) has
  // steps that overlap on the GPU: one step replayed after another would be slower than the job. A sliver (a last
  // kernel on a side stream) is let go.
  if (next_first && cursor - *next_first > 0.01 * (*next_first - kept.front()->start))
    fail(fmt::format("{}'s GPU work runs {:.2f} ms into the next step's (its last ends at {:.2f} ms, the next step's "
                     "first starts at {:.2f} ms, from its own first): a pipelined training loop, whose steps dtsim "
                     "cannot replay one at a time",
                     step_name_, (cursor - *next_first) / 1e3, (cursor - kept.front()->start) / 1e3,
                     (*next_first - kept.front()->start) / 1e3));
  if (next_first && *next_first > cursor)
    out.gap_after = (*next_first - cursor - nccl_overlap(cursor, *next_first)) * kMicro;
  for (const auto& [start, end] : nccl_)
    if (end > kept.front()->start && start < cursor) ++out.communication_kernels;
  assign_phases(kept, out);
  place_gradients(kept, out);
  place_collectives(kept, out);
  for (const auto& m : memory_)
    if (in_step(m.time)) {
      out.peak_allocated = std::max(out.peak_allocated.value_or(0), m.allocated);
      out.peak_reserved = std::max(out.peak_reserved.value_or(0), m.reserved);
    }
  return out;
}

} // namespace

ProfiledStep parse_profile(const std::string& text, const std::string& file, const ReadOptions& options) {
  json root;
  try {
    root = io::parse_json(text);
  } catch (const io::JsonTextError& e) {
    throw ProfileError(fmt::format("{}: not a JSON trace: {}", file, e.what()));
  }
  return Reader(file, options).read(root);
}

ProfiledStep read_profile(const std::filesystem::path& file, const ReadOptions& options) {
  std::string text;
  try {
    text = io::read_text_file(file, "PyTorch profiler trace", kMaxTraceBytes);
  } catch (const io::FileError& e) {
    throw ProfileError(fmt::format("{}: {}", file.string(), e.what()));
  }
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
    try {
      text = io::gunzip(text, kMaxTraceBytes);
    } catch (const std::runtime_error& e) {
      throw ProfileError(fmt::format("{}: {}", file.string(), e.what()));
    }
  }
  return parse_profile(text, file.string(), options);
}

} // namespace dtsim::kineto
