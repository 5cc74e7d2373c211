#pragma once
// Ring all-reduce (Patarasuk and Yuan 2009; the algorithm NCCL's ring and Horovod use): the buffer is cut
// into n chunks; n-1 reduce-scatter steps, then n-1 all-gather steps. In every step each rank sends one
// chunk to its successor and receives one from its predecessor, so all n flows run concurrently.
// Engine-agnostic: it says who sends what in each step; sim/engine turns steps into flows.
namespace dtsim::collectives {

// What one rank does in one step: one send and one receive (-1: none).
struct StepTransfers {
  int send_to = -1;
  double send_bytes = 0;
  int recv_from = -1;
  double recv_bytes = 0;
};

class RingAllReduce {
public:
  RingAllReduce(int ranks, double bytes) : ranks_(ranks), bytes_(bytes) {}

  int step_count() const { return ranks_ > 1 ? 2 * (ranks_ - 1) : 0; }
  // Positions are places in the ring (0..n-1), not global ranks.
  StepTransfers step(int position, int /*step*/) const {
    const double chunk = bytes_ / ranks_;
    return {(position + 1) % ranks_, chunk, (position + ranks_ - 1) % ranks_, chunk};
  }
  // Bytes each rank sends over the whole collective: 2 (n-1)/n S.
  double bytes_sent_per_rank() const { return step_count() * (bytes_ / ranks_); }

private:
  int ranks_;
  double bytes_;
};

// Alpha-beta cost on a uniform, contention-free ring (Thakur, Rabenseifner and Gropp 2005):
//   T = 2 (n-1) alpha + 2 (n-1)/n * S / B
// alpha: one step's latency (the path's total latency), B: the bottleneck bandwidth of one step's path.
inline double ring_all_reduce_time(int ranks, double bytes, double alpha, double bandwidth) {
  if (ranks <= 1) return 0;
  const double steps = 2.0 * (ranks - 1);
  return steps * alpha + steps / ranks * bytes / bandwidth;
}

} // namespace dtsim::collectives
