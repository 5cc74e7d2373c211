// All-to-all (Thakur, Rabenseifner and Gropp 2005, section 4.6): pairwise exchange in n-1 rounds, or every
// transfer at once. Uniform all-to-all sends block q of its buffer (bytes/n) to q; all-to-all-v takes the
// bytes from a matrix and skips empty transfers, as MPI_Alltoallv does with zero counts.
#include "sim/collectives/detail.hpp"

namespace dtsim::collectives::detail {

// Round k (1..n-1), step k-1: p sends to (p+k) mod n and receives from (p-k) mod n.
//   uniform: T = (n-1) (alpha + S/(nB))
//   matrix M: T = sum over rounds k with a transfer of (alpha + max_p M[p][(p+k) mod n] / B)
SchedulePtr pairwise_all_to_all(int n, PairBytes bytes, bool skip_empty) {
  return generated(n, n - 1, [n, bytes = std::move(bytes), skip_empty](int p, int step) {
    const int k = step + 1;
    const int to = (p + k) % n;
    const int from = (p - k + n) % n;
    Step s = idle_step();
    if (const double b = bytes(p, to); b > 0 || !skip_empty) s.sends.push_back({to, b});
    if (const double b = bytes(from, p); b > 0 || !skip_empty) s.recvs.push_back({from, b});
    return s;
  });
}

// One step: p sends to every q != p and receives from every q != p, in ascending q.
//   uniform: T = alpha + (n-1) S/(nB)
//   matrix M: T = alpha + max_p max(sum_q M[p][q], sum_q M[q][p]) / B   (q != p)
SchedulePtr direct_all_to_all(int n, PairBytes bytes, bool skip_empty) {
  return generated(n, 1, [n, bytes = std::move(bytes), skip_empty](int p, int) {
    Step s = idle_step();
    for (int q = 0; q < n; ++q) {
      if (q == p) continue;
      if (const double b = bytes(p, q); b > 0 || !skip_empty) s.sends.push_back({q, b});
      if (const double b = bytes(q, p); b > 0 || !skip_empty) s.recvs.push_back({q, b});
    }
    return s;
  });
}

} // namespace dtsim::collectives::detail
