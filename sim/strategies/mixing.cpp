// Peer graphs, mixing matrices and spectral gaps of decentralized averaging.
#include "sim/strategies/mixing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <numbers>
#include <stdexcept>

namespace dtsim::strategies {
namespace {

void check_square(const std::vector<double>& w, int n) {
  if (n < 0 || w.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(n))
    throw std::invalid_argument(fmt::format("mixing: expected a {0} x {0} matrix, got {1} entries", n, w.size()));
}

void check_symmetric(const std::vector<double>& w, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (std::abs(w[i * n + j] - w[j * n + i]) > 1e-9)
        throw std::invalid_argument(
            fmt::format("mixing: matrix is not symmetric at ({}, {}): {} vs {}", i, j, w[i * n + j], w[j * n + i]));
}

} // namespace

std::vector<std::vector<int>> neighbours(PeerGraph graph, int n) {
  if (n < 0) throw std::invalid_argument(fmt::format("mixing: worker count must be >= 0, got {}", n));
  std::vector<std::vector<int>> out(n);
  for (int i = 0; i < n; ++i) {
    auto& peers = out[i];
    switch (graph) {
    case PeerGraph::ring: // D-PSGD's ring (Lian et al. 2017)
      if (n > 1) peers = {(i + n - 1) % n, (i + 1) % n};
      break;
    case PeerGraph::exponential: // SGP's exponential graph (Assran et al. 2019), made undirected here
      for (std::int64_t d = 1; d < n; d *= 2) {
        peers.push_back(static_cast<int>((i + d) % n));
        peers.push_back(static_cast<int>((i - d % n + n) % n));
      }
      break;
    }
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  }
  return out;
}

std::vector<double> mixing_matrix(const std::vector<std::vector<int>>& neighbours) {
  const int n = static_cast<int>(neighbours.size());
  for (int i = 0; i < n; ++i)
    for (int j : neighbours[i]) {
      if (j < 0 || j >= n || j == i)
        throw std::invalid_argument(
            fmt::format("mixing: worker {} lists {} as a neighbour (workers 0..{})", i, j, n - 1));
      if (std::find(neighbours[j].begin(), neighbours[j].end(), i) == neighbours[j].end())
        throw std::invalid_argument(fmt::format("mixing: {} lists {} as a neighbour but not back", i, j));
    }
  // Metropolis-Hastings weights (Xiao & Boyd 2004; Boyd et al. 2006): symmetric by construction, each row's
  // off-diagonal weights sum to at most deg_i / (1 + deg_i) < 1, so the diagonal stays positive and W is doubly
  // stochastic. On a regular graph of degree d every weight is 1 / (d + 1): the ring's uniform 1/3 of D-PSGD.
  std::vector<double> w(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    double off = 0;
    for (int j : neighbours[i]) {
      const auto deg = std::max(neighbours[i].size(), neighbours[j].size());
      w[i * n + j] = 1.0 / (1.0 + static_cast<double>(deg));
      off += w[i * n + j];
    }
    w[i * n + i] = 1 - off;
  }
  return w;
}

std::vector<double> mixing_matrix(PeerGraph graph, int n) {
  return mixing_matrix(neighbours(graph, n));
}

// One gossip round (Boyd et al. 2006, "Randomized gossip algorithms", section II-B): worker i wakes with
// probability p and averages with a peer j drawn uniformly from the other n - 1. Averaging i and j replaces x by
// W_ij x with W_ij = I - (e_i - e_j)(e_i - e_j)^T / 2. Take the round's averagings as applied together from the
// round's starting values, so their changes add: x' = x - sum over the events of (e_i - e_j)(e_i - e_j)^T x / 2.
// (Applying them one after another instead multiplies the W_ij; the sum is that product to first order in p.) Each
// ordered pair (i, j) is an event with probability p / (n - 1), and the unordered pair {i, j} is reached from both
// of its directions, so
//   E[W] = I - p / (n - 1) * sum over ordered pairs of (e_i - e_j)(e_i - e_j)^T / 2
//        = I - p / (n - 1) * sum over unordered pairs of (e_i - e_j)(e_i - e_j)^T
//        = I - p / (n - 1) * (n I - 1 1^T),
// the complete graph's Laplacian n I - 1 1^T. Entries: diagonal 1 - p n / (n - 1) + p / (n - 1) = 1 - p, elsewhere
// p / (n - 1); every row and column sums to 1. Its eigenvalues are 1 (the consensus vector) and 1 - p n / (n - 1)
// (n - 1 times), so the gap p n / (n - 1) grows with p up to p = (n - 1) / n; beyond that the summed model
// overshoots (a worker chosen by several peers moves more than halfway), which sequential gossip would not.
std::vector<double> expected_gossip_matrix(int n, double p) {
  if (n < 1) throw std::invalid_argument(fmt::format("mixing: worker count must be >= 1, got {}", n));
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument(fmt::format("mixing: gossip probability must be in [0, 1], got {}", p));
  if (n == 1) return {1.0};
  std::vector<double> w(static_cast<std::size_t>(n) * n, p / (n - 1));
  for (int i = 0; i < n; ++i)
    w[i * n + i] = 1 - p;
  return w;
}

bool is_circulant(const std::vector<double>& w, int n) {
  check_square(w, n);
  for (int i = 1; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (std::abs(w[i * n + j] - w[(j - i + n) % n]) > 1e-12) return false;
  return true;
}

std::vector<double> circulant_eigenvalues(const std::vector<double>& c) {
  // The DFT diagonalizes every circulant matrix: lambda_k = sum_j c_j omega^(jk), omega = exp(2 pi i / n). With
  // c_j == c_{n-j} the sine terms cancel in pairs and lambda_k = sum_j c_j cos(2 pi j k / n), real. The cosines
  // are tabulated at (j k mod n), which keeps the angles small and the cost at n^2 table lookups.
  const std::size_t n = c.size();
  std::vector<double> cosines(n);
  for (std::size_t m = 0; m < n; ++m)
    cosines[m] = std::cos(2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n));
  std::vector<double> lambda(n, 0.0);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t j = 0; j < n; ++j)
      lambda[k] += c[j] * cosines[(j * k) % n];
  std::sort(lambda.begin(), lambda.end(), std::greater<>());
  return lambda;
}

