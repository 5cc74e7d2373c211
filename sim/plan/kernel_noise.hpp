#pragma once
// A kernel does not take the same time twice: run back to back on one GPU, the same kernel's times spread by about
// 0.9% (strategies::kMeasuredKernelNoiseSigma, the project's own probe runs). A rank's compute between two
// synchronizations is a sum of such kernels, and a group that synchronizes (a tensor-parallel collective, a
// context-parallel exchange, an expert all-to-all) waits there for its slowest member: each synchronization costs the
// expected maximum of g draws of that sum over its mean. With independent kernel times the sum's standard deviation
// is sigma sqrt(sum t_i^2), so over S synchronizations of one iteration, the kernels spread evenly among them,
//   wait = sigma sqrt(Q / S) sum_s z(g_s),   Q = sum over the iteration's kernels of t_i^2,
// z(g) the expected maximum of g standard normal draws (Blom's approximation, gpu_speed.hpp): 0 for g = 1, 0.59 for
// 2, 1.43 for 8. The wait is taken as its expectation, the same at every fidelity and in every iteration, so that a
// run stays deterministic and its steady state is still found.
//
// Synchronizations with thousands of kernels between them are left out: the gradient reduction once an iteration
// (an 8B model's ~10,000 kernels: sigma / sqrt(10,000) = 0.009% of the compute, times z) and a pipeline stage's
// boundary each micro-batch (hundreds of kernels: ~0.05%). Noise correlated from kernel to kernel (a clock that
// dips for milliseconds) would cost more than this independent-draw figure: it is a lower bound.
#include "sim/plan/plan.hpp"

#include <map>
#include <vector>

namespace dtsim::plan {

// The expected wait at the synchronizations of one iteration over its compute time (a fraction, 0 when sigma is 0,
// no group synchronizes, or nothing computes). `kernels`: one rank's kernels of one iteration; `syncs`: by the size
// of the group that waits, how many times the rank synchronizes with it in one iteration.
double synchronization_wait(double sigma, const std::vector<KernelRow>& kernels, const std::map<int, int>& syncs);

} // namespace dtsim::plan
