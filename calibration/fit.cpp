// Fitting a profile from measurements: the method is described in fit.hpp.
#include "calibration/fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace dtsim::calibration {
namespace {

// The share of a measured time that is always kept as the kernel's work when the launch overhead is taken out.
constexpr double kMinWorkShare = 0.1;
// What the profile format allows a curve's efficiency to be (profile.cpp).
constexpr double kMaxComputeEfficiency = 1.0;
constexpr double kMaxMemoryEfficiency = 4.0;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "989.4 TFLOP/s", "3.35 TB/s", "450 GB/s": three or four significant digits, decimal prefixes.
std::string si(double value, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (i < 5 && std::fabs(value) >= 1000) {
    value /= 1000;
    ++i;
  }
  return fmt::format("{:.4g} {}{}", value, prefixes[i], unit);
}

// "256 MiB", "1.5 GiB", "512 bytes".
std::string binary_bytes(double bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{:.0f} bytes", bytes);
  int i = 0;
  bytes /= 1024;
  while (i < 3 && bytes >= 1024) {
    bytes /= 1024;
    ++i;
  }
  return fmt::format("{:.4g} {}", bytes, units[i]);
}

std::string percent(double fraction) {
  return fmt::format("{:.2g}%", fraction * 100);
}

const char* group_name(CurveGroup g) {
  switch (g) {
  case CurveGroup::gemm:
    return "gemm";
  case CurveGroup::attention_fused:
    return "attention fused";
  case CurveGroup::attention_plain:
    return "attention plain";
  case CurveGroup::memory:
    return "memory";
  case CurveGroup::kernel:
    return "kernel";
  }
  return "?";
}

} // namespace

std::vector<IsotonicBlock> pool_adjacent_violators(const std::vector<double>& values,
                                                   const std::vector<double>& weights) {
  if (!weights.empty() && weights.size() != values.size())
    throw std::invalid_argument(
        fmt::format("pool_adjacent_violators: {} values but {} weights", values.size(), weights.size()));
  std::vector<IsotonicBlock> blocks;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double w = weights.empty() ? 1.0 : weights[i];
    if (!(w > 0) || !std::isfinite(values[i]))
      throw std::invalid_argument(fmt::format("pool_adjacent_violators: value {} weight {} at {}", values[i], w, i));
    blocks.push_back({i, i, values[i], w});
    // Pool backwards while the last two blocks decrease: each pool is their weighted mean.
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].value > blocks.back().value) {
      IsotonicBlock b = blocks.back();
      blocks.pop_back();
      IsotonicBlock& a = blocks.back();
      const double weight = a.weight + b.weight;
      a.value = (a.value * a.weight + b.value * b.weight) / weight;
      a.weight = weight;
      a.last = b.last;
    }
  }
  return blocks;
}

EfficiencyCurve fit_monotone_curve(std::vector<EfficiencySample> samples) {
  for (const auto& s : samples)
    if (!(s.size > 0) || !std::isfinite(s.size) || !std::isfinite(s.efficiency))
      throw std::invalid_argument(
          fmt::format("fit_monotone_curve: sample at size {} efficiency {}", s.size, s.efficiency));
  std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
    return a.size != b.size ? a.size < b.size : a.efficiency < b.efficiency;
  });
  // Equal sizes first become one point (their mean, weighted by their count): a block boundary between two
  // measurements of the same size would give two knots at one size.
  std::vector<double> sizes, values, weights;
  for (const auto& s : samples) {
    if (!sizes.empty() && sizes.back() == s.size) {
      values.back() = (values.back() * weights.back() + s.efficiency) / (weights.back() + 1);
      weights.back() += 1;
      continue;
    }
    sizes.push_back(s.size);
    values.push_back(s.efficiency);
    weights.push_back(1);
  }
  EfficiencyCurve curve;
  for (const auto& b : pool_adjacent_violators(values, weights)) {
    double log_sum = 0, weight = 0;
    for (std::size_t i = b.first; i <= b.last; ++i) {
      log_sum += weights[i] * std::log10(sizes[i]);
      weight += weights[i];
    }
    curve.knots.push_back({std::pow(10.0, log_sum / weight), b.value});
  }
  return curve;
}

