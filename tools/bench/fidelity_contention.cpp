// Aggregate against step fidelity under contention: two collectives in different groups (local GPUs 0-3 and
// 4-7 of 8 NVSwitch nodes) compete for every node's one NIC, the second starting halfway through the first's
// bandwidth time, so the two overlap partially. Prints both times and the drift.
//   build/tools/bench/dtsim_bench_contention   (target dtsim_bench_contention)
#include "sim/engine/engine.hpp"
#include <cstdio>
using namespace dtsim;
int main() {
  topologies::ClusterSpec c;
  c.nodes = 8;
  c.gpus_per_node = 8;
  c.intra_kind = topologies::IntraNodeKind::nvlink;
  c.intra = {450e9, 1e-6};
  c.pcie = {64e9, 1e-6};
  c.nic = {50e9, 2e-6};
  c.switch_latency = 1e-6;
  engine::ReplayOptions o;
  o.network_model = engine::NetworkModel::cm02;
  o.cross_traffic = false;
  const collectives::Algorithm algos[] = {collectives::Algorithm::ring, collectives::Algorithm::rabenseifner,
                                          collectives::Algorithm::hierarchical};
  const collectives::Operation ops[] = {collectives::Operation::all_reduce, collectives::Operation::all_to_all};
  for (auto op : ops)
    for (auto algo : algos) {
      if (op == collectives::Operation::all_to_all && algo != collectives::Algorithm::ring) continue;
      for (double bytes : {1048576.0, 64.0 * 1048576, 1073741824.0}) {
        double t[2];
        for (int agg = 0; agg < 2; ++agg) {
          graph::ExecutionGraph g;
          // groups: local GPUs 0-3 of every node (A), local GPUs 4-7 (B): both cross every NIC.
          g.groups.resize(2);
          g.rank_program.assign(64, 0);
          for (int r = 0; r < 64; ++r) {
            int grp = (r % 8) < 4 ? 0 : 1;
            g.groups[grp].push_back(r);
            g.rank_program[r] = grp;
          }
          for (int grp = 0; grp < 2; ++grp) {
            graph::Collective col;
            col.op = op;
            col.algorithm = op == collectives::Operation::all_to_all ? collectives::Algorithm::pairwise : algo;
            col.bytes = bytes;
            col.group = grp;
            col.aggregate = agg;
            col.reduce_seconds_per_byte = 3.0 / 3e12;
            // second group starts its collective with a delay so the two overlap partially
            graph::Program p;
            if (grp == 1)
              p.ops.push_back(graph::Op{"delay", graph::Stream::compute, graph::Compute{bytes / 50e9 * 0.5, 0, 0}, {}});
            p.ops.push_back(graph::Op{"coll", graph::Stream::comm, col,
                                      grp == 1 ? std::vector<std::uint32_t>{0} : std::vector<std::uint32_t>{}});
            g.programs.push_back(p);
          }
          t[agg] = engine::replay(c, g, o).simulated_seconds;
        }
        std::printf("%-11s %-13s %10.0f B  step %12.1f us  aggregate %12.1f us  %+6.1f%%\n",
                    std::string(collectives::to_string(op)).c_str(),
                    std::string(collectives::to_string(
                                    op == collectives::Operation::all_to_all ? collectives::Algorithm::pairwise : algo))
                        .c_str(),
                    bytes, t[0] * 1e6, t[1] * 1e6, (t[1] - t[0]) / t[0] * 100);
      }
    }
}
