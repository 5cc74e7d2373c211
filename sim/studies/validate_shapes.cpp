// Op cases from a measurement of kernels at training shapes (validate.hpp: shape_cases).
#include "sim/studies/validate.hpp"
#include "sim/studies/validate_detail.hpp"

#include "calibration/gemm_model.hpp"
#include "calibration/profile.hpp"
#include "calibration/shape_timings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

namespace dtsim::studies::validate {

namespace {

using detail::Reader;

// Bursts shorter than this were timed with an event between kernels on a GPU just out of an idle pause: the gaps
// cost as much as the kernel (the same kernels ran 2 to 8 times faster replayed from a CUDA graph).
constexpr double kShortestBurst = 50e-6;
// A burst slower than this many times the kernel held at the power limit is left out as disturbed.
constexpr double kDisturbedBurst = 1.2;

std::string shape_of(const calibration::ShapePoint& p) {
  if (calibration::fused_attention(p.kind))
    return fmt::format("{:.0f} x {:.0f} heads of {:.0f}", p.batch, p.heads, p.head_dim);
  if (p.kind == calibration::KernelClass::memory) return fmt::format("{:.4g} GB", p.bytes / 1e9);
  const auto mnk = fmt::format("{:.0f}x{:.0f}x{:.0f}", p.m, p.n, p.k);
  return p.batch > 1 ? fmt::format("{} x {:.0f}", mnk, p.batch) : mnk;
}

KernelOp op_of(const calibration::ShapePoint& p, const std::string& profile, bool sustained) {
  KernelOp op;
  op.profile = profile;
  op.kind = p.kind;
  op.precision = p.precision;
  op.sustained = sustained;
  if (p.kind == calibration::KernelClass::memory) {
    op.bytes = p.bytes;
  } else if (calibration::fused_attention(p.kind)) {
    op.sequence = p.sequence;
    op.head_dim = p.head_dim;
    op.batch = p.batch * p.heads;
    op.causal = p.causal;
    op.backward = p.backward;
  } else {
    op.m = p.m, op.n = p.n, op.k = p.k, op.batch = p.batch;
    // torch.nn.Linear's layouts: x w^T and g w are led by n and k; the weight gradient g^T x by m (g's rows) and n.
    op.unaligned = p.layout == "weight_grad" ? calibration::off_16_bytes({p.m, p.n}, p.precision)
                                             : calibration::off_16_bytes({p.n, p.k}, p.precision);
  }
  return op;
}

} // namespace

ShapeCases shape_cases(const nlohmann::json& document, const std::string& file) {
  const Reader r(file);
  r.only(document, "", {"name", "source", "note", "measurements"});
  const auto name = r.text(document, "", "name");
  const auto source = r.text(document, "", "source");
  const auto note = r.optional_text(document, "", "note");
  const auto& m = r.object(document, "", "measurements");
  r.only(m, "/measurements", {"file", "profile", "anchors"});
  const auto relative = r.text(m, "/measurements", "file");
  const auto profile = r.text(m, "/measurements", "profile");
  if (!calibration::find_profile(profile))
    r.fail("/measurements/profile", fmt::format("unknown GPU profile \"{}\" (expected one of: {})", profile,
                                                detail::join(calibration::profile_names())));
  std::set<std::string> anchors;
  if (m.contains("anchors")) {
    if (!m.at("anchors").is_array()) r.fail("/measurements/anchors", "expected an array of case names");
    for (std::size_t i = 0; i < m.at("anchors").size(); ++i) {
      const auto& a = m.at("anchors")[i];
      if (!a.is_string()) r.fail(fmt::format("/measurements/anchors/{}", i), "expected a case name");
      anchors.insert(a.get<std::string>());
    }
  }
  const auto path = (std::filesystem::path(file).parent_path() / relative).lexically_normal().string();
  calibration::ShapeTimings timings;
  try {
    timings = calibration::load_shape_timings(path);
  } catch (const calibration::CalibrationError& e) {
    r.fail("/measurements/file", e.what());
  }

  ShapeCases out;
  for (const auto& p : timings.points) {
    const auto what =
        fmt::format("{} {} {}", p.label, shape_of(p),
                    p.kind == calibration::KernelClass::memory ? "" : calibration::to_string(p.precision));
    for (const bool sustained : {false, true}) {
      const auto& t = sustained ? p.sustained : p.burst;
      if (t.seconds <= 0) continue;
      const char* regime = sustained ? "sustained" : "burst";
      if (sustained && p.kind == calibration::KernelClass::memory && !p.eager) {
        out.skipped.push_back(fmt::format("{}, sustained: replayed from a CUDA graph, whose copy ran on the copy "
                                          "engines, not as the kernel the burst timed",
                                          what));
        continue;
      }
      if (!sustained && t.seconds < kShortestBurst) {
        out.skipped.push_back(
            fmt::format("{}, burst: {:.1f} us, shorter than the 50 us a burst needs", what, t.seconds * 1e6));
        continue;
      }
      // The clock can only be lower at the power limit: a burst much slower than the same kernel held there was
      // disturbed (the GPU still waking from its pause, its first kernels' events apart).
      if (!sustained && p.sustained.seconds > 0 && t.seconds > kDisturbedBurst * p.sustained.seconds) {
        out.skipped.push_back(fmt::format("{}, burst: {:.1f} us, slower than the {:.1f} us it took held at the power "
                                          "limit",
                                          what, t.seconds * 1e6, p.sustained.seconds * 1e6));
        continue;
      }
      Case c;
      c.file = file;
      c.group = name;
      c.name = fmt::format("{}: {}, {}", name, what, regime);
      c.source = fmt::format(
          "{}: {} ({}, {}; driver {}, cuBLASLt {}, cuDNN {}, PyTorch {}), {}{}", source, path, timings.device,
          timings.date, timings.driver, timings.cublaslt, timings.cudnn, timings.torch, regime,
          t.sm_clock_mhz > 0 ? fmt::format(": SM clock {:.0f} MHz, {:.0f} W", t.sm_clock_mhz, t.watts) : std::string());
      c.note = note;
      const bool memory = p.kind == calibration::KernelClass::memory;
      c.metric = memory ? Metric::bytes_per_second : Metric::tflops;
      c.unit = memory ? "GB/s" : "TFLOP/s";
      c.measured = memory ? p.bytes / t.seconds / 1e9 : p.flops / t.seconds / 1e12;
      c.what = op_of(p, profile, sustained);
      c.anchor = anchors.erase(c.name) > 0;
      out.cases.push_back(std::move(c));
    }
  }
  if (!anchors.empty()) r.fail("/measurements/anchors", fmt::format("no case is named \"{}\"", *anchors.begin()));
  for (auto& why : out.skipped)
    why = fmt::format("{}: {}", name, why);
  return out;
}

} // namespace dtsim::studies::validate
