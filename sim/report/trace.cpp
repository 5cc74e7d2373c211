// The Chrome trace-event format ("X" complete events, "s"/"f" flow events, "C" counters, "M" names; microseconds),
// as Perfetto's JSON importer reads it.
#include "sim/report/trace.hpp"

#include "sim/graph/collective_request.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

namespace dtsim::report {
namespace {

using nlohmann::json;

constexpr std::size_t kCountedLinks = 16; // links with a utilization counter: the busiest by bytes

bool kept(const std::vector<int>& chosen, int value) {
  return chosen.empty() || std::binary_search(chosen.begin(), chosen.end(), value);
}

int thread_of(int rank, int stream) {
  return rank * graph::kStreamCount + stream;
}

// Trace times: microseconds, rounded to whole nanoseconds. An interval's duration is the difference of its rounded
// ends, shortened by the last bits where ts + dur would pass the rounded end in double arithmetic, so the next op on
// the thread (which starts at or after that end) never starts inside it: speedscope and chrome://tracing nest
// overlapping slices.
double micros(double seconds) {
  return static_cast<double>(std::llround(seconds * 1e9)) / 1e3;
}
double duration_micros(double start, double end) {
  const double from = micros(start), to = micros(end);
  double dur = std::max(0.0, to - from);
  while (dur > 0 && from + dur > to)
    dur = std::nextafter(dur, 0.0);
  return dur;
}

// The algorithm and protocol each collective ran, resolved once per op (a trace holds every iteration of it).
class ResolvedCollectives {
public:
  ResolvedCollectives(const graph::ExecutionGraph& graph, const topologies::ClusterSpec& cluster)
      : graph_(graph), cluster_(cluster) {}
  const collectives::Request& operator()(const graph::Op& op, const graph::Collective& c) {
    auto [it, inserted] = resolved_.try_emplace(&op);
    if (inserted) {
      auto without_matrix = c; // the algorithm does not depend on an all-to-all-v's matrix: not copied in
      without_matrix.matrix = nullptr;
      it->second = graph::resolved_request(without_matrix, graph_.groups[c.group], cluster_);
    }
    return it->second;
  }

private:
  const graph::ExecutionGraph& graph_;
  const topologies::ClusterSpec& cluster_;
  std::map<const graph::Op*, collectives::Request> resolved_;
};

// What an op did, for the event's args.
json op_args(const graph::ExecutionGraph& g, const graph::Op& op, std::uint32_t iteration,
             ResolvedCollectives& resolved) {
  json args{{"iteration", iteration}};
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, graph::Compute>) {
          if (body.flops > 0) args["flops"] = body.flops;
          if (body.bytes > 0) args["bytes"] = body.bytes;
          // A compute op priced as communication (coarse fidelity's closed-form tensor-parallel collectives) names
          // the dimension it serves; plain compute keeps the default axis and says nothing.
          if (op.axis != graph::Axis::data) args["dimension"] = graph::to_string(op.axis);
        } else if constexpr (std::is_same_v<T, graph::Collective>) {
          const auto& request = resolved(op, body);
          args["operation"] = collectives::to_string(body.op);
          args["algorithm"] = collectives::to_string(request.algorithm);
          args["protocol"] = collectives::to_string(request.protocol);
          args["bytes"] = body.bytes;
          args["group"] = body.group;
          args["group_size"] = g.groups[body.group].size();
          args["dimension"] = graph::to_string(op.axis);
        } else if constexpr (std::is_same_v<T, graph::SendRecv>) {
          args[body.send ? "to" : "from"] = body.peer;
          args["bytes"] = body.bytes;
        } else if constexpr (std::is_same_v<T, graph::Exchange>) {
          double bytes = 0;
          for (const auto& t : body.transfers)
            bytes += t.send ? t.bytes : 0;
          args["peers"] = body.transfers.size();
          args["bytes_sent"] = bytes;
        } else if constexpr (std::is_same_v<T, graph::Push>) {
          args["bytes"] = body.bytes;
          if (body.reply_bytes > 0) args["reply_bytes"] = body.reply_bytes;
        } else if constexpr (std::is_same_v<T, graph::PushPull>) {
          double push = 0, pull = 0;
          for (const auto& s : body.shards) {
            push += s.push_bytes;
            pull += s.pull_bytes;
          }
          args["shards"] = body.shards.size();
          args["push_bytes"] = push;
          args["pull_bytes"] = pull;
        }
      },
      op.body);
  return args;
}

