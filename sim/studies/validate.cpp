#include "sim/studies/validate.hpp"
#include "sim/studies/points.hpp"
#include "sim/studies/validate_detail.hpp"

#include "io/json_text.hpp"

#include "calibration/fit.hpp"
#include "calibration/framework.hpp"
#include "calibration/precision.hpp"
#include "calibration/profile.hpp"
#include "calibration/sustained_clock.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace dtsim::studies::validate {
namespace {

using json = nlohmann::json;
using detail::join;
using detail::Reader;

constexpr std::array<std::pair<Metric, std::string_view>, 12> kMetrics = {{
    {Metric::throughput, "throughput"},
    {Metric::tokens_per_second, "tokens_per_second"},
    {Metric::iteration_seconds, "iteration_seconds"},
    {Metric::gpu_watts, "gpu_watts"},
    {Metric::tflops_per_gpu, "tflops_per_gpu"},
    {Metric::epoch_seconds, "epoch_seconds"},
    {Metric::seconds, "seconds"},
    {Metric::tflops, "tflops"},
    {Metric::bytes_per_second, "bytes_per_second"},
    {Metric::bus_bandwidth, "bus_bandwidth"},
    {Metric::collective_time, "collective_time"},
    {Metric::throughput_ratio, "throughput_ratio"},
}};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

Level level_of(Metric m) {
  if (is_op_metric(m)) return Level::op;
  return m == Metric::bus_bandwidth || m == Metric::collective_time ? Level::collective : Level::end_to_end;
}

std::vector<std::string> metric_names(Level level) {
  std::vector<std::string> names;
  for (const auto& [metric, name] : kMetrics)
    if (level_of(metric) == level) names.emplace_back(name);
  return names;
}

KernelOp parse_op(const Reader& r, const json& op) {
  r.only(op, "/op",
         {"profile", "kind", "precision", "m", "n", "k", "batch", "bytes", "sequence", "head_dim", "causal", "backward",
          "sustained", "kernels", "framework", "memory_op", "winograd"});
  KernelOp out;
  const auto flag = [&](const char* key, bool& field) {
    if (!op.contains(key)) return;
    if (!op.at(key).is_boolean()) r.fail(fmt::format("/op/{}", key), "expected true or false");
    field = op.at(key).get<bool>();
  };
  const auto precision = [&] {
    const auto name = r.text(op, "/op", "precision");
    const auto parsed = calibration::parse_precision(name);
    if (!parsed)
      r.fail("/op/precision",
             fmt::format("unknown precision \"{}\" (expected one of: {})", name, join(calibration::precision_names())));
    return *parsed;
  };
  flag("sustained", out.sustained);
  out.profile = r.text(op, "/op", "profile");
  if (!calibration::find_profile(out.profile))
    r.fail("/op/profile", fmt::format("unknown GPU profile \"{}\" (expected one of: {})", out.profile,
                                      join(calibration::profile_names())));
  const auto kind = r.text(op, "/op", "kind");
  if (kind == "gemm" || kind == "convolution") {
    const bool conv = kind == "convolution";
    out.kind = conv ? calibration::KernelClass::convolution : calibration::KernelClass::gemm;
    if (conv)
      r.only(op, "/op", {"profile", "kind", "precision", "m", "n", "k", "batch", "bytes", "sustained", "winograd"});
    else
      r.only(op, "/op", {"profile", "kind", "precision", "m", "n", "k", "batch", "sustained"});
    out.precision = precision();
    out.m = r.positive(op, "/op", "m");
    out.n = r.positive(op, "/op", "n");
    out.k = r.positive(op, "/op", "k");
    if (op.contains("batch")) out.batch = r.positive(op, "/op", "batch");
    if (conv) out.bytes = r.positive(op, "/op", "bytes");
    flag("winograd", out.winograd); // a 3x3, stride-1 convolution: Winograd or implicit GEMM, the faster
    // A row-major C = A B: k leads A, n leads B and C.
    out.unaligned = !conv && calibration::off_16_bytes({out.n, out.k}, out.precision);
  } else if (kind == "attention" || kind == "cudnn_attention") {
    out.kind = kind == "attention" ? calibration::KernelClass::attention : calibration::KernelClass::cudnn_attention;
    r.only(op, "/op",
           {"profile", "kind", "precision", "sequence", "head_dim", "batch", "causal", "backward", "sustained"});
    out.precision = precision();
    out.sequence = r.positive(op, "/op", "sequence");
    out.head_dim = r.positive(op, "/op", "head_dim");
    out.batch = r.positive(op, "/op", "batch");
    flag("causal", out.causal);
    flag("backward", out.backward);
  } else if (kind == "memory") {
    out.kind = calibration::KernelClass::memory;
    r.only(op, "/op", {"profile", "kind", "bytes", "sustained", "kernels", "framework", "memory_op", "backward"});
    out.bytes = r.positive(op, "/op", "bytes");
    if (op.contains("kernels")) {
      const auto& kernels = op.at("kernels");
      if (!kernels.is_number_integer() || kernels.get<std::int64_t>() < 1 || kernels.get<std::int64_t>() > 1000)
        r.fail("/op/kernels",
               fmt::format("expected a whole number of launches from 1 to 1000, got {}", kernels.dump()));
      out.kernels = kernels.get<int>();
    }
    // A framework's kernel for one memory-bound op: at the share of the streaming rate its preset measured.
    if (op.contains("framework") != op.contains("memory_op"))
      r.fail("/op", "expected framework and memory_op together (a framework's kernel for a layer norm or a gated "
                    "activation)");
    if (op.contains("framework")) {
      const auto name = r.text(op, "/op", "framework");
      const auto framework = calibration::find_framework(name);
      if (!framework)
        r.fail("/op/framework", fmt::format("unknown framework \"{}\" (expected one of: {})", name,
                                            join(calibration::framework_names())));
      flag("backward", out.backward);
      const auto memory_op = r.text(op, "/op", "memory_op");
      const auto* share = framework->stream_share(memory_op);
      if (!share)
        r.fail("/op/memory_op", fmt::format("unknown op \"{}\" (expected layer_norm or gated_activation)", memory_op));
      out.stream_share = share->in(out.backward);
    }
  } else {
    r.fail("/op/kind",
           fmt::format("unknown kind \"{}\" (expected gemm, convolution, attention, cudnn_attention or memory)", kind));
  }
  // A GEMM on a profile without the precision would fail every run: say so now.
  if (out.kind != calibration::KernelClass::memory) {
    const auto profile = *calibration::find_profile(out.profile);
    try {
      profile.peak(out.precision);
    } catch (const std::exception& e) {
      r.fail("/op/precision", e.what());
    }
  }
  return out;
}

double metric_of(const report::RunResult& r, Metric metric) {
  switch (metric) {
  case Metric::throughput:
  case Metric::throughput_ratio: // each run's; run_cases divides
    return r.throughput;
  case Metric::tokens_per_second:
    if (r.utilization.tokens_per_second <= 0)
      throw std::runtime_error("the run reports no tokens/s (its samples are not sequences)");
    return r.utilization.tokens_per_second;
  case Metric::iteration_seconds:
    return r.iteration.mean;
  case Metric::gpu_watts:
    if (!r.energy.known) throw std::runtime_error("the GPU profile has no power figures");
    return r.energy.gpu_watts;
  case Metric::tflops_per_gpu:
    if (r.utilization.tflops_per_gpu <= 0) throw std::runtime_error("the run reports no model TFLOP/s per GPU");
    return r.utilization.tflops_per_gpu;
  case Metric::epoch_seconds:
    if (r.epoch_seconds <= 0) throw std::runtime_error("the run reports no time per epoch (no dataset.samples)");
    return r.epoch_seconds;
  default:
    throw std::logic_error("an op metric on a scenario case");
  }
}

double metric_of(const KernelOp& op, Metric metric) {
  const auto profile = op.gpu ? op.gpu : calibration::find_profile(op.profile);
  if (!profile) throw std::runtime_error(fmt::format("unknown GPU profile \"{}\"", op.profile));
  const auto cost = op.cost();
  const double seconds = op.sustained ? calibration::sustained_kernel_timing(*profile, cost).seconds
                                      : calibration::kernel_time(*profile, cost);
  switch (metric) {
  case Metric::seconds:
    return seconds;
  case Metric::tflops:
    return cost.flops / seconds / 1e12;
  case Metric::bytes_per_second:
    return cost.bytes / seconds;
  default:
    throw std::logic_error("a scenario metric on an op case");
  }
}

// The document, or null when it is not JSON (parse_case then says where).
json parse_lenient(const std::string& text) {
  try {
    return io::parse_json(text);
  } catch (const io::JsonTextError&) {
    return json();
  }
}

double unit_factor(const Case& c) {
  for (const auto& [unit, factor] : accepted_units(c.metric))
    if (unit == c.unit) return factor;
  throw std::logic_error("unit checked at load");
}

} // namespace

