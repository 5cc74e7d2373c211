#include "calibration/power_document.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>
#include <vector>

namespace dtsim::calibration::detail {

namespace {

// Physical bounds on the energies, far outside any GPU's (an H100 spends 0.8 pJ a bf16 GEMM FLOP and 91 pJ a byte of
// HBM; a 2012 GTX 680, about 65 pJ a FLOP): past them the clock the limit allows falls to nothing and a kernel's
// time to infinity, which the simulation cannot carry.
constexpr double kMostJoulesPerFlop = 1e-9; // 1 kW at 1 TFLOP/s
constexpr double kMostJoulesPerByte = 1e-8; // 1 kW at 100 GB/s

// The kernel classes with an energy per FLOP of their own, as the profile names them.
constexpr std::pair<const char*, KernelClass> kFlopTables[] = {{"gemm", KernelClass::gemm},
                                                               {"attention", KernelClass::attention},
                                                               {"attention_cudnn", KernelClass::cudnn_attention}};

// "sustained": the energy of work at the power limit and the clock's two ends.
void read_sustained(const Reader& r, const json& s, const GpuProfile& g, GpuProfile::Power& p) {
  const std::string at = "/power/sustained";
  r.expect_object(s, at, {"joules_per_flop", "joules_per_byte", "sm_clock"});
  const json& flop = r.member(s, at, "joules_per_flop", "an object of joules per FLOP by kernel class");
  r.expect_object(flop, at + "/joules_per_flop", {"gemm", "attention", "attention_cudnn"});
  for (const auto& [key, kind] : kFlopTables) {
    const json* table = Reader::find(flop, key);
    if (!table) continue;
    const std::string path = pointer(at + "/joules_per_flop", key);
    r.expect_object(*table, path, {});
    auto& out = p.joules_per_flop[kind];
    for (const auto& [name, value] : table->items()) {
      const Precision precision = r.math_precision_at(json(name), pointer(path, name));
      if (!g.peak_flops.contains(precision))
        r.fail(pointer(path, name), fmt::format("/peak_flops has no {} entry", name));
      out[precision] = r.number(value, pointer(path, name), "a positive number of joules per FLOP", 0, false);
      if (out[precision] > kMostJoulesPerFlop)
        r.fail(pointer(path, name), fmt::format("expected at most {:g} joules per FLOP (1 kW at 1 TFLOP/s), got {:g}",
                                                kMostJoulesPerFlop, out[precision]));
    }
  }
  p.joules_per_byte = r.positive(s, at, "joules_per_byte", "joules per byte moved through HBM");
  if (p.joules_per_byte > kMostJoulesPerByte)
    r.fail(at + "/joules_per_byte", fmt::format("expected at most {:g} joules per byte (1 kW at 100 GB/s), got {:g}",
                                                kMostJoulesPerByte, p.joules_per_byte));
  const json* found = Reader::find(s, "sm_clock");
  if (!found) return; // no measured clock at the limit: reports show none
  const json& clock = *found;
  r.expect_object(clock, at + "/sm_clock", {"max_mhz", "at_limit_mhz", "rate_at_limit"});
  p.max_clock_mhz = r.positive(clock, at + "/sm_clock", "max_mhz", "MHz");
  p.limit_clock_mhz = r.positive(clock, at + "/sm_clock", "at_limit_mhz", "MHz");
  p.rate_at_limit = r.fraction(r.member(clock, at + "/sm_clock", "rate_at_limit", "a fraction in (0, 1]"),
                               at + "/sm_clock/rate_at_limit");
  if (p.limit_clock_mhz > p.max_clock_mhz)
    r.fail(at + "/sm_clock/at_limit_mhz",
           fmt::format("expected at most max_mhz ({}), got {}", p.max_clock_mhz, p.limit_clock_mhz));
}

} // namespace

GpuProfile::Power read_power(const Reader& r, const json& power, const GpuProfile& g) {
  r.expect_object(power, "/power", {"tdp", "idle", "math", "memory", "sustained"});
  GpuProfile::Power p;
  p.tdp = r.positive(power, "/power", "tdp", "watts");
  p.idle = r.positive(power, "/power", "idle", "watts");
  p.math = r.positive(power, "/power", "math", "watts");
  p.memory = r.positive(power, "/power", "memory", "watts");
  if (!(p.idle <= p.memory && p.memory <= p.math))
    r.fail("/power",
           fmt::format("expected idle <= memory <= math watts, got {} <= {} <= {}", p.idle, p.memory, p.math));
  if (const json* sustained = Reader::find(power, "sustained")) {
    if (!(p.idle < p.math)) r.fail("/power/math", "expected more than idle: the draw of work held at the limit");
    read_sustained(r, *sustained, g, p);
  }
  return p;
}

std::string power_to_json(const GpuProfile::Power& p) {
  const std::string head = fmt::format("\"tdp\": {}, \"idle\": {}, \"math\": {}, \"memory\": {}", json_number(p.tdp),
                                       json_number(p.idle), json_number(p.math), json_number(p.memory));
  if (!p.sustained_known()) return fmt::format("\"power\": {{{}}}", head);
  std::vector<std::string> tables;
  for (const auto& [key, kind] : kFlopTables)
    if (const auto it = p.joules_per_flop.find(kind); it != p.joules_per_flop.end())
      tables.push_back(fmt::format("\"{}\": {}", key, by_precision_inline(it->second)));
  const std::string clock =
      p.max_clock_mhz > 0
          ? fmt::format(",\n      \"sm_clock\": {{\"max_mhz\": {}, \"at_limit_mhz\": {}, \"rate_at_limit\": {}}}",
                        json_number(p.max_clock_mhz), json_number(p.limit_clock_mhz), json_number(p.rate_at_limit))
          : std::string();
  return fmt::format(
      "\"power\": {{{},\n    \"sustained\": {{\"joules_per_flop\": {{{}}}, \"joules_per_byte\": {}{}}}}}", head,
      fmt::join(tables, ", "), json_number(p.joules_per_byte), clock);
}

} // namespace dtsim::calibration::detail
