// Profile documents (calibration/profiles/*.json). All numbers are in base units (FLOP/s, bytes, bytes/s,
// seconds): the unit-string parser lives in sim/scenario, which this layer may not include.
//   {"name": "v100", "display_name": "...", "provenance": "derived" | "measured", "sources": ["..."],
//    "measured": {"device": "...", "date": "...", "probe_version": "...", "measurements": "path"},  // iff measured
//    "peak_flops": {"fp32": 15.7e12, "fp16": 125e12, ...},          // math precisions only (no "amp")
//    "memory": {"capacity": bytes, "bandwidth": bytes/s, "efficiency": (0, 1], "latency": seconds (optional)},
//    "l2": {"bandwidth": bytes/s},                                  // optional: what the L2 feeds the SMs
//    "links": {"nvlink_bandwidth": bytes/s per direction (0: none), "pcie_bandwidth": bytes/s per direction,
//              "nvlink_efficiency": (0, 1], "pcie_efficiency": (0, 1]},  // optional: the payload rate's share
//    "compute_capability": 9.0,                                    // optional: CUDA's; absent: not an NCCL GPU
//    "efficiency": {"gemm": {precision: (0, 1]}, "convolution": {precision: (0, 1]},  // same keys as peak_flops
//                   "attention": {precision: (0, 1]},   // optional: fused (flash) attention, where the GPU has it
//                   "gemm_unaligned": {precision: (0, 1]},  // optional: GEMMs with a dimension off 16 bytes
//                   "convolution_winograd": {precision: (0, 1]}},  // optional: 3x3 stride-1 convolutions as Winograd
//    "efficiency_curves": {                              // optional: measured curves (dtsim calibrate)
//       "gemm": {precision: [[FLOPs, efficiency], ...]}, "convolution": {...}, "attention": {...},
//       "memory": [[bytes, efficiency], ...]},
//    "launch_overhead": seconds, "collectives": {"step_overhead": seconds per message},  // collectives optional
//    "power": {"tdp": W, "idle": W, "math": W, "memory": W, "sustained": {...}}}  // optional: electrical draw
//                                                     // and clocks at the power limit (calibration/power_document.hpp)
// A curve's sizes are positive and strictly increasing; compute efficiencies lie in (0, 1]; memory efficiencies in
// (0, 4] (a kernel whose data stays in L2 can beat the datasheet's DRAM bandwidth).
// Parsing is strict (unknown fields and precisions are errors) because a typo in a shipped profile would otherwise
// go unnoticed, and every error names the file and the JSON pointer (RFC 6901) of the offending value.
#include "calibration/profile.hpp"
#include "calibration/embedded.hpp"
#include "calibration/json_reader.hpp"
#include "calibration/power_document.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace dtsim::calibration {
namespace {

using detail::by_precision_inline;
using detail::json_number;
using detail::pointer;
using detail::Reader;
using nlohmann::json;

// The most a memory curve may claim of the datasheet bandwidth (L2-resident working sets exceed 1).
constexpr double kMaxMemoryEfficiency = 4.0;

// Efficiencies and peaks must cover the same precisions: a peak without an efficiency could not be used,
// an efficiency without a peak is a typo.
void check_same_precisions(const Reader& r, const std::map<Precision, double>& peaks,
                           const std::map<Precision, double>& eff, const std::string& path) {
  for (const auto& [p, value] : peaks)
    if (!eff.contains(p))
      r.fail(pointer(path, to_string(p)),
             fmt::format("expected a fraction in (0, 1], but it is missing (/peak_flops has {})", to_string(p)));
  for (const auto& [p, value] : eff)
    if (!peaks.contains(p))
      r.fail(pointer(path, to_string(p)), fmt::format("/peak_flops has no {} entry", to_string(p)));
}

// [[size, efficiency], ...]: sizes positive and strictly increasing, efficiencies in (0, max].
EfficiencyCurve read_curve(const Reader& r, const json& v, const std::string& path, const char* size_unit,
                           double max_efficiency) {
  if (!v.is_array() || v.empty())
    r.fail(path, fmt::format("expected a non-empty array of [size in {}, efficiency] knots, got {}", size_unit,
                             v.is_array() ? "an empty array" : v.type_name()));
  EfficiencyCurve curve;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = pointer(path, i);
    const json& knot = v[i];
    if (!knot.is_array() || knot.size() != 2)
      r.fail(at, fmt::format("expected a knot [size in {}, efficiency], got {}", size_unit,
                             knot.is_array() ? fmt::format("an array of {}", knot.size()) : knot.type_name()));
    const double size = r.number(knot[0], pointer(at, 0), fmt::format("a positive size in {}", size_unit), 0, false);
    const std::string what = max_efficiency == 1.0 ? std::string("an efficiency in (0, 1]")
                                                   : fmt::format("an efficiency in (0, {}]", max_efficiency);
    const double eff = r.number(knot[1], pointer(at, 1), what, 0, false);
    if (eff > max_efficiency) r.fail(pointer(at, 1), fmt::format("expected {}, got {}", what, knot[1].dump()));
    if (!curve.knots.empty() && size <= curve.knots.back().size)
      r.fail(pointer(at, 0),
             fmt::format("expected a size above the previous knot's {} (sizes strictly increase), got {}",
                         curve.knots.back().size, knot[0].dump()));
    curve.knots.push_back({size, eff});
  }
  return curve;
}

