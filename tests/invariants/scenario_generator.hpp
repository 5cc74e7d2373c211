#pragma once
// A seeded generator of valid scenarios for the model invariants (invariants_test.cpp): models from the zoo and small
// transformers, V100/A100/H100 nodes of 1 to 8 GPUs, 1 to 4 nodes, NVLink or PCIe inside a node, RDMA or TCP NICs of
// 10 to 400 Gb/s on a switch, a leaf-spine or a ring, every synchronization strategy, and for transformers tensor and
// pipeline parallelism, ZeRO, recomputation and the pipeline schedules. Small (at most 16 GPUs, two or three
// iterations) so that a few dozen run in CI in a minute or two. The same seed gives the same scenario on every
// platform: the generator draws from SplitMix64 itself, not from <random>'s distributions, whose output the C++
// standard leaves to each library.
#include <cstdint>
#include <string>

namespace dtsim::invariants {

struct GeneratedScenario {
  std::uint64_t seed = 0;
  std::string json;            // the scenario file's text, printed when an invariant breaks
  std::string summary;         // one line: model, GPUs, network, layout, strategy
  bool model_parallel = false; // tensor or pipeline parallelism
  // State sharded over the nodes, so that a GPU's share of the work shrinks as the cluster grows: ZeRO (the optimizer
  // step), or parameter servers on every node (each shard updates and serves a smaller part of the model, over more
  // connections at once).
  bool sharded_state = false;
};

GeneratedScenario generate_scenario(std::uint64_t seed);

} // namespace dtsim::invariants
