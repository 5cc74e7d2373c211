// Comparing a kernel's output with a host reference. A mismatch throws CheckFailed naming the element, the value,
// the reference and the tolerance.
#pragma once

#include <string>
#include <vector>

namespace dtsim::probe {

// |got[i] - ref[i]| <= atol + rtol * |ref[i]| for every i.
void expect_close(const std::string& what, const std::vector<float>& got, const std::vector<double>& ref, double atol,
                  double rtol);

// |got[i] - ref[i]| <= tol * scale[i] for every i: a GEMM's error relative to sum_k |a_ik b_kj| (scale).
void expect_close_scaled(const std::string& what, const std::vector<float>& got, const std::vector<double>& ref,
                         const std::vector<double>& scale, double tol);

} // namespace dtsim::probe