std::string_view to_string(Metric m) {
  for (const auto& [metric, name] : kMetrics)
    if (metric == m) return name;
  return "unknown";
}

bool is_op_metric(Metric m) {
  return m == Metric::seconds || m == Metric::tflops || m == Metric::bytes_per_second;
}

calibration::KernelCost KernelOp::cost() const {
  calibration::KernelCost c;
  c.kind = kind;
  c.precision = precision;
  if (kind == calibration::KernelClass::memory) {
    c.bytes = bytes;
    c.kernels = kernels;
    c.stream_share = stream_share;
    return c;
  }
  if (calibration::fused_attention(kind)) {
    // Q, K, V and O read or written once each (their gradients too in backward), at the precision's element size.
    const double tensor = batch * sequence * head_dim * calibration::activation_bytes(precision);
    auto forward =
        calibration::fused_attention_kernel(kind, sequence, head_dim, batch, causal, false, precision, 4 * tensor);
    if (!backward) return forward;
    auto both =
        calibration::fused_attention_kernel(kind, sequence, head_dim, batch, causal, true, precision, 8 * tensor);
    both.gemms.insert(both.gemms.end(), forward.gemms.begin(), forward.gemms.end());
    both.flops += forward.flops;
    both.bytes += forward.bytes;
    both.kernels += forward.kernels;
    both.name = forward.name + " + bwd";
    return both;
  }
  const calibration::GemmDims g{m, n, k, batch, kind == calibration::KernelClass::convolution ? bytes : 0, unaligned};
  c.flops = g.flops();
  c.bytes = g.bytes > 0 ? g.bytes
                        : batch * ((m * k + k * n) * calibration::gemm_input_bytes(precision) +
                                   m * n * calibration::gemm_output_bytes(precision));
  c.gemms = {g};
  c.winograd = winograd;
  return c;
}

