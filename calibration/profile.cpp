// Profile documents (calibration/profiles/*.json). All numbers are in base units (FLOP/s, bytes, bytes/s,
// seconds): the unit-string parser lives in sim/scenario, which this layer may not include.
//   {"name": "v100", "display_name": "...", "provenance": "derived" | "measured", "sources": ["..."],
//    "peak_flops": {"fp32": 15.7e12, "fp16": 125e12, ...},          // math precisions only (no "amp")
//    "memory": {"capacity": bytes, "bandwidth": bytes/s, "efficiency": (0, 1]},
//    "links": {"nvlink_bandwidth": bytes/s per direction (0: none), "pcie_bandwidth": bytes/s per direction},
//    "efficiency": {"gemm": {precision: (0, 1]}, "convolution": {precision: (0, 1]},  // same keys as peak_flops
//                   "attention": {precision: (0, 1]}},  // optional: fused (flash) attention, where the GPU has it
//    "launch_overhead": seconds, "collectives": {"step_overhead": seconds per message}}
// Parsing is strict (unknown fields and precisions are errors) because a typo in a shipped profile would otherwise
// go unnoticed, and every error names the file and the JSON pointer (RFC 6901) of the offending value.
#include "calibration/profile.hpp"
#include "calibration/embedded.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

namespace dtsim::calibration {
namespace {

using nlohmann::json;

// RFC 6901 escaping of one reference token.
std::string pointer(const std::string& parent, const std::string& key) {
  std::string token;
  for (char c : key) {
    if (c == '~')
      token += "~0";
    else if (c == '/')
      token += "~1";
    else
      token += c;
  }
  return parent + "/" + token;
}

class Reader {
public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw std::runtime_error(fmt::format("{}: {}: {}", origin_, path.empty() ? "/" : path, message));
  }

  // The member `key` of object `obj` (at `path`), which must exist; `what` describes the expected value.
  const json& member(const json& obj, const std::string& path, const std::string& key, const std::string& what) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(pointer(path, key), fmt::format("expected {}, but it is missing", what));
    return *it;
  }

  void expect_object(const json& v, const std::string& path, std::initializer_list<std::string_view> allowed) const {
    if (!v.is_object()) fail(path, fmt::format("expected an object, got {}", v.type_name()));
    if (allowed.size() == 0) return;
    for (const auto& [key, value] : v.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(pointer(path, key), fmt::format("unknown field (expected one of: {})", fmt::join(allowed, ", ")));
    }
  }

  std::string string(const json& obj, const std::string& path, const std::string& key) const {
    const json& v = member(obj, path, key, "a string");
    if (!v.is_string() || v.get_ref<const std::string&>().empty())
      fail(pointer(path, key), fmt::format("expected a non-empty string, got {}", describe(v)));
    return v.get<std::string>();
  }

  // A number with lower bound `min` (inclusive or not) and an optional upper bound of 1 for fractions.
  double number(const json& v, const std::string& path, const std::string& what, double min, bool min_inclusive,
                bool at_most_one = false) const {
    if (!v.is_number()) fail(path, fmt::format("expected {}, got {}", what, v.type_name()));
    const double x = v.get<double>();
    const bool ok = (min_inclusive ? x >= min : x > min) && (!at_most_one || x <= 1.0);
    if (!ok) fail(path, fmt::format("expected {}, got {}", what, v.dump()));
    return x;
  }
  double positive(const json& obj, const std::string& path, const std::string& key, const std::string& unit) const {
    const std::string what = fmt::format("a positive number in {}", unit);
    return number(member(obj, path, key, what), pointer(path, key), what, 0, false);
  }
  double non_negative(const json& obj, const std::string& path, const std::string& key, const std::string& unit) const {
    const std::string what = fmt::format("a number >= 0 in {}", unit);
    return number(member(obj, path, key, what), pointer(path, key), what, 0, true);
  }
  double fraction(const json& v, const std::string& path) const {
    return number(v, path, "a fraction in (0, 1]", 0, false, true);
  }

  // An object keyed by math precision; amp is refused because it always runs on the fp16 entry.
  std::map<Precision, double> by_precision(const json& obj, const std::string& path, bool fractions) const {
    expect_object(obj, path, {});
    std::map<Precision, double> out;
    for (const auto& [key, value] : obj.items()) {
      const std::string at = pointer(path, key);
      const auto p = parse_precision(key);
      if (!p) fail(at, fmt::format("unknown precision (expected one of: {})", fmt::join(math_precision_names(), ", ")));
      if (*p == Precision::amp) fail(at, "amp is not a math precision: AMP uses the fp16 entry");
      out[*p] = fractions ? fraction(value, at) : number(value, at, "a positive number in FLOP/s", 0, false);
    }
    return out;
  }

private:
  static std::vector<std::string> math_precision_names() {
    auto names = precision_names();
    names.erase(std::remove(names.begin(), names.end(), std::string(to_string(Precision::amp))), names.end());
    return names;
  }
  static std::string describe(const json& v) { return v.is_string() ? "an empty string" : v.type_name(); }

  const std::string& origin_;
};

