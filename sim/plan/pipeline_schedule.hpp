#pragma once
// The order in which one pipeline stage runs the forward and backward passes of its micro-batches. The bubble is not
// computed here: the replay of these orders, with the stages waiting for each other's activations, produces it.
#include "sim/scenario/scenario.hpp"

#include <vector>

namespace dtsim::plan {

struct PipelineSlot {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0; // the device's model chunk (0 .. v-1); chunk c of stage s is virtual stage c * p + s
  bool operator==(const PipelineSlot&) const = default;
};

// The passes stage `stage` of `stages` runs, in order:
//   gpipe        every forward, then every backward (Huang et al. 2019, GPipe)
//   1f1b         p - s - 1 warm-up forwards, then one forward and one backward in turn, then the remaining
//                backwards (PipeDream-Flush; Narayanan et al. 2021, figure 4 top)
//   interleaved  1F1B over v model chunks: Megatron-LM's forward_backward_pipelining_with_interleaving, with
//                (p - s - 1) x 2 + (v - 1) x p warm-up forwards, micro-batches taken p at a time through each chunk
//                (Narayanan et al. 2021, figure 4 bottom)
std::vector<PipelineSlot> pipeline_order(scenario::PipelineSchedule schedule, int stages, int stage, int micro_batches,
                                         int chunks);

// The most (micro-batch, chunk) forwards whose backward has not run yet, at any point of `order`: how many
// micro-batches' activations the stage holds at its peak (1F1B's first stage: p; GPipe: m).
int peak_in_flight(const std::vector<PipelineSlot>& order);

} // namespace dtsim::plan