std::vector<Case> held_back_cases(const calibration::MeasurementFile& m, const calibration::GpuProfile& profile,
                                  const std::string& profile_label, bool every_point) {
  const auto every = calibration::CurveFitOptions{}.hold_back_every;
  const auto device = fmt::format("dtsim-probe {} on {}, {}", m.probe_version, m.device.name, m.date);
  const char* prefix = every_point ? "measured" : "held back";
  std::vector<Case> out;
  // A group as the fit sees it: the points it held back (calibration::held_back_positions).
  const auto hold_back = [&](std::vector<std::pair<calibration::TimedSample, Case>> group) {
    std::vector<calibration::TimedSample> samples;
    for (const auto& point : group)
      samples.push_back(point.first);
    if (every_point) {
      for (auto& point : group)
        out.push_back(std::move(point.second));
      return;
    }
    for (auto i : calibration::held_back_positions(samples, every))
      out.push_back(std::move(group[i].second));
  };
  const auto base_case = [&](const std::string& name, const std::string& what, const calibration::TimingStats& t) {
    Case c;
    c.file = m.origin;
    c.name = name;
    c.source = fmt::format("{}: {}, median of {} runs ({})", m.origin, what, t.runs, device);
    c.note = every_point
                 ? fmt::format("measured in {}; predicted on profile {}", m.origin, profile_label)
                 : fmt::format("held back from the fit of {} (every {}th point by size); predicted on profile {}",
                               m.origin, every, profile_label);
    c.measured = t.median * 1e6;
    c.unit = "us";
    c.metric = Metric::seconds;
    return c;
  };
  std::map<calibration::Precision, std::vector<std::pair<calibration::TimedSample, Case>>> gemms;
  for (std::size_t i = 0; i < m.gemms.size(); ++i) {
    const auto& g = m.gemms[i];
    KernelOp op;
    op.profile = profile_label;
    op.gpu = profile;
    op.kind = calibration::KernelClass::gemm;
    op.precision = g.precision;
    op.m = g.m;
    op.n = g.n;
    op.k = g.k;
    op.batch = g.batch;
    const auto shape = g.batch > 1 ? fmt::format("{:.0f} x {:.0f}x{:.0f}x{:.0f}", g.batch, g.m, g.n, g.k)
                                   : fmt::format("{:.0f}x{:.0f}x{:.0f}", g.m, g.n, g.k);
    auto c = base_case(fmt::format("{}: GEMM {} {}", prefix, shape, to_string(g.precision)),
                       fmt::format("GEMM measurement {} of {}", i + 1, m.gemms.size()), g.stats);
    c.what = std::move(op);
    gemms[g.precision].push_back({{g.flops, g.stats.median}, std::move(c)});
  }
  for (auto& [precision, group] : gemms)
    hold_back(std::move(group));
  std::vector<std::pair<calibration::TimedSample, Case>> memory;
  for (std::size_t i = 0; i < m.memory.size(); ++i) {
    const auto& k = m.memory[i];
    KernelOp op;
    op.profile = profile_label;
    op.gpu = profile;
    op.kind = calibration::KernelClass::memory;
    op.bytes = k.bytes;
    auto c = base_case(fmt::format("{}: memory {} {:.0f} B", prefix, k.op, k.bytes),
                       fmt::format("memory measurement {} of {}", i + 1, m.memory.size()), k.stats);
    c.what = std::move(op);
    memory.push_back({{k.bytes, k.stats.median}, std::move(c)});
  }
  hold_back(std::move(memory));
  return out;
}

