#include "sim/plan/pipeline_schedule.hpp"

#include <algorithm>

namespace dtsim::plan {
namespace {

// Megatron-LM's get_model_chunk_id and the micro-batch of the k-th forward (or backward) of an interleaved stage.
PipelineSlot interleaved_slot(int k, bool forward, int stages, int chunks) {
  const int group = stages * chunks;
  int chunk = k % group / stages;
  if (!forward) chunk = chunks - 1 - chunk;
  return {forward, k / group * stages + k % stages, chunk};
}

} // namespace

std::vector<PipelineSlot> pipeline_order(scenario::PipelineSchedule schedule, int stages, int stage, int micro_batches,
                                         int chunks) {
  std::vector<PipelineSlot> order;
  const int m = micro_batches;
  if (schedule == scenario::PipelineSchedule::gpipe) {
    for (int i = 0; i < m; ++i)
      order.push_back({true, i, 0});
    for (int i = 0; i < m; ++i)
      order.push_back({false, i, 0});
    return order;
  }
  const int v = schedule == scenario::PipelineSchedule::interleaved ? chunks : 1;
  const int total = m * v;
  int warmup = v == 1 ? stages - stage - 1 : (stages - stage - 1) * 2 + (v - 1) * stages;
  if (v > 1 && m == stages) warmup = total; // Megatron: all warm-up when the micro-batches fill the pipeline once
  warmup = std::min(warmup, total);
  const auto slot = [&](int k, bool forward) {
    return v == 1 ? PipelineSlot{forward, k, 0} : interleaved_slot(k, forward, stages, v);
  };
  for (int k = 0; k < warmup; ++k)
    order.push_back(slot(k, true));
  for (int k = 0; k + warmup < total; ++k) {
    order.push_back(slot(k + warmup, true));
    order.push_back(slot(k, false));
  }
  for (int k = std::max(0, total - warmup); k < total; ++k)
    order.push_back(slot(k, false));
  return order;
}

int peak_in_flight(const std::vector<PipelineSlot>& order) {
  int now = 0, peak = 0;
  for (const auto& s : order) {
    now += s.forward ? 1 : -1;
    peak = std::max(peak, now);
  }
  return peak;
}

} // namespace dtsim::plan
