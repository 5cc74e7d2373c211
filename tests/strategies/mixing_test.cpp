// Peer graphs, mixing matrices and spectral gaps of decentralized averaging, against closed forms.
#include "sim/strategies/mixing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace dtsim::strategies {
namespace {

using Lists = std::vector<std::vector<int>>;

void expect_doubly_stochastic(const std::vector<double>& w, int n) {
  ASSERT_EQ(w.size(), static_cast<std::size_t>(n * n));
  for (int i = 0; i < n; ++i) {
    double row = 0, col = 0;
    for (int j = 0; j < n; ++j) {
      row += w[i * n + j];
      col += w[j * n + i];
      EXPECT_GE(w[i * n + j], 0) << i << "," << j;
      EXPECT_DOUBLE_EQ(w[i * n + j], w[j * n + i]) << i << "," << j;
    }
    EXPECT_NEAR(row, 1, 1e-12) << "row " << i;
    EXPECT_NEAR(col, 1, 1e-12) << "column " << i;
  }
}

TEST(Neighbours, RingsByHand) {
  EXPECT_EQ(neighbours(PeerGraph::ring, 0), Lists{});
  EXPECT_EQ(neighbours(PeerGraph::ring, 1), Lists{{}});
  EXPECT_EQ(neighbours(PeerGraph::ring, 2), (Lists{{1}, {0}}));
  EXPECT_EQ(neighbours(PeerGraph::ring, 4), (Lists{{1, 3}, {0, 2}, {1, 3}, {0, 2}}));
  EXPECT_THROW(neighbours(PeerGraph::ring, -1), std::invalid_argument);
}

TEST(Neighbours, ExponentialOfEightByHand) {
  // Distances 1, 2, 4 both ways: +4 and -4 are the same peer.
  const Lists expected{{1, 2, 4, 6, 7}, {0, 2, 3, 5, 7}, {0, 1, 3, 4, 6}, {1, 2, 4, 5, 7},
                       {0, 2, 3, 5, 6}, {1, 3, 4, 6, 7}, {0, 2, 4, 5, 7}, {0, 1, 3, 5, 6}};
  EXPECT_EQ(neighbours(PeerGraph::exponential, 8), expected);
  EXPECT_EQ(neighbours(PeerGraph::exponential, 1), Lists{{}});
  EXPECT_EQ(neighbours(PeerGraph::exponential, 2), (Lists{{1}, {0}}));
  EXPECT_EQ(neighbours(PeerGraph::exponential, 6)[0], (std::vector<int>{1, 2, 4, 5}));
}

TEST(MixingMatrix, RingHasUniformThirds) {
  const auto w = mixing_matrix(PeerGraph::ring, 8);
  expect_doubly_stochastic(w, 8);
  EXPECT_DOUBLE_EQ(w[0 * 8 + 0], 1.0 / 3);
  EXPECT_DOUBLE_EQ(w[0 * 8 + 1], 1.0 / 3);
  EXPECT_DOUBLE_EQ(w[0 * 8 + 7], 1.0 / 3);
  EXPECT_DOUBLE_EQ(w[0 * 8 + 2], 0);
}

TEST(MixingMatrix, MetropolisHastingsOnAnIrregularGraph) {
  // A star: the centre has degree 3, the leaves 1. Every edge weighs 1 / (1 + 3).
  const Lists star{{1, 2, 3}, {0}, {0}, {0}};
  const auto w = mixing_matrix(star);
  expect_doubly_stochastic(w, 4);
  EXPECT_DOUBLE_EQ(w[0], 0.25);
  EXPECT_DOUBLE_EQ(w[1 * 4 + 0], 0.25);
  EXPECT_DOUBLE_EQ(w[1 * 4 + 1], 0.75);
  EXPECT_THROW(mixing_matrix(Lists{{1}, {}}), std::invalid_argument);  // not symmetric
  EXPECT_THROW(mixing_matrix(Lists{{0}}), std::invalid_argument);      // a self loop
  EXPECT_THROW(mixing_matrix(Lists{{2}, {0}}), std::invalid_argument); // out of range
}

TEST(SpectralGap, RingMatchesItsClosedForm) {
  for (int n : {8, 16}) {
    const double expected = 1 - (1 + 2 * std::cos(2 * std::numbers::pi / n)) / 3;
    EXPECT_NEAR(spectral_gap(mixing_matrix(PeerGraph::ring, n), n), expected, 1e-12) << n;
  }
}

TEST(SpectralGap, CompleteAveragingIsOne) {
  for (int n : {1, 2, 5, 16}) {
    const std::vector<double> j(static_cast<std::size_t>(n * n), 1.0 / n);
    EXPECT_NEAR(spectral_gap(j, n), 1, 1e-12) << n;
  }
  EXPECT_DOUBLE_EQ(spectral_gap({}, 0), 1);
  EXPECT_NEAR(spectral_gap(mixing_matrix(PeerGraph::ring, 2), 2), 1, 1e-12); // averages the pair
}

TEST(SpectralGap, DisconnectedIsZero) {
  const std::vector<double> identity{1, 0, 0, 1};
  EXPECT_NEAR(spectral_gap(identity, 2), 0, 1e-12);
}

TEST(SpectralGap, JacobiAndCirculantAgreeOnARingOfTwelve) {
  const int n = 12;
  const auto w = mixing_matrix(PeerGraph::ring, n);
  ASSERT_TRUE(is_circulant(w, n));
  const auto jacobi = symmetric_eigenvalues(w, n);
  const auto circulant = circulant_eigenvalues(std::vector<double>(w.begin(), w.begin() + n));
  ASSERT_EQ(jacobi.size(), circulant.size());
  for (int k = 0; k < n; ++k)
    EXPECT_NEAR(jacobi[k], circulant[k], 1e-10) << k;
  EXPECT_NEAR(jacobi[0], 1, 1e-12);
}

TEST(SpectralGap, JacobiOnANonCirculantGraph) {
  // The star's mixing matrix [[1/4 1/4 1/4 1/4], [1/4 3/4 0 0], ...] has eigenvalues 1, 3/4, 3/4 and 0 (the
  // centre-leaf mode): the gap is 1/4.
  const auto w = mixing_matrix(Lists{{1, 2, 3}, {0}, {0}, {0}});
  EXPECT_FALSE(is_circulant(w, 4));
  EXPECT_NEAR(spectral_gap(w, 4), 0.25, 1e-12);
  const auto lambda = symmetric_eigenvalues(w, 4);
  EXPECT_NEAR(lambda[0], 1, 1e-12);
  EXPECT_NEAR(lambda[1], 0.75, 1e-12);
  EXPECT_NEAR(lambda[2], 0.75, 1e-12);
  EXPECT_NEAR(lambda[3], 0, 1e-12);
}

TEST(SpectralGap, ExponentialMixesFasterThanRing) {
  const int n = 16;
  const double ring = spectral_gap(mixing_matrix(PeerGraph::ring, n), n);
  const double exponential = spectral_gap(mixing_matrix(PeerGraph::exponential, n), n);
  EXPECT_GT(exponential, ring);
  // Jacobi agrees with the circulant path on the exponential graph too.
  const auto w = mixing_matrix(PeerGraph::exponential, n);
  const auto lambda = symmetric_eigenvalues(w, n);
  EXPECT_NEAR(exponential, 1 - std::max(std::abs(lambda[1]), std::abs(lambda[n - 1])), 1e-10);
}

TEST(SpectralGap, RejectsNonSymmetricOrMisshapen) {
  EXPECT_THROW(spectral_gap({0.5, 0.5, 0}, 2), std::invalid_argument);
  EXPECT_THROW(spectral_gap({0.9, 0.1, 0.2, 0.8}, 2), std::invalid_argument);
}

TEST(SpectralGap, ThousandWorkersInWellUnderASecond) {
  const auto start = std::chrono::steady_clock::now();
  for (auto graph : {PeerGraph::ring, PeerGraph::exponential}) {
    const double gap = spectral_gap(mixing_matrix(graph, 1024), 1024);
    EXPECT_GT(gap, 0);
    EXPECT_LT(gap, 1);
  }
  EXPECT_GT(spectral_gap(expected_gossip_matrix(1024, 0.1), 1024), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(ExpectedGossip, IsDoublyStochasticAndMixesFasterWithP) {
  const int n = 16;
  double previous = -1;
  for (double p : {0.0, 0.1, 0.3, 0.5, 0.9}) {
    const auto w = expected_gossip_matrix(n, p);
    expect_doubly_stochastic(w, n);
    EXPECT_DOUBLE_EQ(w[0], 1 - p);
    EXPECT_DOUBLE_EQ(w[1], p / (n - 1));
    const double gap = spectral_gap(w, n);
    EXPECT_NEAR(gap, p * n / (n - 1), 1e-12) << p; // eigenvalues 1 and 1 - p n / (n - 1)
    EXPECT_GT(gap, previous) << p;
    previous = gap;
  }
  EXPECT_EQ(expected_gossip_matrix(1, 0.5), std::vector<double>{1.0});
  EXPECT_THROW(expected_gossip_matrix(4, 1.5), std::invalid_argument);
  EXPECT_THROW(expected_gossip_matrix(0, 0.5), std::invalid_argument);
}

} // namespace
} // namespace dtsim::strategies