std::vector<std::pair<std::string, double>> accepted_units(Metric m) {
  switch (m) {
  case Metric::throughput:
    return {{"samples/s", 1}, {"images/s", 1}, {"sequences/s", 1}};
  case Metric::tokens_per_second:
    return {{"tokens/s", 1}};
  case Metric::iteration_seconds:
    return {{"s", 1}, {"ms", 1e-3}};
  case Metric::gpu_watts:
    return {{"W", 1}};
  case Metric::epoch_seconds:
    return {{"s", 1}, {"min", 60}, {"h", 3600}};
  case Metric::tflops_per_gpu:
  case Metric::tflops:
    return {{"TFLOP/s", 1}};
  case Metric::seconds:
  case Metric::collective_time:
    return {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}};
  case Metric::bytes_per_second:
  case Metric::bus_bandwidth:
    return {{"B/s", 1}, {"GB/s", 1e9}, {"TB/s", 1e12}};
  case Metric::throughput_ratio:
    return {{"x", 1}};
  }
  return {};
}

Case parse_case(const std::string& json_text, const std::string& file) {
  const Reader r(file);
  json document;
  try {
    document = io::parse_json(json_text);
  } catch (const io::JsonTextError& e) {
    r.fail(e.pointer(), fmt::format("not valid JSON: {}", e.what()));
  }
  if (!document.is_object()) r.fail("", "expected a JSON object (a validation case)");
  r.only(document, "",
         {"name", "source", "measured", "note", "scenario", "set", "baseline", "metric", "op", "collective", "anchor",
          "disputed"});
  Case c;
  c.file = file;
  c.name = r.text(document, "", "name");
  c.source = r.text(document, "", "source");
  c.note = r.optional_text(document, "", "note");
  if (document.contains("anchor")) {
    if (!document.at("anchor").is_boolean()) r.fail("/anchor", "expected true or false");
    c.anchor = document.at("anchor").get<bool>();
  }
  c.disputed = r.optional_text(document, "", "disputed");
  const auto& measured = r.object(document, "", "measured");
  r.only(measured, "/measured", {"value", "unit"});
  c.measured = r.positive(measured, "/measured", "value");
  c.unit = r.text(measured, "/measured", "unit");

  const bool has_scenario = document.contains("scenario"), has_op = document.contains("op"),
             has_collective = document.contains("collective");
  if (has_scenario + has_op + has_collective != 1)
    r.fail(has_op           ? "/op"
           : has_collective ? "/collective"
                            : "/scenario",
           has_scenario + has_op + has_collective > 1
               ? "give one of \"scenario\", \"op\" and \"collective\""
               : "missing field \"scenario\", \"op\" or \"collective\" (the case runs a scenario file, prices one "
                 "kernel or benchmarks one collective)");
  const Level level = has_op ? Level::op : has_collective ? Level::collective : Level::end_to_end;
  const auto metric = r.text(document, "", "metric");
  const auto found = std::find_if(kMetrics.begin(), kMetrics.end(), [&](const auto& e) { return e.second == metric; });
  if (found == kMetrics.end() || level_of(found->first) != level)
    r.fail("/metric", fmt::format("unknown metric \"{}\" for {} case (expected one of: {})", metric,
                                  has_op           ? "an op"
                                  : has_collective ? "a collective"
                                                   : "a scenario",
                                  join(metric_names(level))));
  c.metric = found->first;

  if (has_collective) {
    if (document.contains("set")) r.fail("/set", "a collective case gives its overrides in /collective/set");
    c.what = detail::parse_collective(r, r.object(document, "", "collective"));
  } else if (has_scenario) {
    ScenarioRun run;
    run.scenario = r.text(document, "", "scenario");
    r.sets(document, "", run.sets, run.overrides);
    if (c.metric == Metric::throughput_ratio) {
      const auto& baseline = r.object(document, "", "baseline");
      r.only(baseline, "/baseline", {"set"});
      if (!baseline.contains("set"))
        r.fail("/baseline/set", "missing; expected the overrides that make the run the ratio is taken against");
      r.sets(baseline, "/baseline", run.baseline_sets, run.baseline_overrides);
    } else if (document.contains("baseline")) {
      r.fail("/baseline", "a baseline run belongs to metric \"throughput_ratio\" only");
    }
    c.what = std::move(run);
  } else {
    if (document.contains("set")) r.fail("/set", "\"set\" overrides a scenario; an op case has none");
    const auto& op = r.object(document, "", "op");
    auto parsed = parse_op(r, op);
    if (c.metric == Metric::tflops && parsed.kind == calibration::KernelClass::memory)
      r.fail("/metric", "\"tflops\" needs a GEMM or a convolution (a memory kernel does no counted FLOPs)");
    if (c.metric == Metric::bytes_per_second && parsed.kind != calibration::KernelClass::memory)
      r.fail("/metric", "\"bytes_per_second\" needs a memory kernel");
    c.what = std::move(parsed);
  }

  const auto units = accepted_units(c.metric);
  if (std::none_of(units.begin(), units.end(), [&](const auto& u) { return u.first == c.unit; })) {
    std::vector<std::string> unit_names;
    for (const auto& u : units)
      unit_names.push_back(u.first);
    r.fail("/measured/unit", fmt::format("unit \"{}\" does not fit metric \"{}\" (expected one of: {})", c.unit, metric,
                                         join(unit_names)));
  }
  return c;
}