void read_curves(const Reader& r, const json& doc, GpuProfile& g) {
  const json* curves = Reader::find(doc, "efficiency_curves");
  if (curves == nullptr) return;
  const std::string path = "/efficiency_curves";
  r.expect_object(*curves, path, {"gemm", "convolution", "attention", "memory"});
  const std::pair<const char*, KernelClass> classes[] = {
      {"gemm", KernelClass::gemm}, {"convolution", KernelClass::convolution}, {"attention", KernelClass::attention}};
  for (const auto& [key, kind] : classes) {
    const json* by_precision = Reader::find(*curves, key);
    if (by_precision == nullptr) continue;
    const std::string at = pointer(path, key);
    r.expect_object(*by_precision, at, {});
    for (const auto& [name, value] : by_precision->items()) {
      const std::string p_at = pointer(at, name);
      const Precision p = r.math_precision_at(json(name), p_at);
      if (!g.peak_flops.contains(p)) r.fail(p_at, fmt::format("/peak_flops has no {} entry", name));
      if (kind == KernelClass::attention && !g.attention_efficiency.contains(p))
        r.fail(p_at,
               fmt::format("/efficiency/attention has no {} entry (a curve needs the fused kernel's constant)", name));
      g.efficiency_curves[kind][p] = read_curve(r, value, p_at, "FLOPs", 1.0);
    }
  }
  if (const json* memory = Reader::find(*curves, "memory"))
    g.memory_curve = read_curve(r, *memory, pointer(path, "memory"), "bytes", kMaxMemoryEfficiency);
}

void read_provenance(const Reader& r, const json& doc, GpuProfile& g) {
  g.provenance = r.string(doc, "", "provenance");
  if (g.provenance != "derived" && g.provenance != "measured")
    r.fail("/provenance", fmt::format("expected \"derived\" or \"measured\", got \"{}\"", g.provenance));
  const json* measured = Reader::find(doc, "measured");
  if (g.provenance == "derived") {
    if (measured != nullptr) r.fail("/measured", "only a profile with \"provenance\": \"measured\" has this field");
    return;
  }
  const json& m = r.member(doc, "", "measured", "an object with device, date, probe_version and measurements");
  r.expect_object(m, "/measured", {"device", "date", "probe_version", "measurements"});
  g.measured = MeasuredProvenance{r.string(m, "/measured", "device"), r.string(m, "/measured", "date"),
                                  r.string(m, "/measured", "probe_version"), r.string(m, "/measured", "measurements")};
}

} // namespace