double sample_efficiency(const TimedSample& s, const CurveFitOptions& o) {
  const double work = std::max(s.seconds - o.launch_overhead, kMinWorkShare * s.seconds);
  return s.size / (work * o.rate);
}

double predicted_seconds(const EfficiencyCurve& curve, double size, const CurveFitOptions& o) {
  return size / (o.rate * curve.at(size)) + o.launch_overhead;
}

std::vector<std::size_t> held_back_positions(const std::vector<TimedSample>& samples, std::size_t every) {
  std::vector<std::size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto &x = samples[a], &y = samples[b];
    return x.size != y.size ? x.size < y.size : x.seconds < y.seconds;
  });
  std::vector<std::size_t> held;
  for (std::size_t i = 0; every > 0 && i < order.size(); ++i)
    if ((i + 1) % every == 0) held.push_back(order[i]);
  return held;
}

CurveFit fit_efficiency_curve(std::vector<TimedSample> samples, const CurveFitOptions& o) {
  if (samples.empty()) throw std::invalid_argument("fit_efficiency_curve: no samples");
  if (!(o.rate > 0) || !(o.launch_overhead >= 0) || o.hold_back_every == 1)
    throw std::invalid_argument(fmt::format("fit_efficiency_curve: rate {}, launch overhead {}, hold back every {}",
                                            o.rate, o.launch_overhead, o.hold_back_every));
  for (const auto& s : samples)
    if (!(s.size > 0) || !(s.seconds > 0) || !std::isfinite(s.size) || !std::isfinite(s.seconds))
      throw std::invalid_argument(fmt::format("fit_efficiency_curve: sample of size {} in {} s", s.size, s.seconds));
  const auto held_positions = held_back_positions(samples, o.hold_back_every);
  std::vector<bool> is_held(samples.size(), false);
  std::vector<TimedSample> held;
  for (auto i : held_positions) {
    is_held[i] = true;
    held.push_back(samples[i]);
  }
  std::vector<EfficiencySample> train;
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (!is_held[i]) train.push_back({samples[i].size, sample_efficiency(samples[i], o)});
  CurveFit fit;
  const auto [smallest, largest] =
      std::minmax_element(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.size < b.size; });
  fit.min_size = smallest->size;
  fit.max_size = largest->size;
  fit.curve = fit_monotone_curve(std::move(train));
  fit.fitted = samples.size() - held.size();
  fit.held_back = held.size();
  if (!held.empty()) {
    std::vector<double> errors;
    for (const auto& s : held)
      errors.push_back(std::fabs(predicted_seconds(fit.curve, s.size, o) - s.seconds) / s.seconds);
    fit.max_error = *std::max_element(errors.begin(), errors.end());
    fit.median_error = median(errors);
  }
  return fit;
}

AlphaBeta fit_alpha_beta(const std::vector<TimedSample>& samples) {
  std::vector<double> sizes;
  for (const auto& s : samples) {
    if (!(s.size >= 0) || !(s.seconds > 0) || !std::isfinite(s.size) || !std::isfinite(s.seconds))
      throw std::invalid_argument(fmt::format("alpha-beta fit: a sample of {} bytes in {} s", s.size, s.seconds));
    sizes.push_back(s.size);
  }
  std::sort(sizes.begin(), sizes.end());
  if (std::unique(sizes.begin(), sizes.end()) - sizes.begin() < 2)
    throw std::invalid_argument("alpha-beta fit: needs at least two different sizes");
  // Minimise sum ((alpha + beta s - t) / t)^2 = sum (alpha u + beta x - 1)^2 with u = 1/t, x = s/t.
  double suu = 0, sux = 0, sxx = 0, su = 0, sx = 0;
  for (const auto& s : samples) {
    const double u = 1 / s.seconds, x = s.size / s.seconds;
    suu += u * u;
    sux += u * x;
    sxx += x * x;
    su += u;
    sx += x;
  }
  AlphaBeta ab;
  const double det = suu * sxx - sux * sux;
  ab.alpha = (su * sxx - sx * sux) / det;
  ab.beta = (suu * sx - sux * su) / det;
  if (!(ab.alpha >= 0) || !std::isfinite(ab.beta)) { // no latency to speak of: the best pure bandwidth
    ab.alpha = 0;
    ab.beta = sx / sxx;
  }
  if (!(ab.beta > 0))
    throw std::invalid_argument("alpha-beta fit: the times do not grow with the size (no bandwidth to fit)");
  std::vector<double> errors;
  for (const auto& s : samples)
    errors.push_back(std::fabs(ab.alpha + ab.beta * s.size - s.seconds) / s.seconds);
  ab.points = samples.size();
  ab.median_error = median(errors);
  ab.max_error = *std::max_element(errors.begin(), errors.end());
  return ab;
}

