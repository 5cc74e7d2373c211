#include "check.hpp"

#include <cmath>
#include <cstdio>

#include "errors.hpp"

namespace dtsim::probe {

namespace {

[[noreturn]] void mismatch(const std::string& what, std::size_t i, double got, double ref, double allowed) {
  char buf[256];
  std::snprintf(buf, sizeof buf, ": element %zu is %.8g, the reference %.8g (error %.3g, allowed %.3g)", i, got, ref,
                std::fabs(got - ref), allowed);
  throw CheckFailed("check failed: " + what + buf);
}

void expect_size(const std::string& what, std::size_t got, std::size_t ref) {
  if (got != ref || got == 0)
    throw CheckFailed("check failed: " + what + ": " + std::to_string(got) + " values against " + std::to_string(ref) +
                      " in the reference");
}

} // namespace

void expect_close(const std::string& what, const std::vector<float>& got, const std::vector<double>& ref, double atol,
                  double rtol) {
  expect_size(what, got.size(), ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double allowed = atol + rtol * std::fabs(ref[i]);
    // Written so that a NaN fails.
    if (!(std::fabs(static_cast<double>(got[i]) - ref[i]) <= allowed)) mismatch(what, i, got[i], ref[i], allowed);
  }
}

void expect_close_scaled(const std::string& what, const std::vector<float>& got, const std::vector<double>& ref,
                         const std::vector<double>& scale, double tol) {
  expect_size(what, got.size(), ref.size());
  expect_size(what, scale.size(), ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double allowed = tol * scale[i] + 1e-30;
    if (!(std::fabs(static_cast<double>(got[i]) - ref[i]) <= allowed)) mismatch(what, i, got[i], ref[i], allowed);
  }
}

} // namespace dtsim::probe
