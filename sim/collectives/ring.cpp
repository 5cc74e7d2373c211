// Ring algorithms. Reduce-scatter, all-gather and all-reduce as in Thakur, Rabenseifner and Gropp 2005
// ("Optimization of Collective Communication Operations in MPICH", sections 4.4-4.5) and Patarasuk and Yuan
// 2009 (bandwidth-optimal all-reduce): the buffer is cut into n blocks; in each of n-1 steps every position
// sends one block to its successor and receives one from its predecessor.
// Broadcast and reduce "ring" as NCCL runs them: a chain from the root along the ring, pipelined by chunks.
#include "sim/collectives/detail.hpp"

namespace dtsim::collectives::detail {
namespace {

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

} // namespace

// Step k (0..n-2): send block (p-1-k) to p+1, receive block (p-2-k) from p-1 and reduce it. After step n-2
// position p holds block p reduced over every position.
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr ring_reduce_scatter(int n, double bytes) {
  return generated(n, n - 1, [n, bytes](int p, int k) {
    Step s;
    const double recv = part_bytes(bytes, n, mod(p - 2 - k, n));
    s.sends.push_back({mod(p + 1, n), part_bytes(bytes, n, mod(p - 1 - k, n))});
    s.recvs.push_back({mod(p - 1, n), recv});
    s.reduce_bytes = recv;
    return s;
  });
}

// Step k (0..n-2): send block (p-k) to p+1, receive block (p-1-k) from p-1.
//   T = (n-1) (alpha + S/(nB))
SchedulePtr ring_all_gather(int n, double bytes) {
  return generated(n, n - 1, [n, bytes](int p, int k) {
    Step s;
    s.sends.push_back({mod(p + 1, n), part_bytes(bytes, n, mod(p - k, n))});
    s.recvs.push_back({mod(p - 1, n), part_bytes(bytes, n, mod(p - 1 - k, n))});
    return s;
  });
}

// The same rings over blocks of given sizes (block b: blocks[b] bytes, however the buffer is laid out), for
// the hierarchical reduce-scatter and all-gather, whose blocks are unions of the flat operation's blocks.
SchedulePtr ring_reduce_scatter(std::vector<double> blocks) {
  const int n = static_cast<int>(blocks.size());
  return generated(n, n - 1, [n, blocks = std::move(blocks)](int p, int k) {
    Step s;
    const double recv = blocks[mod(p - 2 - k, n)];
    s.sends.push_back({mod(p + 1, n), blocks[mod(p - 1 - k, n)]});
    s.recvs.push_back({mod(p - 1, n), recv});
    s.reduce_bytes = recv;
    return s;
  });
}

SchedulePtr ring_all_gather(std::vector<double> blocks) {
  const int n = static_cast<int>(blocks.size());
  return generated(n, n - 1, [n, blocks = std::move(blocks)](int p, int k) {
    Step s;
    s.sends.push_back({mod(p + 1, n), blocks[mod(p - k, n)]});
    s.recvs.push_back({mod(p - 1, n), blocks[mod(p - 1 - k, n)]});
    return s;
  });
}

// Reduce-scatter then all-gather, 2(n-1) steps:
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr ring_all_reduce(int n, double bytes) {
  return in_sequence(n, {{ring_reduce_scatter(n, bytes)}, {ring_all_gather(n, bytes)}});
}

// Chain root = r_0 -> r_1 -> ... -> r_{n-1} (r_i = root + i), C chunks of about 512 KiB: r_i receives chunk j
// in step j + i - 1 and forwards it in step j + i. C + n - 2 steps, in phases of C steps (phases_every); each hop's
// latency is paid by its first chunk (pipelined()):
//   T = (C + n - 2) (alpha + S/(CB))
SchedulePtr chain_broadcast(int n, double bytes, int root) {
  const int chunks = pipeline_chunks(bytes);
  const int steps = chunks + n - 2;
  return pipelined(
      n, steps,
      [n, bytes, root, chunks](int p, int k) {
        const int rel = mod(p - root, n);
        Step s = idle_step();
        if (const int j = k - (rel - 1); rel >= 1 && j >= 0 && j < chunks) {
          s.recvs.push_back({mod(p - 1, n), part_bytes(bytes, chunks, j)});
          s.latency_terms = j == 0 ? 1 : 0;
        }
        if (const int j = k - rel; rel <= n - 2 && j >= 0 && j < chunks)
          s.sends.push_back({mod(p + 1, n), part_bytes(bytes, chunks, j)});
        return s;
      },
      phases_every(steps, chunks));
}

// Chain r_{n-1} -> ... -> r_1 -> r_0 = root: r_i sends chunk j (its partial sum) in step j + (n-1-i) and
// receives chunk j from r_{i+1} in step j + (n-2-i), reducing it. C + n - 2 steps in phases of C:
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
SchedulePtr chain_reduce(int n, double bytes, int root) {
  const int chunks = pipeline_chunks(bytes);
  const int steps = chunks + n - 2;
  return pipelined(
      n, steps,
      [n, bytes, root, chunks](int p, int k) {
        const int rel = mod(p - root, n);
        const int from_end = n - 1 - rel;
        Step s = idle_step();
        if (const int j = k - from_end; rel >= 1 && j >= 0 && j < chunks)
          s.sends.push_back({mod(p - 1, n), part_bytes(bytes, chunks, j)});
        if (const int j = k - (from_end - 1); rel <= n - 2 && j >= 0 && j < chunks) {
          const double chunk = part_bytes(bytes, chunks, j);
          s.recvs.push_back({mod(p + 1, n), chunk});
          s.reduce_bytes = chunk;
          s.latency_terms = j == 0 ? 1 : 0;
        }
        return s;
      },
      phases_every(steps, chunks));
}

} // namespace dtsim::collectives::detail
