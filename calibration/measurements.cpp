// Measurement files (docs/measurement-format.md): the rules `dtsim calibrate` enforces are listed there.
#include "calibration/measurements.hpp"
#include "calibration/json_reader.hpp"

#include <fmt/format.h>

namespace dtsim::calibration {
namespace {

using detail::pointer;
using detail::Reader;
using nlohmann::json;

const std::vector<std::string> kKinds{"gemm", "memory", "kernel", "attention", "copy", "launch", "collective"};

// Optional members: absent -> the fallback; present -> the same checks as a required one.
double optional_non_negative(const Reader& r, const json& obj, const std::string& path, const char* key,
                             const char* unit) {
  return Reader::find(obj, key) ? r.non_negative(obj, path, key, unit) : 0.0;
}
double optional_positive(const Reader& r, const json& obj, const std::string& path, const char* key, const char* unit,
                         double fallback) {
  return Reader::find(obj, key) ? r.positive(obj, path, key, unit) : fallback;
}
std::string optional_string(const Reader& r, const json& obj, const std::string& path, const char* key,
                            std::string fallback = {}) {
  return Reader::find(obj, key) ? r.string(obj, path, key) : fallback;
}

TimingStats read_stats(const Reader& r, const json& m, const std::string& path) {
  const json& s = r.member(m, path, "stats", "an object with runs and median (seconds)");
  const std::string at = pointer(path, "stats");
  r.expect_object(s, at, {});
  TimingStats t;
  t.runs = r.count(s, at, "runs", 1);
  t.median = r.positive(s, at, "median", "seconds");
  t.mean = optional_non_negative(r, s, at, "mean", "seconds");
  t.min = optional_non_negative(r, s, at, "min", "seconds");
  t.max = optional_non_negative(r, s, at, "max", "seconds");
  t.stddev = optional_non_negative(r, s, at, "stddev", "seconds");
  return t;
}

// Kinds that compute a result carry its check; the others (copies, launches, collectives) may. Anything but
// "passed" is refused: a kernel that computed a wrong result must not report a fast time.
void read_check(const Reader& r, const json& m, const std::string& path, bool required) {
  const json* check = Reader::find(m, "check");
  if (check == nullptr && !required) return;
  const std::string at = pointer(path, "check");
  if (check == nullptr) r.fail(at, "expected \"passed\", but it is missing (every computing kernel is checked)");
  if (!check->is_string() || check->get_ref<const std::string&>() != "passed")
    r.fail(at, fmt::format("expected \"passed\", got {}: a measurement whose result check did not pass is refused (a "
                           "broken kernel must not report a fast time)",
                           check->dump()));
}

void read_measurement(const Reader& r, const json& m, const std::string& at, MeasurementFile& out) {
  r.expect_object(m, at, {});
  const std::string kind = r.one_of(m, at, "kind", kKinds);
  const bool computes = kind == "gemm" || kind == "memory" || kind == "kernel" || kind == "attention";
  read_check(r, m, at, computes);
  const TimingStats stats = read_stats(r, m, at);
  if (kind == "gemm") {
    GemmMeasurement g;
    g.library = optional_string(r, m, at, "library");
    g.precision = r.precision(m, at, "precision");
    g.m = static_cast<double>(r.integer(m, at, "m", 1));
    g.n = static_cast<double>(r.integer(m, at, "n", 1));
    g.k = static_cast<double>(r.integer(m, at, "k", 1));
    g.batch = Reader::find(m, "batch") ? static_cast<double>(r.integer(m, at, "batch", 1)) : 1.0;
    g.flops = r.positive(m, at, "flops", "FLOPs");
    g.stats = stats;
    out.gemms.push_back(g);
  } else if (kind == "memory") {
    out.memory.push_back(
        {r.one_of(m, at, "op", {"copy", "scale", "triad"}), r.positive(m, at, "bytes", "bytes"), stats});
  } else if (kind == "kernel") {
    KernelMeasurement k;
    k.op = r.one_of(m, at, "op", {"elementwise", "softmax", "layernorm"});
    k.precision = r.precision(m, at, "precision");
    k.elements = Reader::find(m, "elements") ? static_cast<double>(r.integer(m, at, "elements", 1)) : 0.0;
    k.bytes = r.positive(m, at, "bytes", "bytes");
    k.stats = stats;
    out.kernels.push_back(k);
  } else if (kind == "attention") {
    AttentionMeasurement a;
    a.variant = r.one_of(m, at, "variant", {"plain", "fused"});
    a.precision = r.precision(m, at, "precision");
    const auto dim = [&](const char* key) {
      return Reader::find(m, key) ? static_cast<double>(r.integer(m, at, key, 1)) : 0.0;
    };
    a.batch = dim("batch");
    a.heads = dim("heads");
    a.sequence = dim("sequence");
    a.head_dim = dim("head_dim");
    a.causal = Reader::find(m, "causal") ? r.boolean(m, at, "causal") : false;
    a.flops = r.positive(m, at, "flops", "FLOPs");
    a.stats = stats;
    out.attention.push_back(a);
  } else if (kind == "copy") {
    CopyMeasurement c;
    c.direction = r.one_of(m, at, "direction", {"h2d", "d2h", "d2d", "p2p"});
    c.pinned = Reader::find(m, "pinned") ? r.boolean(m, at, "pinned") : false;
    c.src = Reader::find(m, "src") ? r.count(m, at, "src", 0) : -1;
    c.dst = Reader::find(m, "dst") ? r.count(m, at, "dst", 0) : -1;
    c.bytes = r.positive(m, at, "bytes", "bytes");
    c.stats = stats;
    out.copies.push_back(c);
  } else if (kind == "launch") {
    out.launches.push_back(stats);
  } else {
    CollectiveMeasurement c;
    c.op = r.one_of(m, at, "op", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"});
    c.ranks = r.count(m, at, "ranks", 1);
    c.bytes = r.positive(m, at, "bytes", "bytes");
    if (Reader::find(m, "precision")) c.precision = r.precision(m, at, "precision");
    c.stats = stats;
    out.collectives.push_back(c);
  }
}

} // namespace

MeasurementFile parse_measurements(const std::string& json_text, const std::string& origin) {
  const Reader r(origin);
  const json doc = detail::parse_document(json_text, origin);
  r.expect_object(doc, "", {});
  MeasurementFile f;
  f.origin = origin;

  const json& version = r.member(doc, "", "dtsim_measurements_version", fmt::format("{}", kMeasurementsVersion));
  if (!version.is_number_integer() || version.get<long>() != kMeasurementsVersion)
    r.fail("/dtsim_measurements_version",
           fmt::format("expected {} (the version this dtsim reads), got {}", kMeasurementsVersion, version.dump()));
  f.version = kMeasurementsVersion;
  f.probe_version = optional_string(r, doc, "", "probe_version", "unknown");
  f.date = r.string(doc, "", "date");
  f.host = optional_string(r, doc, "", "host");
  f.quick = Reader::find(doc, "quick") ? r.boolean(doc, "", "quick") : false;

  const json& device = r.member(doc, "", "device", "an object with name and sms");
  r.expect_object(device, "/device", {});
  f.device.name = r.string(device, "/device", "name");
  f.device.sms = r.count(device, "/device", "sms", 1);
  f.device.count = Reader::find(device, "count") ? r.count(device, "/device", "count", 1) : 0;
  f.device.compute_capability = optional_string(r, device, "/device", "compute_capability");
  f.device.clock_hz = optional_positive(r, device, "/device", "clock_hz", "Hz", 0);
  f.device.memory_clock_hz = optional_positive(r, device, "/device", "memory_clock_hz", "Hz", 0);
  f.device.memory_bus_bits = optional_positive(r, device, "/device", "memory_bus_bits", "bits", 0);
  f.device.memory_bytes = optional_positive(r, device, "/device", "memory_bytes", "bytes", 0);
  f.device.l2_bytes = optional_positive(r, device, "/device", "l2_bytes", "bytes", 0);

  f.driver_version = optional_string(r, doc, "", "driver_version");
  f.cuda_version = optional_string(r, doc, "", "cuda_version");
  f.cublas_version = optional_string(r, doc, "", "cublas_version");
  f.nccl_version = optional_string(r, doc, "", "nccl_version");

  const auto omissions = [&](const char* key, const char* why) {
    std::vector<MeasurementFile::Omission> out;
    const json* list = Reader::find(doc, key);
    if (list == nullptr) return out;
    const std::string at = pointer("", key);
    r.expect_array(*list, at, false);
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string item = pointer(at, i);
      r.expect_object((*list)[i], item, {});
      out.push_back({r.string((*list)[i], item, "what"), r.string((*list)[i], item, why)});
    }
    return out;
  };
  f.skipped = omissions("skipped", "reason");
  f.failed_checks = omissions("failed_checks", "error");

  const json& list = r.member(doc, "", "measurements", "a non-empty array of measurements");
  r.expect_array(list, "/measurements", true);
  for (std::size_t i = 0; i < list.size(); ++i)
    read_measurement(r, list[i], pointer("/measurements", i), f);
  return f;
}

MeasurementFile load_measurements(const std::string& path) {
  return parse_measurements(read_input_file(path, "measurement file"), path);
}

} // namespace dtsim::calibration
