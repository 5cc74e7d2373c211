#include "sim/graph/execution_graph.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace dtsim::graph {

std::string_view to_string(Stream s) {
  switch (s) {
  case Stream::compute:
    return "compute";
  case Stream::comm:
    return "comm";
  case Stream::input:
    return "input";
  case Stream::p2p:
    return "p2p";
  case Stream::tensor:
    return "tensor";
  case Stream::host:
    return "host";
  case Stream::p2p_back:
    return "p2p_back";
  case Stream::pull:
    return "pull";
  }
  return "unknown";
}

std::string_view to_string(Axis a) {
  switch (a) {
  case Axis::data:
    return "data";
  case Axis::tensor:
    return "tensor";
  case Axis::pipeline:
    return "pipeline";
  case Axis::expert:
    return "expert";
  case Axis::context:
    return "context";
  }
  return "unknown";
}

namespace {

void validate_program(const ExecutionGraph& graph, const Program& program, std::size_t index) {
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    for (auto dep : op.deps)
      if (dep >= i)
        throw std::invalid_argument(
            fmt::format("program {} op {} '{}': dependency on op {} does not come earlier", index, i, op.name, dep));
    if (const auto* c = std::get_if<Collective>(&op.body)) {
      if (c->group < 0 || c->group >= static_cast<int>(graph.groups.size()))
        throw std::invalid_argument(
            fmt::format("program {} op {} '{}': unknown group {}", index, i, op.name, c->group));
      // On the compute stream a collective holds the kernels behind it (Megatron's tensor-parallel all-reduces).
      if (op.stream != Stream::comm && op.stream != Stream::compute && op.stream != Stream::tensor &&
          op.stream != Stream::pull)
        throw std::invalid_argument(fmt::format(
            "program {} op {} '{}': collectives run on the comm, compute, tensor or pull stream", index, i, op.name));
    }
    if ((op.stream == Stream::input || op.stream == Stream::host) && !std::holds_alternative<Compute>(op.body))
      throw std::invalid_argument(fmt::format("program {} op {} '{}': the {} stream runs host work (Compute ops) only",
                                              index, i, op.name, to_string(op.stream)));
    const auto check_peer = [&](int peer, bool none_allowed) {
      if ((peer < 0 && !(none_allowed && peer == -1)) || peer >= graph.rank_count())
        throw std::invalid_argument(fmt::format("program {} op {} '{}': unknown peer {}", index, i, op.name, peer));
    };
    if (const auto* p = std::get_if<SendRecv>(&op.body)) check_peer(p->peer, false);
    if (const auto* e = std::get_if<Exchange>(&op.body))
      for (const auto& t : e->transfers)
        check_peer(t.peer, false);
    if (const auto* p = std::get_if<Push>(&op.body))
      for (int peer : p->peers)
        check_peer(peer, true);
    if (const auto* p = std::get_if<PushPull>(&op.body))
      for (const auto& shard : p->shards)
        if (shard.server < 0 || shard.server >= static_cast<int>(graph.servers.size()))
          throw std::invalid_argument(
              fmt::format("program {} op {} '{}': unknown server {}", index, i, op.name, shard.server));
    if (op.every == 0)
      throw std::invalid_argument(fmt::format("program {} op {} '{}': runs every 0 iterations", index, i, op.name));
  }
}

// Sequence of (operation, bytes) a rank posts on a group; every member must post the same sequence.
std::vector<std::pair<collectives::Operation, double>> collective_sequence(const Program& program, int group) {
  std::vector<std::pair<collectives::Operation, double>> seq;
  for (const auto& op : program.ops)
    if (const auto* c = std::get_if<Collective>(&op.body); c && c->group == group) seq.emplace_back(c->op, c->bytes);
  return seq;
}

} // namespace

void validate(const ExecutionGraph& graph) {
  for (auto p : graph.rank_program)
    if (p >= graph.programs.size())
      throw std::invalid_argument(fmt::format("a rank uses program {}, which does not exist", p));
  for (std::size_t i = 0; i < graph.programs.size(); ++i)
    validate_program(graph, graph.programs[i], i);
  if (!graph.compute_slowdown.empty() && static_cast<int>(graph.compute_slowdown.size()) != graph.rank_count())
    throw std::invalid_argument("compute_slowdown must have one row per rank");
  for (std::size_t g = 0; g < graph.groups.size(); ++g) {
    const auto& members = graph.groups[g];
    if (members.empty()) throw std::invalid_argument(fmt::format("group {} is empty", g));
    for (int r : members)
      if (r < 0 || r >= graph.rank_count())
        throw std::invalid_argument(fmt::format("group {} names rank {}, which does not exist", g, r));
    const auto first_program = graph.rank_program[members.front()];
    const auto reference = collective_sequence(graph.programs[first_program], static_cast<int>(g));
    for (int r : members)
      if (graph.rank_program[r] != first_program && // ranks sharing a program agree by construction
          collective_sequence(graph.program_of(r), static_cast<int>(g)) != reference)
        throw std::invalid_argument(fmt::format("ranks {} and {} post different collectives on group {}: the replay "
                                                "would deadlock",
                                                members.front(), r, g));
  }
}

} // namespace dtsim::graph