double EfficiencyCurve::at(double size) const {
  if (knots.empty()) throw std::logic_error("EfficiencyCurve::at on an empty curve");
  if (!(size > knots.front().size)) return knots.front().efficiency; // also size <= 0 and NaN
  if (size >= knots.back().size) return knots.back().efficiency;
  // The first knot above `size`; it has a predecessor because size > the first knot's.
  const auto hi =
      std::upper_bound(knots.begin(), knots.end(), size, [](double s, const CurveKnot& k) { return s < k.size; });
  const auto lo = hi - 1;
  const double t = (std::log10(size) - std::log10(lo->size)) / (std::log10(hi->size) - std::log10(lo->size));
  return lo->efficiency + t * (hi->efficiency - lo->efficiency);
}

double GpuProfile::peak(Precision p) const {
  const Precision math = math_precision(p);
  const auto it = peak_flops.find(math);
  if (it != peak_flops.end()) return it->second;
  std::vector<std::string> have;
  for (const auto& [q, value] : peak_flops)
    have.emplace_back(to_string(q));
  throw std::out_of_range(fmt::format("GPU '{}' has no {} peak{} (it has: {})", name, to_string(math),
                                      p == math ? "" : fmt::format(" (needed by {})", to_string(p)),
                                      fmt::join(have, ", ")));
}

double GpuProfile::efficiency(KernelClass k, Precision p) const {
  if (k == KernelClass::memory) return memory_efficiency;
  const auto& table = k == KernelClass::gemm              ? gemm_efficiency
                      : k == KernelClass::convolution     ? conv_efficiency
                      : k == KernelClass::cudnn_attention ? cudnn_attention_efficiency
                                                          : attention_efficiency;
  const Precision math = math_precision(p);
  const auto it = table.find(math);
  if (it != table.end()) return it->second;
  const char* kind = k == KernelClass::gemm              ? "gemm"
                     : k == KernelClass::convolution     ? "convolution"
                     : k == KernelClass::cudnn_attention ? "cuDNN fused attention"
                                                         : "fused attention";
  throw std::out_of_range(fmt::format("GPU '{}' has no {} efficiency for {}", name, kind, to_string(math)));
}

const EfficiencyCurve* GpuProfile::curve(KernelClass k, Precision p) const {
  if (k == KernelClass::memory) return memory_curve.empty() ? nullptr : &memory_curve;
  const auto by_class = efficiency_curves.find(k);
  if (by_class == efficiency_curves.end()) return nullptr;
  const auto it = by_class->second.find(math_precision(p));
  return it == by_class->second.end() || it->second.empty() ? nullptr : &it->second;
}

double GpuProfile::efficiency(KernelClass k, Precision p, double size) const {
  if (const EfficiencyCurve* c = curve(k, p)) return c->at(size);
  return efficiency(k, p);
}

