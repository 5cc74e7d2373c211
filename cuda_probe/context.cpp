#include <cstdio>

#include "errors.hpp"
#include "probe.hpp"

namespace dtsim::probe {

void Results::skip(const std::string& what, const std::string& reason) {
  std::fprintf(stderr, "  skipped %s: %s\n", what.c_str(), reason.c_str());
  skipped.push_back(Record().set("what", what).set("reason", reason));
}

void Results::fail(const std::string& what, const std::string& error) {
  std::fprintf(stderr, "dtsim-probe: %s: %s (its measurements are dropped)\n", what.c_str(), error.c_str());
  failed_checks.push_back(Record().set("what", what).set("error", error));
}

std::size_t Context::free_bytes() const {
  PROBE_CUDA(cudaSetDevice(device));
  std::size_t free = 0, total = 0;
  PROBE_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

bool Context::fits(const std::string& what, std::size_t bytes) {
  const std::size_t free = free_bytes();
  if (static_cast<double>(bytes) <= 0.85 * static_cast<double>(free)) return true;
  results.skip(what, "needs " + human_bytes(static_cast<double>(bytes)) + " of device memory, " +
                         human_bytes(static_cast<double>(free)) + " free");
  return false;
}

void Context::guarded(const std::string& what, const std::function<void()>& body) {
  // A failed check drops every measurement of the kind.
  const std::size_t kept = results.measurements.size();
  try {
    body();
  } catch (const CheckFailed& e) {
    results.measurements.resize(kept);
    results.fail(what, e.what());
  } catch (const Unsupported& e) {
    results.skip(what, e.what()); // what was measured before it passed its check and stays
  }
}

} // namespace dtsim::probe