const NamedCurveFit* MeasurementFit::find(CurveGroup group, std::optional<Precision> precision) const {
  for (const auto& c : curves)
    if (c.group == group && c.precision == precision) return &c;
  return nullptr;
}

MeasurementFit fit_measurements(const MeasurementFile& m, const GpuProfile& base) {
  MeasurementFit fit;
  if (!m.launches.empty()) {
    std::vector<double> medians;
    for (const auto& l : m.launches)
      medians.push_back(l.median);
    fit.launch_overhead = median(medians);
    fit.launch_points = medians.size();
  }
  fit.launch_used = fit.launch_overhead.value_or(base.launch_overhead);

  const auto add = [&](CurveGroup group, std::optional<Precision> p, const std::string& op,
                       std::vector<TimedSample> samples) {
    NamedCurveFit c;
    c.group = group;
    c.precision = p;
    c.op = op;
    const bool memory_bound = group == CurveGroup::memory || group == CurveGroup::kernel;
    c.label = group == CurveGroup::memory   ? "memory"
              : group == CurveGroup::kernel ? fmt::format("kernel {} {}", op, to_string(*p))
                                            : fmt::format("{} {}", group_name(group), to_string(*p));
    c.size_unit = memory_bound ? "bytes" : "FLOPs";
    if (memory_bound) {
      c.options.rate = base.memory_bandwidth;
      c.rate_label = fmt::format("datasheet {}", si(base.memory_bandwidth, "B/s"));
    } else {
      if (!base.peak_flops.contains(*p)) {
        fit.notes.push_back(fmt::format("{}: {} measurement(s) left out: the base profile {} has no {} peak", c.label,
                                        samples.size(), base.name, to_string(*p)));
        return;
      }
      c.options.rate = base.peak(*p);
      c.rate_label = fmt::format("{} peak {}", to_string(*p), si(c.options.rate, "FLOP/s"));
    }
    c.options.launch_overhead = fit.launch_used;
    c.fit = fit_efficiency_curve(std::move(samples), c.options);
    fit.curves.push_back(std::move(c));
  };

  std::map<Precision, std::vector<TimedSample>> gemm;
  for (const auto& g : m.gemms)
    gemm[g.precision].push_back({g.flops, g.stats.median});
  for (auto& [p, samples] : gemm)
    add(CurveGroup::gemm, p, "", std::move(samples));

  std::map<std::pair<std::string, Precision>, std::vector<TimedSample>> attention;
  for (const auto& a : m.attention)
    attention[{a.variant, a.precision}].push_back({a.flops, a.stats.median});
  for (auto& [key, samples] : attention)
    add(key.first == "fused" ? CurveGroup::attention_fused : CurveGroup::attention_plain, key.second, "",
        std::move(samples));

  // The probe repeats each kernel back to back on the same buffers: data that fits in the L2 cache is read from it
  // after the first run, at several times HBM's rate (an H100 copies 32 MiB at 5.3 TB/s against 3.0 TB/s from HBM;
  // its L2 is 50 MiB). Such points measure the L2, not the HBM streaming efficiency these curves stand for, so they
  // are left out (every STREAM-like and row-wise kernel of the probe touches each byte it counts once: its
  // footprint is its bytes).
  std::size_t in_l2 = 0;
  const auto from_hbm = [&](double bytes) {
    const bool fits_l2 = m.device.l2_bytes > 0 && bytes <= m.device.l2_bytes;
    in_l2 += fits_l2 ? 1 : 0;
    return !fits_l2;
  };
  std::vector<TimedSample> memory;
  for (const auto& k : m.memory)
    if (from_hbm(k.bytes)) memory.push_back({k.bytes, k.stats.median});
  if (!memory.empty()) add(CurveGroup::memory, std::nullopt, "", std::move(memory));

  std::map<std::pair<std::string, Precision>, std::vector<TimedSample>> kernels;
  for (const auto& k : m.kernels)
    if (from_hbm(k.bytes)) kernels[{k.op, k.precision}].push_back({k.bytes, k.stats.median});
  if (in_l2 > 0)
    fit.notes.push_back(fmt::format("{} memory and kernel measurement(s) whose data fit in the {} L2 cache left out of "
                                    "the HBM efficiency curves: repeated back to back, they run from L2",
                                    in_l2, binary_bytes(m.device.l2_bytes)));
  for (auto& [key, samples] : kernels)
    add(CurveGroup::kernel, key.second, key.first, std::move(samples));

  // Link bandwidths: the copies of the largest size (where per-copy latency no longer matters), their median.
  const auto largest = [](const std::vector<const CopyMeasurement*>& copies) {
    double bytes = 0;
    for (const auto* c : copies)
      bytes = std::max(bytes, c->bytes);
    std::vector<double> rates;
    for (const auto* c : copies)
      if (c->bytes == bytes) rates.push_back(c->bytes / c->stats.median);
    return std::pair{bytes, median(rates)};
  };
  const auto copies = [&](const std::string& direction, std::optional<bool> pinned) {
    std::vector<const CopyMeasurement*> out;
    for (const auto& c : m.copies)
      if (c.direction == direction && (!pinned || c.pinned == *pinned)) out.push_back(&c);
    return out;
  };
  std::vector<std::string> pcie_parts;
  double pcie = 0;
  for (const char* direction : {"h2d", "d2h"}) {
    auto list = copies(direction, true);
    bool pinned = true;
    if (list.empty()) {
      list = copies(direction, std::nullopt);
      pinned = false;
    }
    if (list.empty()) continue;
    const auto [bytes, rate] = largest(list);
    pcie = std::max(pcie, rate);
    pcie_parts.push_back(fmt::format("{} {} copies of {}: {}", direction, pinned ? "pinned" : "pageable",
                                     binary_bytes(bytes), si(rate, "B/s")));
  }
  if (pcie > 0) fit.pcie = BandwidthFit{pcie, fmt::format("{}; the faster direction", fmt::join(pcie_parts, ", "))};
  if (const auto p2p = copies("p2p", std::nullopt); !p2p.empty()) {
    const auto [bytes, rate] = largest(p2p);
    if (base.nvlink_bandwidth > 0)
      fit.nvlink = BandwidthFit{
          rate, fmt::format("p2p copies of {}: {} (median over the GPU pairs)", binary_bytes(bytes), si(rate, "B/s"))};
    else
      fit.notes.push_back(fmt::format("p2p copies reach {} but the base profile {} has no NVLink: NVLink bandwidth "
                                      "kept at 0 (peer copies go over PCIe)",
                                      si(rate, "B/s"), base.name));
  }

  std::map<std::pair<std::string, int>, std::vector<TimedSample>> coll;
  for (const auto& c : m.collectives)
    coll[{c.op, c.ranks}].push_back({c.bytes, c.stats.median});
  for (const auto& [key, samples] : coll) {
    try {
      fit.collectives.push_back({key.first, key.second, fit_alpha_beta(samples)});
    } catch (const std::invalid_argument& e) {
      fit.notes.push_back(fmt::format("{} over {} ranks: not fitted ({})", key.first, key.second, e.what()));
    }
  }
  return fit;
}