// Efficiencies and peaks must cover the same precisions: a peak without an efficiency could not be used,
// an efficiency without a peak is a typo.
void check_same_precisions(const Reader& r, const std::map<Precision, double>& peaks,
                           const std::map<Precision, double>& eff, const std::string& path) {
  for (const auto& [p, value] : peaks)
    if (!eff.contains(p))
      r.fail(pointer(path, std::string(to_string(p))),
             fmt::format("expected a fraction in (0, 1], but it is missing (/peak_flops has {})", to_string(p)));
  for (const auto& [p, value] : eff)
    if (!peaks.contains(p))
      r.fail(pointer(path, std::string(to_string(p))), fmt::format("/peak_flops has no {} entry", to_string(p)));
}

} // namespace

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
  const auto& table = k == KernelClass::gemm          ? gemm_efficiency
                      : k == KernelClass::convolution ? conv_efficiency
                                                      : attention_efficiency;
  const Precision math = math_precision(p);
  const auto it = table.find(math);
  if (it != table.end()) return it->second;
  const char* kind = k == KernelClass::gemm          ? "gemm"
                     : k == KernelClass::convolution ? "convolution"
                                                     : "fused attention";
  throw std::out_of_range(fmt::format("GPU '{}' has no {} efficiency for {}", name, kind, to_string(math)));
}

GpuProfile parse_profile(const std::string& json_text, const std::string& origin) {
  const Reader r(origin);
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(fmt::format("{}: invalid JSON: {}", origin, e.what()));
  }
  r.expect_object(doc, "",
                  {"name", "display_name", "provenance", "sources", "peak_flops", "memory", "links", "efficiency",
                   "launch_overhead", "collectives", "compute_units"});

  GpuProfile g;
  g.name = r.string(doc, "", "name");
  g.display_name = r.string(doc, "", "display_name");
  g.provenance = r.string(doc, "", "provenance");
  if (g.provenance != "derived" && g.provenance != "measured")
    r.fail("/provenance", fmt::format("expected \"derived\" or \"measured\", got \"{}\"", g.provenance));

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
  r.expect_object(memory, "/memory", {"capacity", "bandwidth", "efficiency"});
  g.memory_bytes = r.positive(memory, "/memory", "capacity", "bytes");
  g.memory_bandwidth = r.positive(memory, "/memory", "bandwidth", "bytes/s");
  g.memory_efficiency =
      r.fraction(r.member(memory, "/memory", "efficiency", "a fraction in (0, 1]"), "/memory/efficiency");

  const json& links = r.member(doc, "", "links", "an object with nvlink_bandwidth and pcie_bandwidth");
  r.expect_object(links, "/links", {"nvlink_bandwidth", "pcie_bandwidth"});
  g.nvlink_bandwidth = r.non_negative(links, "/links", "nvlink_bandwidth", "bytes/s per direction (0: no NVLink)");
  g.pcie_bandwidth = r.positive(links, "/links", "pcie_bandwidth", "bytes/s per direction");

  const json& eff = r.member(doc, "", "efficiency", "an object with gemm and convolution");
  r.expect_object(eff, "/efficiency", {"gemm", "convolution", "attention"});
  g.gemm_efficiency = r.by_precision(r.member(eff, "/efficiency", "gemm", "an object of fractions by precision"),
                                     "/efficiency/gemm", true);
  g.conv_efficiency = r.by_precision(r.member(eff, "/efficiency", "convolution", "an object of fractions by precision"),
                                     "/efficiency/convolution", true);
  check_same_precisions(r, g.peak_flops, g.gemm_efficiency, "/efficiency/gemm");
  check_same_precisions(r, g.peak_flops, g.conv_efficiency, "/efficiency/convolution");
  if (eff.contains("attention")) {
    g.attention_efficiency = r.by_precision(eff.at("attention"), "/efficiency/attention", true);
    for (const auto& [p, value] : g.attention_efficiency)
      if (!g.peak_flops.contains(p))
        r.fail(pointer("/efficiency/attention", std::string(to_string(p))),
               fmt::format("/peak_flops has no {} entry", to_string(p)));
  }

  g.launch_overhead = r.non_negative(doc, "", "launch_overhead", "seconds");
  if (doc.contains("compute_units")) {
    const json& units = doc.at("compute_units");
    if (!units.is_number_integer() || units.get<long>() < 1 || units.get<long>() > 100000)
      r.fail("/compute_units", fmt::format("expected a positive whole number of SMs, got {}", units.dump()));
    g.compute_units = units.get<int>();
  }

  const json& coll = r.member(doc, "", "collectives", "an object with step_overhead");
  r.expect_object(coll, "/collectives", {"step_overhead"});
  g.collective_step_overhead = r.non_negative(coll, "/collectives", "step_overhead", "seconds");
  return g;
}

std::optional<GpuProfile> find_profile(const std::string& name) {
  for (const auto& file : embedded_profiles()) {
    if (file.stem != name) continue;
    const std::string origin = fmt::format("calibration/profiles/{}.json", file.stem);
    GpuProfile g = parse_profile(file.text, origin);
    // The file name is the preset key; a mismatching "name" would make reports disagree with scenarios.
    if (g.name != file.stem)
      throw std::runtime_error(
          fmt::format("{}: /name: expected \"{}\" (the file name), got \"{}\"", origin, file.stem, g.name));
    return g;
  }
  return std::nullopt;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  for (const auto& file : embedded_profiles())
    names.push_back(file.stem);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace dtsim::calibration
