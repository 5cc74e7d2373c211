// The "input" section: each node's input pipeline (data loading and augmentation on the CPUs, reading from
// storage). Optional; without it the GPUs never wait for data.
#include "sim/scenario/reader.hpp"

#include "topologies/instance.hpp"

#include <fmt/format.h>

namespace dtsim::scenario::detail {
namespace {

constexpr std::int64_t kMaxCores = std::int64_t{1} << 20;

// A rate in samples per second: a plain number > 0.
double samples_per_second(const Object& section, std::string_view key) {
  const std::string expected = "a number of samples per second > 0 (for example 70)";
  const json* v = section.get(key);
  if (v == nullptr)
    section.fail(key, fmt::format("missing; expected {}: what one CPU core decodes and augments", expected));
  if (!v->is_number() || !(v->get<double>() > 0))
    section.fail(key, fmt::format("expected {}, got {}", expected, show(*v)));
  return v->get<double>();
}

} // namespace

std::optional<InputSpec> read_input(const Object& top, const Scenario& s) {
  const Object section =
      top.object("input", {"cpu_cores", "samples_per_core_per_second", "sample_bytes", "storage_bandwidth"});
  if (!section.present()) return std::nullopt;
  InputSpec in;
  // An instance publishes its vCPUs (each a hyperthread on most clouds); a node described field by field does not.
  std::optional<std::int64_t> vcpus;
  if (!s.cluster.instance.empty())
    if (const auto instance = topologies::find_instance(s.cluster.instance); instance && instance->vcpus > 0)
      vcpus = instance->vcpus;
  if (!section.has("cpu_cores") && !vcpus)
    section.fail("cpu_cores", "missing; expected an integer >= 1, the CPU cores of each node that load data (it "
                              "defaults to the instance's vCPUs only when cluster.instance names one)");
  in.cpu_cores = static_cast<int>(section.integer("cpu_cores", 1, vcpus, kMaxCores));
  in.samples_per_core_per_second = samples_per_second(section, "samples_per_core_per_second");
  in.sample_bytes = section.quantity("sample_bytes", Dimension::bytes, Bound::positive, 0.0);
  in.storage_bandwidth = section.quantity("storage_bandwidth", Dimension::bandwidth, Bound::positive, 0.0);
  if (section.has("storage_bandwidth") && !section.has("sample_bytes"))
    section.fail("storage_bandwidth", "a storage bound needs \"sample_bytes\" too (the bytes read per sample, "
                                      "for example \"110KB\" for an ImageNet JPEG)");
  return in;
}

} // namespace dtsim::scenario::detail
