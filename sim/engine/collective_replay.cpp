// Collectives replayed as flows: each step of a schedule becomes concurrent flows between per-pair mailboxes.
#include "sim/engine/replay.hpp"
#include "sim/graph/collective_request.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::engine::detail {

// Replays this rank's part of a collective: each step's transfers as concurrent flows, then the step's GPU
// reduction and what the step costs beyond its bytes (NCCL's per-step latency, the latency terms of an aggregated
// step). NCCL's sends are eager (a sender writes into the receiver's FIFO of NCCL_STEPS slots and goes on): a step
// waits for its receives only, and the call ends when its last sends are delivered, so a position pays a link's
// latency only on the data's path, not once per step on its own. MPI's algorithms wait for their sends too.
void Replay::run_collective(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status) {
  const auto& members = graph_.groups[c.group];
  const auto& entry = schedule_for(c);
  const auto& schedule = *entry.schedule;
  const auto& wire = entry.wire;
  const int position = positions_[c.group][rank];
  if (entry.algorithm == collectives::Algorithm::in_switch) start_switches(c, entry, it);
  status.wait = StreamStatus::Wait::peer;
  if (wire.base_latency > 0 && schedule.step_count() > 0) sg4::this_actor::sleep_for(wire.base_latency);
  std::vector<sg4::CommPtr> sends, recvs;
  char* received = nullptr;
  for (int k = 0; k < schedule.step_count(); ++k) {
    const auto step = schedule.step(position, k);
    status.step = k;
    status.peer = step.recvs.empty() ? -1 : endpoint(rank, members, step.recvs.front().peer);
    recvs.clear();
    const double start = sg4::Engine::get_clock();
    // The protocol's cap on what this position's channels push, shared by the step's flows.
    const double rate = wire.rate_cap > 0 && !step.sends.empty() ? wire.rate_cap / step.sends.size() : -1;
    const Pair* slowest_out = nullptr; // the slowest outgoing and incoming paths: the step's latency term
    const Pair* slowest_in = nullptr;
    for (const auto& send : step.sends) {
      auto& out = pair(rank, endpoint(rank, members, send.peer));
      auto comm = out.mailbox->put_init(&token_, flow_size(send.bytes * wire.wire_factor));
      if (rate > 0) comm->set_rate(rate);
      sends.push_back(comm->start());
      account(rank, out, send.bytes, send.bytes * wire.wire_factor, it);
      if (!slowest_out || out.latency > slowest_out->latency) slowest_out = &out;
    }
    for (const auto& recv : step.recvs) {
      auto& in = pair(endpoint(rank, members, recv.peer), rank);
      recvs.push_back(in.mailbox->get_async(&received));
      if (!slowest_in || in.latency > slowest_in->latency) slowest_in = &in;
    }
    if (!wire.eager_sends) {
      recvs.insert(recvs.end(), sends.begin(), sends.end());
      sends.clear();
    }
    sg4::Comm::wait_all(recvs);
    // The reduction overlaps the receives (NCCL reduces slices as they arrive): only what outlasts the transfer is
    // added, with the step's latency beyond the links' and the terms an aggregated step stands for.
    // The step's latency term is its slowest incoming path's; a step that only sends pays its outgoing one when it
    // waits for its sends (eager senders go on).
    const Pair* term = slowest_in ? slowest_in : wire.eager_sends ? nullptr : slowest_out;
    const double paid = term ? term->latency * latency_factor_ : 0;
    const double transfer = sg4::Engine::get_clock() - start - paid;
    double extra = std::max(0.0, step.reduce_bytes * c.reduce_seconds_per_byte - transfer);
    if (term && step.latency_terms > 0) {
      extra += std::max(0.0, term_cost(*term, wire) - paid);
      extra += aggregated_latency(rank, members, step, wire, *term);
    }
    if (extra > 0) sg4::this_actor::sleep_for(extra);
  }
  sg4::Comm::wait_all(sends);
  status.step = -1;
}

