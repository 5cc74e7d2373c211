#include "sim/report/attribution.hpp"

#include <algorithm>
#include <array>

namespace dtsim::report::detail {
namespace {

// In order of precedence: the first busy category owns the moment.
enum Category { kCompute, kTensor, kExpert, kPipeline, kData, kCategories };

Category category_of(const graph::Op& op) {
  const bool kernel = std::holds_alternative<graph::Compute>(op.body);
  if (kernel && op.stream == graph::Stream::compute && op.axis == graph::Axis::data) return kCompute;
  switch (op.axis) {
  case graph::Axis::tensor:
  case graph::Axis::context: // reported with tensor parallelism: both split each layer's work inside the model copy
    return kTensor;
  case graph::Axis::expert:
    return kExpert;
  case graph::Axis::pipeline:
    return kPipeline;
  default:
    return kData;
  }
}

struct Event {
  double time;
  int delta;
  Category category;
};

} // namespace

TimeShares attribute_time(const graph::Program& program, const engine::RankTimeline& timeline, double lo, double hi) {
  std::vector<Event> events;
  double busy_communication = 0;
  for (auto stream : {graph::Stream::compute, graph::Stream::comm, graph::Stream::p2p, graph::Stream::tensor,
                      graph::Stream::p2p_back, graph::Stream::pull})
    for (const auto& i : timeline.streams[static_cast<int>(stream)]) {
      const double start = std::max(i.start, lo), end = std::min(i.end, hi);
      if (end <= start) continue;
      const auto c = category_of(program.ops[i.op]);
      if (c != kCompute) busy_communication += end - start;
      events.push_back({start, +1, c});
      events.push_back({end, -1, c});
    }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.delta < b.delta; // ends before starts at the same instant
  });
  std::array<int, kCategories> active{};
  std::array<double, kCategories> busy{};
  double previous = lo;
  for (const auto& e : events) {
    const auto owner = std::find_if(active.begin(), active.end(), [](int n) { return n > 0; });
    if (owner != active.end()) busy[owner - active.begin()] += e.time - previous;
    previous = e.time;
    active[e.category] += e.delta;
  }
  TimeShares t{busy[kCompute], busy[kTensor], busy[kExpert], busy[kPipeline], busy[kData], 0};
  t.idle = std::max(0.0, (hi - lo) - t.compute - t.communication());
  t.communication_busy = busy_communication;
  return t;
}

} // namespace dtsim::report::detail
