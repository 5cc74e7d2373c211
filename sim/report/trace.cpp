// Chrome trace-event format ("X" complete events, microseconds), which Perfetto and chrome://tracing open:
// one process per rank, one thread per stream.
#include "sim/report/result.hpp"

namespace dtsim::report {

using nlohmann::json;

json chrome_trace(const plan::Plan& plan, const engine::ReplayResult& replay) {
  json events = json::array();
  for (std::size_t rank = 0; rank < replay.ranks.size(); ++rank) {
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
    for (int s = 0; s < graph::kStreamCount; ++s) {
      // The input stream exists only where the scenario models the input pipeline.
      if (s == static_cast<int>(graph::Stream::input) && replay.ranks[rank].streams[s].empty()) continue;
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", rank},
                        {"tid", s},
                        {"args", {{"name", std::string(graph::to_string(static_cast<graph::Stream>(s)))}}}});
    }
    const auto& program = plan.graph.program_of(static_cast<int>(rank));
    for (int s = 0; s < graph::kStreamCount; ++s)
      for (const auto& interval : replay.ranks[rank].streams[s])
        events.push_back({{"name", program.ops[interval.op].name},
                          {"cat", std::string(graph::to_string(static_cast<graph::Stream>(s)))},
                          {"ph", "X"},
                          {"pid", rank},
                          {"tid", s},
                          {"ts", interval.start * 1e6},
                          {"dur", (interval.end - interval.start) * 1e6},
                          {"args", {{"iteration", interval.iteration}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

} // namespace dtsim::report
