// Direct algorithms: every transfer of the collective in a single step (what MPICH's "scattered" and
// pairwise-free variants do when the network can take them all at once), and point to point.
// A position posts its sends and its receives in ascending peer order.
#include "sim/collectives/detail.hpp"

namespace dtsim::collectives::detail {

// p sends block q to every q != p and reduces the n-1 copies of block p it receives.
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr direct_reduce_scatter(int n, double bytes) {
  return generated(n, 1, [n, bytes](int p, int) {
    Step s;
    const double own = part_bytes(bytes, n, p);
    for (int q = 0; q < n; ++q)
      if (q != p) {
        s.sends.push_back({q, part_bytes(bytes, n, q)});
        s.recvs.push_back({q, own});
        s.reduce_bytes += own;
      }
    return s;
  });
}

// p sends block p to every q != p and receives block q from each.
//   T = alpha + (n-1) S/(nB)
SchedulePtr direct_all_gather(int n, double bytes) {
  return generated(n, 1, [n, bytes](int p, int) {
    Step s;
    const double own = part_bytes(bytes, n, p);
    for (int q = 0; q < n; ++q)
      if (q != p) {
        s.sends.push_back({q, own});
        s.recvs.push_back({q, part_bytes(bytes, n, q)});
      }
    return s;
  });
}

// One transfer from the root to (root + 1) mod n.  T = alpha + S/B
SchedulePtr point_to_point(int n, double bytes, int root) {
  const int to = (root + 1) % n;
  return generated(n, 1, [root, to, bytes](int p, int) {
    Step s = idle_step();
    if (p == root) s.sends.push_back({to, bytes});
    if (p == to) s.recvs.push_back({root, bytes});
    return s;
  });
}

} // namespace dtsim::collectives::detail
