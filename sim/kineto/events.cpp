// Collecting a trace's events: the fields sim/kineto reads, each checked before it is used.
#include "sim/kineto/reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace dtsim::kineto::detail {

namespace {

// A string field, or "" when it is absent or not a string (json::value would throw on another type).
std::string text_of(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

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

} // namespace

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

} // namespace dtsim::kineto::detail
