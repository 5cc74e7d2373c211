// The PyTorch profiler trace reader on arbitrary text: it either refuses the trace with a ProfileError or gives a step
// whose times are finite and not negative, whose gradients and collectives name activities it has, and whose bytes
// are finite and not negative.
#include "fuzz/harness.hpp"
#include "sim/kineto/kineto.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

bool sane(double x) {
  return std::isfinite(x) && x >= 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dtsim::fuzz::finding;
  namespace kineto = dtsim::kineto;
  const std::string text(reinterpret_cast<const char*>(data), size);
  kineto::ProfiledStep step;
  if (!dtsim::fuzz::reads_or_refuses<kineto::ProfileError>("parse_profile",
                                                           [&] { step = kineto::parse_profile(text, "fuzz.json"); }))
    return 0;
  if (step.activities.empty()) finding("a step without activities was accepted");
  for (const auto& a : step.activities)
    if (!sane(a.seconds) || !sane(a.gap_before) || !sane(a.comm_wait) || a.comm_wait > a.gap_before + 1e-9 ||
        !sane(a.bytes))
      finding("an activity's time or bytes are not finite, negative, or its comm wait exceeds its gap");
  if (!sane(step.gap_after)) finding("the gap after the step is not finite or negative");
  for (const auto& g : step.gradients)
    if (!sane(g.bytes) || (g.ready_after && *g.ready_after >= step.activities.size()))
      finding("a gradient's bytes are not finite, or it is ready after an activity the step does not have");
  for (const auto& c : step.collectives)
    if (!sane(c.bytes) || (c.ready_after && *c.ready_after >= step.activities.size()))
      finding("a collective's bytes are not finite, or it follows an activity the step does not have");
  return 0;
}
