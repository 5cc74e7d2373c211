// Recursive doubling and halving (Thakur, Rabenseifner and Gropp 2005, "Optimization of Collective
// Communication Operations in MPICH": recursive doubling all-gather and all-reduce, recursive halving
// reduce-scatter, Rabenseifner's all-reduce = recursive halving reduce-scatter + recursive doubling
// all-gather) and the dissemination barrier (Hensgen, Finkel and Manber 1988; MPICH's barrier).
//
// Non-powers of two are folded as in Thakur et al.: with m = 2^floor(log2 n) and r = n - m, each even
// position p < 2r first hands its data to p + 1 and sits out; the m remaining positions (the odd ones below
// 2r, then those from 2r on) run the power-of-two algorithm as "new ranks" 0..m-1; at the end each odd
// p < 2r hands p - 1 its result. Phases: fold, the core's phases, unfold.
#include "sim/collectives/detail.hpp"

namespace dtsim::collectives::detail {
namespace {

struct Fold {
  explicit Fold(int n) : n(n), m(1 << floor_log2(n)), r(n - m) {}
  int n, m, r;
  // New rank j of the core is position j < r ? 2j + 1 : j + r; its data covers blocks [first_block(j),
  // first_block(j + 1)) of the n blocks of a reduce-scatter or all-gather.
  int position_of(int j) const { return j < r ? 2 * j + 1 : j + r; }
  int first_block(int j) const { return j < r ? 2 * j : j + r; }
  std::vector<int> core_positions() const {
    std::vector<int> positions(m);
    for (int j = 0; j < m; ++j)
      positions[j] = position_of(j);
    return positions;
  }
};

// One step: each even p < 2r sends bytes(p) to p + 1, which reduces it when `reduce`.
SchedulePtr fold_step(const Fold& f, std::function<double(int)> bytes, bool reduce) {
  const int r = f.r;
  return generated(f.n, 1, [r, bytes = std::move(bytes), reduce](int p, int) {
    Step s = idle_step();
    if (p >= 2 * r) return s;
    if (p % 2 == 0) {
      s.sends.push_back({p + 1, bytes(p)});
    } else {
      s.recvs.push_back({p - 1, bytes(p - 1)});
      if (reduce) s.reduce_bytes = bytes(p - 1);
    }
    return s;
  });
}

// One step: each odd p < 2r sends bytes(p - 1) to p - 1.
SchedulePtr unfold_step(const Fold& f, std::function<double(int)> bytes) {
  const int r = f.r;
  return generated(f.n, 1, [r, bytes = std::move(bytes)](int p, int) {
    Step s = idle_step();
    if (p >= 2 * r) return s;
    if (p % 2 == 1)
      s.sends.push_back({p - 1, bytes(p - 1)});
    else
      s.recvs.push_back({p + 1, bytes(p)});
    return s;
  });
}

SchedulePtr folded(const Fold& f, SchedulePtr fold, SchedulePtr core, SchedulePtr unfold) {
  auto embedded = side_by_side(f.n, {f.core_positions()}, {std::move(core)});
  if (f.r == 0) return embedded;
  return in_sequence(f.n, {{std::move(fold)}, {std::move(embedded)}, {std::move(unfold)}});
}

// Block boundaries for the core: m even blocks of the whole buffer (all-reduce), or the blocks of the n
// positions grouped by new rank (reduce-scatter, all-gather).
std::vector<double> even_offsets(int m, double bytes) {
  std::vector<double> offsets(m + 1);
  for (int j = 0; j <= m; ++j)
    offsets[j] = part_offset(bytes, m, j);
  return offsets;
}

std::vector<double> folded_offsets(const Fold& f, double bytes) {
  std::vector<double> offsets(f.m + 1);
  for (int j = 0; j <= f.m; ++j)
    offsets[j] = part_offset(bytes, f.n, f.first_block(j));
  return offsets;
}

// Recursive doubling all-reduce on m = 2^q: in step i, j exchanges the whole buffer with j ^ 2^i and reduces.
SchedulePtr doubling_exchange(int m, double bytes) {
  return generated(m, floor_log2(m), [bytes](int j, int i) {
    Step s;
    s.sends.push_back({j ^ (1 << i), bytes});
    s.recvs.push_back({j ^ (1 << i), bytes});
    s.reduce_bytes = bytes;
    return s;
  });
}

// Recursive halving reduce-scatter on m = 2^q: before step i, j holds the aligned range of 2d blocks that
// contains j (d = m / 2^(i+1)); it sends the half without j to j ^ d and reduces the half with j as it
// arrives from j ^ d. New rank j ends with block j.
SchedulePtr halving(int m, std::vector<double> offsets) {
  return generated(m, floor_log2(m), [m, offsets = std::move(offsets)](int j, int i) {
    const int d = m >> (i + 1);
    const int lo = j & ~(2 * d - 1);
    const int mid = lo + d;
    const bool upper = (j & d) != 0;
    const double low_half = offsets[mid] - offsets[lo];
    const double high_half = offsets[lo + 2 * d] - offsets[mid];
    Step s;
    s.sends.push_back({j ^ d, upper ? low_half : high_half});
    s.recvs.push_back({j ^ d, upper ? high_half : low_half});
    s.reduce_bytes = s.recvs.back().bytes;
    return s;
  });
}

// Recursive doubling all-gather on m = 2^q: in step i, j holds the aligned range of 2^i blocks containing
// j, sends it to j ^ 2^i and receives that position's range.
SchedulePtr doubling(int m, std::vector<double> offsets) {
  return generated(m, floor_log2(m), [offsets = std::move(offsets)](int j, int i) {
    const int d = 1 << i;
    const int lo = j & ~(d - 1);
    const int partner_lo = lo ^ d;
    Step s;
    s.sends.push_back({j ^ d, offsets[lo + d] - offsets[lo]});
    s.recvs.push_back({j ^ d, offsets[partner_lo + d] - offsets[partner_lo]});
    return s;
  });
}

} // namespace

//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr recursive_doubling_all_reduce(int n, double bytes) {
  const Fold f(n);
  const auto whole = [bytes](int) { return bytes; };
  return folded(f, fold_step(f, whole, true), doubling_exchange(f.m, bytes), unfold_step(f, whole));
}

