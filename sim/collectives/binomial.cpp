// Binomial trees (Thakur, Rabenseifner and Gropp 2005, section 4.1 broadcast and section 4.3 reduce): with
// positions numbered relative to the root, rel = (p - root) mod n, and L = ceil(log2 n) rounds of full-size
// messages. Round i moves data across distance 2^i.
#include "sim/collectives/detail.hpp"

namespace dtsim::collectives::detail {
namespace {

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

} // namespace

// Round i: every rel < 2^i that has the data sends it to rel + 2^i (if it exists).
//   T = ceil(log2 n) (alpha + S/B)
SchedulePtr binomial_broadcast(int n, double bytes, int root) {
  return generated(
      n, ceil_log2(n),
      [n, bytes, root](int p, int i) {
        const int rel = mod(p - root, n);
        const int mask = 1 << i;
        Step s = idle_step();
        if (rel < mask && rel + mask < n) s.sends.push_back({mod(rel + mask + root, n), bytes});
        if (rel >= mask && rel < 2 * mask) s.recvs.push_back({mod(rel - mask + root, n), bytes});
        return s;
      },
      phases_every(ceil_log2(n), 1));
}

// Round i: rel with lowest set bit i sends its partial sum to rel - 2^i; rel divisible by 2^(i+1) receives
// from rel + 2^i (if it exists) and reduces.
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr binomial_reduce(int n, double bytes, int root) {
  return generated(
      n, ceil_log2(n),
      [n, bytes, root](int p, int i) {
        const int rel = mod(p - root, n);
        const int mask = 1 << i;
        Step s = idle_step();
        if (rel % (2 * mask) == mask) s.sends.push_back({mod(rel - mask + root, n), bytes});
        if (rel % (2 * mask) == 0 && rel + mask < n) {
          s.recvs.push_back({mod(rel + mask + root, n), bytes});
          s.reduce_bytes = bytes;
        }
        return s;
      },
      phases_every(ceil_log2(n), 1));
}

// Binomial reduce to position 0, then binomial broadcast from it (MPICH's fallback all-reduce):
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr binomial_all_reduce(int n, double bytes) {
  return in_sequence(n, {{binomial_reduce(n, bytes, 0)}, {binomial_broadcast(n, bytes, 0)}});
}

} // namespace dtsim::collectives::detail