namespace {

// Fitted figures are written with 4 significant digits: the fit is not more precise than that, and the profile
// stays readable.
double rounded(double v) {
  return std::stod(fmt::format("{:.4g}", v));
}

// The curve as the profile format holds it: rounded, and capped where the format caps efficiencies. Rounding keeps
// the order; a knot whose size rounds onto the previous one's is dropped.
EfficiencyCurve capped(const NamedCurveFit& c, double max, std::vector<std::string>& notes) {
  EfficiencyCurve out;
  double worst = 0;
  for (const auto& k : c.fit.curve.knots) {
    worst = std::max(worst, k.efficiency);
    const CurveKnot knot{rounded(k.size), std::min(rounded(k.efficiency), max)};
    if (out.knots.empty() || knot.size > out.knots.back().size) out.knots.push_back(knot);
  }
  if (worst > max)
    notes.push_back(fmt::format("{}: measured efficiency up to {:.3f} of the {} capped at {} (the base profile's "
                                "figure may be below this GPU's)",
                                c.label, worst, c.rate_label, max));
  return out;
}

std::string curve_source(const std::string& field, const NamedCurveFit& c) {
  std::string held = "no point held back (fewer than 5)";
  if (c.fit.median_error)
    held = fmt::format("held back every 5th point by size ({}): median error {}, max {} of the measured time",
                       c.fit.held_back, percent(*c.fit.median_error), percent(*c.fit.max_error));
  return fmt::format(
      "{}: {} knot(s), isotonic (pool-adjacent-violators) fit of efficiency = size / ((median time - "
      "launch overhead {:.3g} s) x {}) over {} of {} measurements from {:.3g} to {:.3g} {}, knots at the "
      "pooled blocks' mean log10 size; {}.",
      field, c.fit.curve.knots.size(), c.options.launch_overhead, c.rate_label, c.fit.fitted,
      c.fit.fitted + c.fit.held_back, c.fit.min_size, c.fit.max_size, c.size_unit, held);
}

} // namespace