GpuProfile parse_profile(const std::string& json_text, const std::string& origin) {
  const Reader r(origin);
  const json doc = detail::parse_document(json_text, origin);
  r.expect_object(doc, "",
                  {"name", "display_name", "provenance", "measured", "sources", "peak_flops", "memory", "l2", "links",
                   "efficiency", "efficiency_curves", "launch_overhead", "collectives", "compute_units",
                   "compute_capability", "power"});

  GpuProfile g;
  g.name = r.string(doc, "", "name");
  g.display_name = r.string(doc, "", "display_name");
  read_provenance(r, doc, g);

  const json& sources = r.member(doc, "", "sources", "a non-empty array of strings");
  if (!sources.is_array() || sources.empty())
    r.fail("/sources", fmt::format("expected a non-empty array of strings, got {}",
                                   sources.is_array() ? "an empty array" : sources.type_name()));
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].is_string())
      r.fail(fmt::format("/sources/{}", i), fmt::format("expected a string, got {}", sources[i].type_name()));
    g.sources.push_back(sources[i].get<std::string>());
  }

  g.peak_flops =
      r.by_precision(r.member(doc, "", "peak_flops", "an object of FLOP/s by precision"), "/peak_flops", false);
  if (!g.peak_flops.contains(Precision::fp32))
    r.fail("/peak_flops/fp32", "expected a positive number in FLOP/s, but it is missing (every GPU has an fp32 peak)");

  const json& memory = r.member(doc, "", "memory", "an object with capacity, bandwidth and efficiency");
  r.expect_object(memory, "/memory", {"capacity", "bandwidth", "efficiency", "latency"});
  g.memory_bytes = r.positive(memory, "/memory", "capacity", "bytes");
  g.memory_bandwidth = r.positive(memory, "/memory", "bandwidth", "bytes/s");
  g.memory_efficiency =
      r.fraction(r.member(memory, "/memory", "efficiency", "a fraction in (0, 1]"), "/memory/efficiency");
  if (Reader::find(memory, "latency")) g.memory_latency = r.non_negative(memory, "/memory", "latency", "seconds");

  if (const json* l2 = Reader::find(doc, "l2")) {
    r.expect_object(*l2, "/l2", {"bandwidth"});
    g.l2_bandwidth = r.positive(*l2, "/l2", "bandwidth", "bytes/s");
  }

  const json& links = r.member(doc, "", "links", "an object with nvlink_bandwidth and pcie_bandwidth");
  r.expect_object(links, "/links", {"nvlink_bandwidth", "pcie_bandwidth", "nvlink_efficiency", "pcie_efficiency"});
  g.nvlink_bandwidth = r.non_negative(links, "/links", "nvlink_bandwidth", "bytes/s per direction (0: no NVLink)");
  g.pcie_bandwidth = r.positive(links, "/links", "pcie_bandwidth", "bytes/s per direction");
  if (links.contains("nvlink_efficiency"))
    g.nvlink_efficiency = r.fraction(links.at("nvlink_efficiency"), "/links/nvlink_efficiency");
  if (links.contains("pcie_efficiency"))
    g.pcie_efficiency = r.fraction(links.at("pcie_efficiency"), "/links/pcie_efficiency");

  const json& eff = r.member(doc, "", "efficiency", "an object with gemm and convolution");
  r.expect_object(eff, "/efficiency",
                  {"gemm", "convolution", "attention", "attention_cudnn", "gemm_unaligned", "convolution_winograd"});
  g.gemm_efficiency = r.by_precision(r.member(eff, "/efficiency", "gemm", "an object of fractions by precision"),
                                     "/efficiency/gemm", true);
  g.conv_efficiency = r.by_precision(r.member(eff, "/efficiency", "convolution", "an object of fractions by precision"),
                                     "/efficiency/convolution", true);
  check_same_precisions(r, g.peak_flops, g.gemm_efficiency, "/efficiency/gemm");
  check_same_precisions(r, g.peak_flops, g.conv_efficiency, "/efficiency/convolution");
  // Optional tables of a subset of the peak's precisions.
  const auto optional_table = [&](const char* key, std::map<Precision, double>& table) {
    if (!eff.contains(key)) return;
    const std::string path = pointer("/efficiency", key);
    table = r.by_precision(eff.at(key), path, true);
    for (const auto& [p, value] : table)
      if (!g.peak_flops.contains(p))
        r.fail(pointer(path, to_string(p)), fmt::format("/peak_flops has no {} entry", to_string(p)));
  };
  optional_table("attention", g.attention_efficiency);
  optional_table("attention_cudnn", g.cudnn_attention_efficiency);
  optional_table("gemm_unaligned", g.gemm_unaligned_efficiency);
  optional_table("convolution_winograd", g.winograd_efficiency);
  read_curves(r, doc, g);

  g.launch_overhead = r.non_negative(doc, "", "launch_overhead", "seconds");
  if (doc.contains("compute_units")) {
    const json& units = doc.at("compute_units");
    if (!units.is_number_integer() || units.get<long>() < 1 || units.get<long>() > 100000)
      r.fail("/compute_units", fmt::format("expected a positive whole number of SMs, got {}", units.dump()));
    g.compute_units = units.get<int>();
  }

  if (doc.contains("compute_capability")) {
    const json& cc = doc.at("compute_capability");
    if (!cc.is_number() || cc.get<double>() < 1 || cc.get<double>() > 99)
      r.fail("/compute_capability",
             fmt::format("expected CUDA's compute capability, such as 9.0 for Hopper, got {}", cc.dump()));
    g.compute_capability = static_cast<int>(std::lround(cc.get<double>() * 10));
  }
  if (const json* coll = Reader::find(doc, "collectives")) {
    r.expect_object(*coll, "/collectives", {"step_overhead"});
    if (Reader::find(*coll, "step_overhead"))
      g.collective_step_overhead = r.non_negative(*coll, "/collectives", "step_overhead", "seconds");
  }
  if (const json* power = Reader::find(doc, "power")) g.power = detail::read_power(r, *power, g);
  // cuDNN's attention has a rate of its own, so it draws an energy of its own: without one the clock model would take
  // its FLOPs as free of power.
  if (g.power.sustained_known()) {
    const auto energies = g.power.joules_per_flop.find(KernelClass::cudnn_attention);
    for (const auto& [p, value] : g.cudnn_attention_efficiency)
      if (energies == g.power.joules_per_flop.end() || !energies->second.contains(p))
        r.fail(pointer("/power/sustained/joules_per_flop/attention_cudnn", to_string(p)),
               fmt::format("expected the joules per FLOP of the cuDNN attention that /efficiency/attention_cudnn rates "
                           "for {}, but it is missing",
                           to_string(p)));
  }
  return g;
}