// One latency term of a step over this path: the path's latency, or NCCL's per-step latency for its link class
// when that is more (it includes the links' latency).
double Replay::term_cost(const Pair& path, const collectives::WireModel& wire) const {
  return std::max(path.latency * latency_factor_, wire.step_latency[static_cast<int>(path.link)]);
}

// The latency terms an aggregated step stands for beyond the one its flows paid: each merged step's term when the
// schedule names its peers, else the step's own term again for each extra one.
double Replay::aggregated_latency(int rank, const std::vector<int>& members, const collectives::Step& step,
                                  const collectives::WireModel& wire, const Pair& term) {
  if (step.latency_terms <= 1) return 0;
  if (step.latency_peers.empty()) return (step.latency_terms - 1) * term_cost(term, wire);
  double sum = 0, slowest = 0;
  for (const auto& [to, from] : step.latency_peers) {
    double cost = 0;
    if (to >= 0) cost = std::max(cost, term_cost(pair(rank, endpoint(rank, members, to)), wire));
    if (from >= 0) cost = std::max(cost, term_cost(pair(endpoint(rank, members, from), rank), wire));
    sum += cost;
    slowest = std::max(slowest, cost);
  }
  return sum - slowest;
}

// Schedules are shared by every member (they are functions of the position) and built once per op, before
// the actors start (index_programs).
const Replay::ScheduleEntry& Replay::schedule_for(const graph::Collective& c) {
  auto [entry, inserted] = schedules_.try_emplace(&c);
  if (inserted) {
    const auto request = collectives::resolve(graph::collective_request(c, graph_.groups[c.group], cluster_));
    entry->second.algorithm = request.algorithm;
    entry->second.wire = collectives::wire_model(request);
    entry->second.schedule = c.aggregate ? collectives::aggregate(request) : collectives::make_schedule(request);
  }
  return entry->second;
}

// Looked up once per ordered pair and cached. Mailbox::by_name is a simcall: other actors run meanwhile and
// may ask for the same pair, so the entry is cached only once complete (both get the same mailbox).
const Replay::Pair& Replay::pair(int from, int to) {
  const auto key = (static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint32_t>(to);
  if (auto found = pairs_.find(key); found != pairs_.end()) return found->second;
  Pair p;
  std::vector<sg4::Link*> links;
  host(from)->route_to(host(to), links, &p.latency);
  p.link = link_class(from, to);
  for (auto* link : links)
    if (auto found = platform_.link_index.find(link); found != platform_.link_index.end())
      p.links.push_back(found->second);
  p.mailbox = sg4::Mailbox::by_name(fmt::format("{}>{}", from, to));
  return pairs_.try_emplace(key, std::move(p)).first->second;
}

// Bytes per rank (the data it sent) and per link (what crossed it: the data and the protocol's flags).
void Replay::account(int from, const Pair& route, double bytes, double wire_bytes, std::uint32_t it) {
  if ((++transfers_ & 0xffff) == 0 && options_.show_progress) show_progress(it);
  ranks_[from].timeline.bytes_sent[it] += bytes;
  account_links(route, wire_bytes);
}

// The class of link a path between two endpoints crosses: the network between nodes (or to the reducing network
// switch), else the node's fabric.
collectives::LinkClass Replay::link_class(int from, int to) const {
  const int gpus = static_cast<int>(platform_.gpus.size());
  const auto fabric = cluster_.intra_kind == topologies::IntraNodeKind::nvlink ||
                              cluster_.intra_kind == topologies::IntraNodeKind::hybrid_cube_mesh
                          ? collectives::LinkClass::nvlink
                          : collectives::LinkClass::pcie;
  const auto node = [&](int endpoint) {
    if (endpoint < gpus) return cluster_.node_of(endpoint);
    if (endpoint - gpus < static_cast<int>(platform_.node_switches.size())) return endpoint - gpus;
    return -1; // the network switch
  };
  return node(from) == node(to) && node(from) >= 0 ? fabric : collectives::LinkClass::network;
}

void Replay::account_links(const Pair& route, double bytes) {
  for (int link : route.links)
    link_bytes_[link] += bytes;
}
} // namespace dtsim::engine::detail