// With m = 2^floor(log2 n):
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr rabenseifner_all_reduce(int n, double bytes) {
  const Fold f(n);
  const auto whole = [bytes](int) { return bytes; };
  auto offsets = even_offsets(f.m, bytes);
  auto core = in_sequence(f.m, {{halving(f.m, offsets)}, {doubling(f.m, offsets)}});
  return folded(f, fold_step(f, whole, true), std::move(core), unfold_step(f, whole));
}

// Position p ends with block p. Folded: the whole buffer is reduced into the odd positions below 2r, the core
// halves over blocks grouped by new rank (new rank j < r holds two blocks), then p - 1 gets its block.
SchedulePtr recursive_halving_reduce_scatter(int n, double bytes) {
  const Fold f(n);
  const auto whole = [bytes](int) { return bytes; };
  const auto block = [n, bytes](int p) { return part_bytes(bytes, n, p); };
  return folded(f, fold_step(f, whole, true), halving(f.m, folded_offsets(f, bytes)), unfold_step(f, block));
}

// Position p starts with block p. Folded: p < 2r even hands its block to p + 1, the core doubles over blocks
// grouped by new rank, then p + 1 hands p everything but its own block.
SchedulePtr recursive_doubling_all_gather(int n, double bytes) {
  const Fold f(n);
  const auto block = [n, bytes](int p) { return part_bytes(bytes, n, p); };
  const auto rest = [n, bytes](int p) { return bytes - part_bytes(bytes, n, p); };
  return folded(f, fold_step(f, block, false), doubling(f.m, folded_offsets(f, bytes)), unfold_step(f, rest));
}

// Dissemination: in round k (0..ceil(log2 n)-1) p sends a zero-byte message to p + 2^k and receives one from
// p - 2^k (mod n).  T = ceil(log2 n) alpha
SchedulePtr dissemination_barrier(int n) {
  return generated(n, ceil_log2(n), [n](int p, int k) {
    const int d = (1 << k) % n;
    Step s;
    s.sends.push_back({(p + d) % n, 0.0});
    s.recvs.push_back({(p - d + n) % n, 0.0});
    return s;
  });
}

} // namespace dtsim::collectives::detail