GpuProfile measured_profile(const GpuProfile& base, const MeasurementFile& m, const MeasurementFit& fit,
                            const std::string& name, const std::string& measurements_path,
                            std::vector<std::string>* notes_out) {
  std::vector<std::string> notes;
  GpuProfile g = base;
  g.name = name;
  g.display_name = fmt::format("{} (measured {})", m.device.name, m.date);
  g.provenance = "measured";
  g.measured = MeasuredProvenance{m.device.name, m.date, m.probe_version, measurements_path};
  g.efficiency_curves.clear();
  g.memory_curve = {};
  g.sources.clear();
  g.sources.push_back(fmt::format("Measured by dtsim-probe {} on {}{} at {} (driver {}, CUDA {}); measurement file {} "
                                  "({} measurements); fitted by dtsim calibrate.",
                                  m.probe_version, m.device.name, m.host.empty() ? "" : " (" + m.host + ")", m.date,
                                  m.driver_version.empty() ? "unknown" : m.driver_version,
                                  m.cuda_version.empty() ? "unknown" : m.cuda_version, measurements_path, m.size()));
  g.sources.push_back(fmt::format(
      "peak_flops, memory.capacity, memory.bandwidth (the datasheet figure efficiencies are of), "
      "efficiency.convolution "
      "and collectives.step_overhead, and whatever was not measured: from the shipped profile {} ({}), whose sources "
      "follow prefixed with \"{}:\".",
      base.name, base.display_name, base.name));
  g.compute_units = m.device.sms;
  g.sources.push_back(
      fmt::format("compute_units = {}: the device's multiprocessor count as the probe read it.", m.device.sms));

  for (const auto& c : fit.curves) {
    if (c.group == CurveGroup::gemm) {
      const Precision p = *c.precision;
      g.efficiency_curves[KernelClass::gemm][p] = capped(c, kMaxComputeEfficiency, notes);
      g.gemm_efficiency[p] = g.efficiency_curves[KernelClass::gemm][p].plateau();
      g.sources.push_back(curve_source(fmt::format("efficiency_curves.gemm.{}", to_string(p)), c));
      g.sources.push_back(fmt::format("efficiency.gemm.{} = {:.3f}: the plateau (last knot) of that curve.",
                                      to_string(p), g.gemm_efficiency[p]));
    } else if (c.group == CurveGroup::attention_fused) {
      const Precision p = *c.precision;
      g.efficiency_curves[KernelClass::attention][p] = capped(c, kMaxComputeEfficiency, notes);
      g.attention_efficiency[p] = g.efficiency_curves[KernelClass::attention][p].plateau();
      g.sources.push_back(curve_source(fmt::format("efficiency_curves.attention.{}", to_string(p)), c));
      g.sources.push_back(fmt::format("efficiency.attention.{} = {:.3f}: the plateau of that curve (fused kernel).",
                                      to_string(p), g.attention_efficiency[p]));
    } else if (c.group == CurveGroup::memory) {
      g.memory_curve = capped(c, kMaxMemoryEfficiency, notes);
      g.memory_efficiency = std::min(1.0, g.memory_curve.plateau());
      g.sources.push_back(curve_source("efficiency_curves.memory (copy, scale and triad together)", c));
      g.sources.push_back(fmt::format("memory.efficiency = {:.3f}: the plateau of the memory curve{}.",
                                      g.memory_efficiency, g.memory_curve.plateau() > 1 ? ", capped at 1" : ""));
    }
  }
  if (fit.launch_overhead) {
    g.launch_overhead = rounded(*fit.launch_overhead);
    g.sources.push_back(fmt::format("launch_overhead = {:.3g} s: median of {} launch measurement(s) (an empty kernel, "
                                    "launch to completion).",
                                    g.launch_overhead, fit.launch_points));
  }
  if (fit.pcie) {
    g.pcie_bandwidth = rounded(fit.pcie->bytes_per_second);
    g.sources.push_back(fmt::format("links.pcie_bandwidth = {:.4g} bytes/s: {}.", g.pcie_bandwidth, fit.pcie->how));
  }
  if (fit.nvlink) {
    g.nvlink_bandwidth = rounded(fit.nvlink->bytes_per_second);
    g.sources.push_back(
        fmt::format("links.nvlink_bandwidth = {:.4g} bytes/s: {}.", g.nvlink_bandwidth, fit.nvlink->how));
  }
  for (const auto& c : fit.collectives)
    g.sources.push_back(
        fmt::format("Measured {} over {} ranks (not a profile field; the simulator models collectives from links and "
                    "collectives.step_overhead): alpha = {:.3g} s, beta = {:.4g} s/byte ({}), relative-error weighted "
                    "least squares "
                    "of time = alpha + bytes x beta over {} sizes, median error {}, max {}.",
                    c.op, c.ranks, c.fit.alpha, c.fit.beta, si(c.fit.bandwidth(), "B/s"), c.fit.points,
                    percent(c.fit.median_error), percent(c.fit.max_error)));
  for (const auto& s : base.sources)
    g.sources.push_back(fmt::format("{}: {}", base.name, s));
  if (notes_out) notes_out->insert(notes_out->end(), notes.begin(), notes.end());
  return g;
}

std::optional<std::string> default_base_profile(const std::string& device_name, double memory_bytes) {
  std::string name;
  for (char c : device_name)
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H200")) return "h200";
  if (has("H100")) return "h100-sxm";
  if (has("A100")) {
    if (has("80GB") || has("80G")) return "a100-80gb";
    if (has("40GB") || has("40G")) return "a100-40gb";
    if (memory_bytes > 0) return memory_bytes > 60e9 ? "a100-80gb" : "a100-40gb";
    return std::nullopt;
  }
  if (has("V100")) return "v100";
  return std::nullopt;
}

} // namespace dtsim::calibration
