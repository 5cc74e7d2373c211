#pragma once
// How fast decentralized averaging mixes: the peer graphs of D-PSGD, their mixing matrices and the spectral gap
// 1 - max(|lambda_2|, |lambda_n|) that bounds how many rounds of averaging bring workers to consensus (Boyd et al.
// 2006; Lian et al. 2017 state D-PSGD's rate in terms of it). Pure: no SimGrid. Matrices are row-major n x n.
#include "sim/strategies/strategy.hpp"

#include <vector>

namespace dtsim::strategies {

// Each worker's neighbours, sorted and without duplicates or itself. ring: left and right (one neighbour when
// n == 2, none when n == 1). exponential: the workers at distance 2^k and -2^k (mod n) for every 2^k < n, as an
// undirected graph. Throws std::invalid_argument for n < 0.
std::vector<std::vector<int>> neighbours(PeerGraph graph, int n);

// The Metropolis-Hastings mixing matrix of an undirected graph: W_ij = 1 / (1 + max(deg_i, deg_j)) for neighbours,
// W_ii = 1 - the row's other weights, 0 elsewhere. Symmetric and doubly stochastic. Throws std::invalid_argument
// if the lists are not symmetric, name a worker out of range, or list a worker as its own neighbour.
std::vector<double> mixing_matrix(const std::vector<std::vector<int>>& neighbours);
std::vector<double> mixing_matrix(PeerGraph graph, int n); // of neighbours(graph, n)

// The expected mixing matrix of one gossip round in which each worker, with probability p, averages pairwise with
// a uniformly random other worker: diagonal 1 - p, elsewhere p / (n - 1). Derived in mixing.cpp. Throws
// std::invalid_argument for n < 1 or p outside [0, 1].
std::vector<double> expected_gossip_matrix(int n, double p);

// 1 - max(|lambda_2|, |lambda_n|) of a symmetric n x n matrix whose largest eigenvalue is 1 (doubly stochastic):
// 0 for a disconnected graph, 1 for exact averaging in one round; 1 when n <= 1. Circulant matrices (every
// row the previous one shifted: the ring, the exponential graph, expected gossip) use the closed form, O(n^2);
// others cyclic Jacobi, O(n^3) per sweep. Throws std::invalid_argument if w is not n x n or not symmetric.
double spectral_gap(const std::vector<double>& w, int n);

// The eigenvalues of a symmetric matrix by cyclic Jacobi rotations, in descending order. Cubic per sweep and
// cache-unfriendly: measured (Release build, one core) at 0.09 s for n = 128, 1.2 s for 256 and 13 s for 512, so
// spectral_gap keeps it for graphs that are not circulant.
std::vector<double> symmetric_eigenvalues(const std::vector<double>& w, int n);

// Whether every row of w is the previous row shifted right by one (mod n).
bool is_circulant(const std::vector<double>& w, int n);

// The eigenvalues of the symmetric circulant matrix with this first row (c_j == c_{n-j}), in descending order:
// lambda_k = sum_j c_j cos(2 pi j k / n).
std::vector<double> circulant_eigenvalues(const std::vector<double>& first_row);

} // namespace dtsim::strategies
