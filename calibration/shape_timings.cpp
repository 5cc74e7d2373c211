// The measurement file tools/measure/training_shapes.py writes (docs/measurement-format.md, "Training shapes").
#include "calibration/shape_timings.hpp"
#include "calibration/json_reader.hpp"

#include <fmt/format.h>

namespace dtsim::calibration {
namespace {

using detail::pointer;
using detail::Reader;
using nlohmann::json;

std::string text_of(const json& doc, const char* key) {
  const json* v = Reader::find(doc, key);
  if (!v || v->is_null()) return {};
  return v->is_string() ? v->get<std::string>() : v->dump();
}

ShapeTiming read_timing(const Reader& r, const json& point, const std::string& path, const char* key) {
  const std::string at = pointer(path, key);
  const json& t = r.member(point, path, key, "an object with median_s and telemetry");
  r.expect_object(t, at, {});
  ShapeTiming out;
  out.seconds = r.positive(t, at, "median_s", "seconds");
  if (const json* tel = Reader::find(t, "telemetry"); tel && tel->is_object()) {
    const std::string tat = pointer(at, "telemetry");
    out.sm_clock_mhz = r.positive(*tel, tat, "sm_clock_median_mhz", "MHz");
    out.watts = r.positive(*tel, tat, "power_median_w", "watts");
  }
  return out;
}

ShapePoint read_gemm(const Reader& r, const json& g, const std::string& at) {
  r.expect_object(g, at, {});
  ShapePoint p;
  p.kind = KernelClass::gemm;
  p.label = r.string(g, at, "label");
  p.precision = r.precision(g, at, "dtype");
  p.m = r.positive(g, at, "m", "rows");
  p.n = r.positive(g, at, "n", "columns");
  p.k = r.positive(g, at, "k", "the reduction's length");
  p.batch = Reader::find(g, "batch") ? static_cast<double>(r.integer(g, at, "batch", 1)) : 1.0;
  p.layout = Reader::find(g, "orient") ? r.one_of(g, at, "orient", {"forward", "input_grad", "weight_grad"})
                                       : std::string("batched");
  p.flops = r.positive(g, at, "flops", "FLOPs");
  if (std::abs(p.flops - 2 * p.m * p.n * p.k * p.batch) > 1e-6 * p.flops)
    r.fail(pointer(at, "flops"),
           fmt::format("expected 2 m n k batch = {}, got {}", 2 * p.m * p.n * p.k * p.batch, p.flops));
  return p;
}

ShapePoint read_attention(const Reader& r, const json& a, const std::string& at) {
  r.expect_object(a, at, {});
  ShapePoint p;
  p.backend = r.one_of(a, at, "backend", {"FLASH_ATTENTION", "CUDNN_ATTENTION"});
  // PyTorch's SDPA back-ends: flash-attn 2's kernels, or cuDNN's fused attention.
  p.kind = p.backend == "CUDNN_ATTENTION" ? KernelClass::cudnn_attention : KernelClass::attention;
  p.sequence = r.positive(a, at, "seq", "tokens");
  p.heads = r.positive(a, at, "heads", "heads");
  p.head_dim = r.positive(a, at, "head_dim", "elements");
  p.batch = r.positive(a, at, "batch", "sequences");
  p.causal = r.boolean(a, at, "causal");
  p.backward = r.one_of(a, at, "part", {"forward", "forward_backward"}) == "forward_backward";
  p.flops = r.positive(a, at, "flops", "FLOPs");
  p.label = fmt::format("{} s={:.0f} {}", p.backend, p.sequence, p.backward ? "forward+backward" : "forward");
  return p;
}

ShapePoint read_copy(const Reader& r, const json& c, const std::string& at) {
  r.expect_object(c, at, {});
  ShapePoint p;
  p.kind = KernelClass::memory;
  p.label = r.string(c, at, "label");
  p.bytes = r.positive(c, at, "bytes_read_plus_written", "bytes");
  p.eager = Reader::find(c, "eager") && r.boolean(c, at, "eager");
  return p;
}

} // namespace

ShapeTimings parse_shape_timings(const std::string& json_text, const std::string& origin) {
  const Reader r(origin);
  const json doc = detail::parse_document(json_text, origin);
  r.expect_object(doc, "", {});
  ShapeTimings out;
  out.origin = origin;
  out.device = r.string(doc, "", "device");
  out.date = r.string(doc, "", "date");
  out.driver = text_of(doc, "driver");
  out.cuda = text_of(doc, "cuda_runtime");
  out.cublaslt = text_of(doc, "cublaslt");
  out.cudnn = text_of(doc, "cudnn");
  out.torch = text_of(doc, "torch");
  out.power_limit_w = r.positive(doc, "", "enforced_power_limit_w", "watts");
  out.max_sm_clock_mhz = r.positive(doc, "", "max_sm_clock_mhz", "MHz");
  const auto list = [&](const char* key, auto read) {
    const json& items = r.member(doc, "", key, "an array");
    r.expect_array(items, pointer("", key), false);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string at = pointer(pointer("", key), i);
      ShapePoint p = read(r, items[i], at);
      p.burst = read_timing(r, items[i], at, "burst");
      if (Reader::find(items[i], "sustained")) p.sustained = read_timing(r, items[i], at, "sustained");
      out.points.push_back(std::move(p));
    }
  };
  list("gemms", read_gemm);
  list("attention", read_attention);
  list("copy", read_copy);
  return out;
}

ShapeTimings load_shape_timings(const std::string& path) {
  return parse_shape_timings(read_input_file(path, "measurement file"), path);
}

} // namespace dtsim::calibration