namespace {

std::string json_string(const std::string& s) {
  return json(s).dump();
}

// [[size, efficiency], ...] with one knot per line at `indent`.
std::string knots_block(const EfficiencyCurve& c, const std::string& indent) {
  std::string out = "[\n";
  for (std::size_t i = 0; i < c.knots.size(); ++i)
    out += fmt::format("{}  [{}, {}]{}\n", indent, json_number(c.knots[i].size), json_number(c.knots[i].efficiency),
                       i + 1 < c.knots.size() ? "," : "");
  return out + indent + "]";
}

} // namespace

std::string profile_to_json(const GpuProfile& g) {
  std::vector<std::string> fields;
  fields.push_back(fmt::format("\"name\": {}", json_string(g.name)));
  fields.push_back(fmt::format("\"display_name\": {}", json_string(g.display_name)));
  fields.push_back(fmt::format("\"provenance\": {}", json_string(g.provenance)));
  if (g.measured)
    fields.push_back(fmt::format("\"measured\": {{\n    \"device\": {},\n    \"date\": {},\n    \"probe_version\": "
                                 "{},\n    \"measurements\": {}\n  }}",
                                 json_string(g.measured->device), json_string(g.measured->date),
                                 json_string(g.measured->probe_version), json_string(g.measured->measurements)));
  std::string sources = "\"sources\": [";
  for (std::size_t i = 0; i < g.sources.size(); ++i)
    sources += fmt::format("{}\n    {}", i ? "," : "", json_string(g.sources[i]));
  fields.push_back(sources + (g.sources.empty() ? "]" : "\n  ]"));
  fields.push_back(fmt::format("\"peak_flops\": {}", by_precision_inline(g.peak_flops)));
  fields.push_back(fmt::format(
      "\"memory\": {{\"capacity\": {}, \"bandwidth\": {}, \"efficiency\": {}{}}}", json_number(g.memory_bytes),
      json_number(g.memory_bandwidth), json_number(g.memory_efficiency),
      g.memory_latency > 0 ? fmt::format(", \"latency\": {}", json_number(g.memory_latency)) : std::string()));
  if (g.l2_bandwidth > 0) fields.push_back(fmt::format("\"l2\": {{\"bandwidth\": {}}}", json_number(g.l2_bandwidth)));
  std::string links = fmt::format("\"links\": {{\"nvlink_bandwidth\": {}, \"pcie_bandwidth\": {}",
                                  json_number(g.nvlink_bandwidth), json_number(g.pcie_bandwidth));
  if (g.nvlink_efficiency != 1) links += fmt::format(", \"nvlink_efficiency\": {}", json_number(g.nvlink_efficiency));
  if (g.pcie_efficiency != 1) links += fmt::format(", \"pcie_efficiency\": {}", json_number(g.pcie_efficiency));
  fields.push_back(links + "}");
  std::string eff = fmt::format("\"efficiency\": {{\n    \"gemm\": {},\n    \"convolution\": {}",
                                by_precision_inline(g.gemm_efficiency), by_precision_inline(g.conv_efficiency));
  if (!g.attention_efficiency.empty())
    eff += fmt::format(",\n    \"attention\": {}", by_precision_inline(g.attention_efficiency));
  if (!g.cudnn_attention_efficiency.empty())
    eff += fmt::format(",\n    \"attention_cudnn\": {}", by_precision_inline(g.cudnn_attention_efficiency));
  if (!g.gemm_unaligned_efficiency.empty())
    eff += fmt::format(",\n    \"gemm_unaligned\": {}", by_precision_inline(g.gemm_unaligned_efficiency));
  if (!g.winograd_efficiency.empty())
    eff += fmt::format(",\n    \"convolution_winograd\": {}", by_precision_inline(g.winograd_efficiency));
  fields.push_back(eff + "\n  }");
  std::vector<std::string> curves;
  const std::pair<const char*, KernelClass> classes[] = {
      {"gemm", KernelClass::gemm}, {"convolution", KernelClass::convolution}, {"attention", KernelClass::attention}};
  for (const auto& [key, kind] : classes) {
    const auto it = g.efficiency_curves.find(kind);
    if (it == g.efficiency_curves.end()) continue;
    std::vector<std::string> tables;
    for (const auto& [p, c] : it->second)
      if (!c.empty()) tables.push_back(fmt::format("      \"{}\": {}", to_string(p), knots_block(c, "      ")));
    if (!tables.empty()) curves.push_back(fmt::format("    \"{}\": {{\n{}\n    }}", key, fmt::join(tables, ",\n")));
  }
  if (!g.memory_curve.empty()) curves.push_back("    \"memory\": " + knots_block(g.memory_curve, "    "));
  if (!curves.empty()) fields.push_back(fmt::format("\"efficiency_curves\": {{\n{}\n  }}", fmt::join(curves, ",\n")));
  if (g.compute_units > 0) fields.push_back(fmt::format("\"compute_units\": {}", g.compute_units));
  if (g.compute_capability > 0)
    fields.push_back(
        fmt::format("\"compute_capability\": {}.{}", g.compute_capability / 10, g.compute_capability % 10));
  fields.push_back(fmt::format("\"launch_overhead\": {}", json_number(g.launch_overhead)));
  if (g.collective_step_overhead > 0)
    fields.push_back(
        fmt::format("\"collectives\": {{\"step_overhead\": {}}}", json_number(g.collective_step_overhead)));
  if (g.power.known()) fields.push_back(detail::power_to_json(g.power));
  return fmt::format("{{\n  {}\n}}\n", fmt::join(fields, ",\n  "));
}

std::optional<GpuProfile> find_profile(const std::string& name) {
  return parse_embedded(embedded_profiles(), name, "calibration/profiles", parse_profile);
}

GpuProfile load_profile_file(const std::string& path) {
  return parse_profile(read_input_file(path, "GPU profile"), path);
}

std::optional<GpuProfile> resolve_profile(const std::string& name_or_path,
                                          const std::vector<std::string>& directories) {
  if (auto shipped = find_profile(name_or_path)) return shipped;
  const std::filesystem::path given(name_or_path);
  std::error_code ec;
  if (given.is_absolute()) {
    if (std::filesystem::is_regular_file(given, ec)) return load_profile_file(name_or_path);
    return std::nullopt;
  }
  for (const auto& directory : directories) {
    const auto candidate = (std::filesystem::path(directory) / given).lexically_normal();
    if (std::filesystem::is_regular_file(candidate, ec)) return load_profile_file(candidate.string());
  }
  return std::nullopt;
}

std::vector<std::string> profile_names() {
  return embedded_stems(embedded_profiles());
}

} // namespace dtsim::calibration