// Sends and receives between two ranks match in the order they are posted (graph::SendRecv): the k-th send from a
// to b is the k-th receive at b from a, on each p2p stream. Flow events join the two slices.
struct TransferEnd {
  int rank = 0;
  const engine::Interval* interval = nullptr;
};
void add_flows(const plan::Plan& plan, const engine::ReplayResult& replay, const topologies::ClusterSpec& cluster,
               const TraceOptions& options, json& events) {
  // (from, to, is the send, stream) -> in order
  std::map<std::tuple<int, int, bool, graph::Stream>, std::vector<TransferEnd>> ends;
  for (std::size_t r = 0; r < replay.ranks.size(); ++r) {
    const auto& program = plan.graph.program_of(static_cast<int>(r));
    for (auto stream : {graph::Stream::p2p, graph::Stream::p2p_back})
      for (const auto& interval : replay.ranks[r].streams[static_cast<int>(stream)]) {
        const auto* sr = std::get_if<graph::SendRecv>(&program.ops[interval.op].body);
        if (sr == nullptr) continue;
        const int rank = static_cast<int>(r);
        const auto key =
            sr->send ? std::tuple{rank, sr->peer, true, stream} : std::tuple{sr->peer, rank, false, stream};
        ends[key].push_back({rank, &interval});
      }
  }
  std::uint64_t id = 0;
  for (const auto& [key, sends] : ends) {
    if (!std::get<2>(key)) continue;
    const auto found = ends.find({std::get<0>(key), std::get<1>(key), false, std::get<3>(key)});
    const int track = static_cast<int>(std::get<3>(key));
    if (found == ends.end()) continue;
    const auto& receives = found->second;
    for (std::size_t k = 0; k < std::min(sends.size(), receives.size()); ++k) {
      const auto& s = sends[k];
      const auto& d = receives[k];
      ++id; // numbered over every transfer, so that filtering keeps the ids of the rest
      if (!kept(options.ranks, s.rank) || !kept(options.ranks, d.rank) ||
          !kept(options.iterations, static_cast<int>(s.interval->iteration)) ||
          !kept(options.iterations, static_cast<int>(d.interval->iteration)))
        continue;
      // The arrow leaves the send as it is posted and lands inside the receive (bound to the slice enclosing it).
      events.push_back({{"name", "transfer"},
                        {"cat", "p2p"},
                        {"ph", "s"},
                        {"id", id},
                        {"pid", cluster.node_of(s.rank)},
                        {"tid", thread_of(s.rank, track)},
                        {"ts", micros(s.interval->start)}});
      events.push_back({{"name", "transfer"},
                        {"cat", "p2p"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", id},
                        {"pid", cluster.node_of(d.rank)},
                        {"tid", thread_of(d.rank, track)},
                        {"ts", micros((d.interval->start + d.interval->end) / 2)}});
    }
  }
}

// The busiest links' utilization between samples: bytes carried over what the link carries at its bandwidth.
void add_link_counters(const engine::ReplayResult& replay, int pid, double from, double to, json& events) {
  const auto& samples = replay.link_samples;
  const std::size_t links = replay.links.size();
  if (samples.times.size() < 2 || links == 0 || samples.bytes.size() != samples.times.size() * links) return;
  std::vector<std::size_t> order(links);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return replay.links[a].bytes > replay.links[b].bytes; });
  order.resize(std::min(kCountedLinks, order.size()));
  std::erase_if(order, [&](std::size_t l) { return replay.links[l].bytes <= 0 || replay.links[l].bandwidth <= 0; });
  for (const auto l : order) {
    const auto name = fmt::format("{} utilization (%)", replay.links[l].name);
    for (std::size_t i = 0; i + 1 < samples.times.size(); ++i) {
      const double t0 = samples.times[i], t1 = samples.times[i + 1];
      if (t1 <= from || t0 > to) continue;
      const double bytes = samples.bytes[(i + 1) * links + l] - samples.bytes[i * links + l];
      const double percent = 100 * bytes / (replay.links[l].bandwidth * (t1 - t0));
      events.push_back({{"name", name}, {"ph", "C"}, {"pid", pid}, {"ts", micros(t0)}, {"args", {{"%", percent}}}});
    }
    events.push_back({{"name", name},
                      {"ph", "C"},
                      {"pid", pid},
                      {"ts", micros(std::min(to, samples.times.back()))},
                      {"args", {{"%", 0.0}}}});
  }
}

} // namespace

std::vector<int> traced_ranks(const engine::ReplayResult& replay, const TraceOptions& options) {
  std::vector<int> simulated;
  for (std::size_t r = 0; r < replay.ranks.size(); ++r)
    if (replay.ranks[r].simulated && kept(options.ranks, static_cast<int>(r))) simulated.push_back(static_cast<int>(r));
  if (!options.ranks.empty() || options.max_ranks == 0 || simulated.size() <= options.max_ranks) return simulated;
  if (options.max_ranks == 1) return {simulated.front()};
  std::vector<int> spread; // the first, the last, and evenly between
  for (std::size_t i = 0; i < options.max_ranks; ++i)
    spread.push_back(simulated[i * (simulated.size() - 1) / (options.max_ranks - 1)]);
  return spread;
}