std::vector<double> symmetric_eigenvalues(const std::vector<double>& w, int n) {
  check_square(w, n);
  check_symmetric(w, n);
  // Cyclic Jacobi (Golub & Van Loan, Matrix Computations, section 8.5): sweep the pairs (p, q) row by row, each
  // rotation zeroing a_pq, until the off-diagonal Frobenius norm is below 1e-12. Converges quadratically; a
  // handful of sweeps for the matrices here. Only eigenvalues are needed, so no eigenvectors are accumulated.
  std::vector<double> a = w;
  auto at = [&](int i, int j) -> double& { return a[static_cast<std::size_t>(i) * n + j]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        off += 2 * at(i, j) * at(i, j);
    if (std::sqrt(off) < 1e-12) break;
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (apq == 0) continue;
        // Rotation angle from Golub & Van Loan's sym.schur2 (the smaller root, for stability).
        const double theta = (at(q, q) - at(p, p)) / (2 * apq);
        const double t = std::abs(theta) > 1e150
                             ? 0.5 / theta
                             : std::copysign(1.0, theta) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1);
        const double sn = t * cs;
        const double tau = sn / (1 + cs);
        at(p, p) -= t * apq;
        at(q, q) += t * apq;
        at(p, q) = at(q, p) = 0;
        for (int r = 0; r < n; ++r) {
          if (r == p || r == q) continue;
          const double arp = at(r, p);
          const double arq = at(r, q);
          at(r, p) = at(p, r) = arp - sn * (arq + tau * arp);
          at(r, q) = at(q, r) = arq + sn * (arp - tau * arq);
        }
      }
  }
  std::vector<double> lambda(n);
  for (int i = 0; i < n; ++i)
    lambda[i] = at(i, i);
  std::sort(lambda.begin(), lambda.end(), std::greater<>());
  return lambda;
}

double spectral_gap(const std::vector<double>& w, int n) {
  check_square(w, n);
  if (n <= 1) return 1;
  check_symmetric(w, n);
  // Circulant matrices (all of PeerGraph's graphs and expected gossip) take the closed form: Jacobi is O(n^3) per
  // sweep and would take minutes at n = 1024, the closed form O(n^2). Anything else goes through Jacobi.
  const std::vector<double> lambda = is_circulant(w, n)
                                         ? circulant_eigenvalues(std::vector<double>(w.begin(), w.begin() + n))
                                         : symmetric_eigenvalues(w, n);
  // lambda[0] is the consensus eigenvalue 1; the slowest other mode decides the rate.
  const double slowest = std::max(std::abs(lambda[1]), std::abs(lambda[n - 1]));
  return std::clamp(1 - slowest, 0.0, 1.0);
}

} // namespace dtsim::strategies