std::vector<Case> load_cases(const std::filesystem::path& directory, std::vector<std::string>* left_out) {
  if (!std::filesystem::is_directory(directory))
    throw std::runtime_error(fmt::format("{}: no such folder of validation cases", directory.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (const auto& path : files) {
    std::string text;
    try {
      text = io::read_text_file(path, "validation case");
    } catch (const io::FileError& e) {
      throw CaseError(path.string(), "", e.what());
    }
    // A file of many kernels names its measurements; every other file is one case (parse_case reads it, bad JSON too).
    const auto document = text.find("\"measurements\"") == std::string::npos ? json() : parse_lenient(text);
    if (!document.is_object() || !document.contains("measurements")) {
      cases.push_back(parse_case(text, path.string()));
      continue;
    }
    auto expanded = shape_cases(document, path.string());
    cases.insert(cases.end(), std::make_move_iterator(expanded.cases.begin()),
                 std::make_move_iterator(expanded.cases.end()));
    if (left_out) left_out->insert(left_out->end(), expanded.skipped.begin(), expanded.skipped.end());
  }
  return cases;
}

std::vector<Case> filter_cases(const std::vector<Case>& cases, const std::string& text) {
  const auto wanted = lower(text);
  std::vector<Case> out;
  for (const auto& c : cases)
    if (lower(c.name).find(wanted) != std::string::npos ||
        lower(std::filesystem::path(c.file).filename().string()).find(wanted) != std::string::npos)
      out.push_back(c);
  return out;
}

double error_percent(double predicted, double measured) {
  return (predicted - measured) / measured * 100;
}

std::vector<Outcome> run_cases(const std::vector<Case>& cases, const std::filesystem::path& root, int jobs,
                               const SweepProgress& progress, const MemoryLimit& limit) {
  std::vector<Outcome> outcomes(cases.size());
  const auto finish = [&](std::size_t i, double base_value) {
    auto& o = outcomes[i];
    o.ok = true;
    o.predicted = base_value / unit_factor(cases[i]);
    o.error_percent = error_percent(o.predicted, cases[i].measured);
  };
  // Op cases cost microseconds: price them here.
  std::vector<std::size_t> scenario_cases;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (const auto* op = std::get_if<KernelOp>(&cases[i].what)) {
      try {
        finish(i, metric_of(*op, cases[i].metric));
      } catch (const std::exception& e) {
        outcomes[i].error = e.what();
      }
    } else if (const auto* collective = std::get_if<CollectiveRun>(&cases[i].what)) {
      // A collective simulates in a child process of its own (bench_collective): milliseconds to a second.
      try {
        const auto point = detail::run_collective(*collective);
        finish(i, cases[i].metric == Metric::collective_time ? point.seconds : point.busbw);
      } catch (const std::exception& e) {
        outcomes[i].error = e.what();
      }
    } else {
      scenario_cases.push_back(i);
    }
  }
  // Scenario cases simulate, each in a child process (SimGrid: one engine per process); a scenario that does not
  // load or run fails its case only. A ratio's baseline is a run of its own, right after the case's.
  std::vector<engine::ChildJob> work;
  std::vector<std::size_t> first_job; // per scenario case: its run's index in `work` (the baseline's follows)
  const auto add_run = [&](const std::string& path, const std::vector<scenario::Override>& overrides) {
    work.push_back([path, overrides, &limit]() -> std::string {
      return studies::run_here(scenario::load_scenario(path, overrides), limit);
    });
  };
  for (const auto i : scenario_cases) {
    const auto& run = std::get<ScenarioRun>(cases[i].what);
    const auto path = (root / run.scenario).string();
    first_job.push_back(work.size());
    add_run(path, run.overrides);
    if (cases[i].metric == Metric::throughput_ratio) add_run(path, run.baseline_overrides);
  }
  auto children = studies::run_points(work, jobs, progress, {{}, nullptr, {}, limit});
  const auto value_of = [&](std::size_t job, Metric metric) {
    if (!children[job].ok) throw std::runtime_error(children[job].output);
    return metric_of(report::run_result_from_json(json::parse(children[job].output)), metric);
  };
  for (std::size_t j = 0; j < scenario_cases.size(); ++j) {
    const auto i = scenario_cases[j];
    try {
      double value = value_of(first_job[j], cases[i].metric);
      if (cases[i].metric == Metric::throughput_ratio) value /= value_of(first_job[j] + 1, cases[i].metric);
      finish(i, value);
    } catch (const std::exception& e) {
      outcomes[i].error = e.what();
    }
  }
  return outcomes;
}

ErrorStats error_stats(const std::vector<double>& signed_errors_percent) {
  ErrorStats s;
  s.count = signed_errors_percent.size();
  if (s.count == 0) return s;
  std::vector<double> magnitudes;
  for (std::size_t i = 0; i < s.count; ++i) {
    const double a = std::fabs(signed_errors_percent[i]);
    magnitudes.push_back(a);
    if (a > s.max_abs) {
      s.max_abs = a;
      s.max_index = i;
    }
  }
  std::sort(magnitudes.begin(), magnitudes.end());
  const auto mid = s.count / 2;
  s.median_abs = s.count % 2 == 1 ? magnitudes[mid] : (magnitudes[mid - 1] + magnitudes[mid]) / 2;
  return s;
}

std::filesystem::path cases_directory(const std::filesystem::path& root) {
  return root / "calibration" / "validation";
}

std::filesystem::path find_root(const std::vector<std::filesystem::path>& starts) {
  std::vector<std::string> looked;
  for (const auto& start : starts) {
    if (start.empty()) continue;
    std::error_code ec;
    auto dir = std::filesystem::weakly_canonical(start, ec);
    if (ec) dir = std::filesystem::absolute(start);
    looked.push_back(dir.string());
    for (;;) {
      if (std::filesystem::is_directory(cases_directory(dir), ec)) return dir;
      if (!dir.has_parent_path() || dir.parent_path() == dir) break;
      dir = dir.parent_path();
    }
  }
  throw std::runtime_error(fmt::format("no calibration/validation/ folder in {} or any folder above (validation runs "
                                       "from dtsim's source tree; give it with --root DIR)",
                                       looked.empty() ? std::string("(nowhere)") : join(looked)));
}

} // namespace dtsim::studies::validate