json chrome_trace(const plan::Plan& plan, const engine::ReplayResult& replay, const topologies::ClusterSpec& cluster,
                  const TraceOptions& options) {
  json events = json::array();
  std::map<int, std::vector<int>> nodes; // node -> its traced ranks
  double first = std::numeric_limits<double>::infinity(), last = 0;
  ResolvedCollectives resolved(plan.graph, cluster);
  const auto traced = traced_ranks(replay, options);
  TraceOptions kept_ranks = options; // the flows' filter: the ranks traced
  kept_ranks.ranks = traced;
  for (const int rank : traced) {
    const auto r = static_cast<std::size_t>(rank);
    const int node = cluster.node_of(rank);
    nodes[node].push_back(rank);
    const auto& program = plan.graph.program_of(rank);
    for (int s = 0; s < graph::kStreamCount; ++s) {
      const auto& stream = replay.ranks[r].streams[s];
      if (stream.empty()) continue; // a stream the rank does not use (the input stream without an input pipeline)
      const auto name = fmt::format("GPU {} {}", rank, graph::to_string(static_cast<graph::Stream>(s)));
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", node},
                        {"tid", thread_of(rank, s)},
                        {"args", {{"name", name}}}});
      events.push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", node},
                        {"tid", thread_of(rank, s)},
                        {"args", {{"sort_index", thread_of(rank, s)}}}});
      for (const auto& interval : stream) {
        if (!kept(options.iterations, static_cast<int>(interval.iteration))) continue;
        first = std::min(first, interval.start);
        last = std::max(last, interval.end);
        const auto& op = program.ops[interval.op];
        events.push_back({{"name", op.name},
                          {"cat", std::string(graph::to_string(static_cast<graph::Stream>(s)))},
                          {"ph", "X"},
                          {"pid", node},
                          {"tid", thread_of(rank, s)},
                          {"ts", micros(interval.start)},
                          {"dur", duration_micros(interval.start, interval.end)},
                          {"args", op_args(plan.graph, op, interval.iteration, resolved)}});
      }
    }
  }
  if (nodes.empty()) return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  const double memory_gib = plan.memory.total() / (1024.0 * 1024 * 1024);
  for (const auto& [node, ranks] : nodes) {
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", node},
         {"args",
          {{"name", fmt::format("node {} ({} GPU{} traced)", node, ranks.size(), ranks.size() == 1 ? "" : "s")}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", node}, {"args", {{"sort_index", node}}}});
    // The planner's memory per GPU (its fullest pipeline stage): a level, not a measurement over time.
    for (double t : {first, last})
      events.push_back({{"name", "planned memory per GPU (GiB)"},
                        {"ph", "C"},
                        {"pid", node},
                        {"ts", micros(t)},
                        {"args", {{"GiB", memory_gib}}}});
  }
  add_flows(plan, replay, cluster, kept_ranks, events);
  const int network = cluster.nodes; // after the nodes
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", network}, {"args", {{"name", "network links"}}}});
  events.push_back(
      {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", network}, {"args", {{"sort_index", network}}}});
  add_link_counters(replay, network, first, last, events);
  std::size_t simulated = 0;
  for (const auto& rank : replay.ranks)
    simulated += rank.simulated ? 1 : 0;
  // What the trace holds, for its reader (chrome://tracing shows otherData as the trace's metadata).
  const json about = {{"ranks_simulated", simulated}, {"ranks_traced", traced.size()}};
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", about}};
}

nlohmann::json timeline_sample(const nlohmann::json& trace) {
  constexpr std::size_t kSampled = 8;
  const auto rank_of = [](const nlohmann::json& e) { return e["tid"].get<int>() / graph::kStreamCount; };
  std::vector<int> traced;
  int last = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    last = std::max(last, e["args"]["iteration"].get<int>());
    traced.push_back(rank_of(e));
  }
  std::sort(traced.begin(), traced.end());
  traced.erase(std::unique(traced.begin(), traced.end()), traced.end());
  std::vector<int> sampled;
  const std::size_t count = std::min(kSampled, traced.size());
  for (std::size_t i = 0; i < count; ++i)
    sampled.push_back(traced[i * traced.size() / count]);
  double origin = std::numeric_limits<double>::infinity();
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["args"]["iteration"] != last) continue;
    const int rank = rank_of(e);
    if (!std::binary_search(sampled.begin(), sampled.end(), rank)) continue;
    origin = std::min(origin, e["ts"].get<double>());
    // What the op is, for the figure's colours: compute, the communication of each parallel dimension (a
    // collective's, or the closed-form tensor-parallel op coarse fidelity puts on the compute stream), the pipeline's
    // transfers, input.
    const auto& args = e["args"];
    std::string kind = e["cat"].get<std::string>();
    if (args.contains("dimension"))
      kind = args["dimension"].get<std::string>() + "-parallel communication";
    else if (kind == "p2p")
      kind = "pipeline transfers";
    else if (kind == "comm")
      kind = "communication";
    events.push_back({{"rank", rank},
                      {"stream", e["cat"]},
                      {"kind", kind},
                      {"name", e["name"]},
                      {"start_ms", e["ts"].get<double>() / 1e3},
                      {"end_ms", (e["ts"].get<double>() + e["dur"].get<double>()) / 1e3}});
  }
  for (auto& e : events) {
    e["start_ms"] = e["start_ms"].get<double>() - origin / 1e3;
    e["end_ms"] = e["end_ms"].get<double>() - origin / 1e3;
  }
  return {{"iteration", last}, {"ranks", sampled}, {"events", events}};
}

} // namespace dtsim::report
