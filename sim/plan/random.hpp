#pragma once
// Plan-private: the draws the planner makes from the scenario's seed (stragglers, gossip peers, expert routing), bit
// for bit the same with every standard library (std::*_distribution are not specified bit for bit).
#include <cmath>
#include <numbers>
#include <random>

namespace dtsim::plan::detail {

// Uniform in [0, 1) from 53 random bits.
inline double uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

inline double standard_normal(std::mt19937_64& rng) { // Box-Muller
  const double u = 1.0 - uniform(rng), v = uniform(rng);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2 * std::numbers::pi * v);
}

// Gamma(shape, 1) (Marsaglia and Tsang 2000; shape < 1 boosted by U^(1/shape)).
inline double gamma_draw(double shape, std::mt19937_64& rng) {
  if (shape < 1) return gamma_draw(shape + 1, rng) * std::pow(1.0 - uniform(rng), 1.0 / shape);
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = standard_normal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - uniform(rng);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

} // namespace dtsim::plan::detail
