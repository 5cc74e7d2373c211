// Collectives replayed as flows: each step of a schedule becomes concurrent flows between per-pair mailboxes.
#include "sim/engine/replay.hpp"
#include "sim/graph/collective_request.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::engine::detail {

// Replays this rank's part of a collective: each step's transfers as concurrent flows, then the step's GPU
// reduction and what the step costs beyond its bytes (NCCL's per-step latency, the latency terms of an aggregated
// step). NCCL's transfers are eager: a receiver's FIFO (NCCL_STEPS = 8 slots, device.h) is open before it gets there,
// so a sender writes a step's data as soon as it has it and goes on. On GPUs the pairs' mailboxes therefore have a
// permanent receiver (data flows before the receiver asks for it, make_eager()), and an NCCL algorithm's step waits
// for its receives only; the call ends when its last sends are delivered. A link's latency is then paid on the data's
// path, not once per step by every position. MPI's algorithms wait for their sends too (rendezvous).
double Replay::run_collective(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status) {
  if (c.aggregate && c.op == collectives::Operation::all_to_all_v &&
      schedule_for(c).algorithm == collectives::Algorithm::pairwise)
    return run_timed_all_to_all(rank, c, it, status);
  const auto call = std::make_pair(c.group, calls_posted_[rank][c.group]++);
  auto& arrivals = arrivals_[call]; // std::map: the reference stays valid until the last member erases it
  arrivals.last = std::max(arrivals.last, sg4::Engine::get_clock());
  ++arrivals.posted;
  if (c.launched_together) {
    if (!arrivals.barrier) arrivals.barrier = sg4::Barrier::create(graph_.groups[c.group].size());
    status.wait = StreamStatus::Wait::peer;
    const auto barrier = arrivals.barrier; // held here: the last member out may erase the call
    barrier->wait();
  }
  const auto& entry = schedule_for(c);
  if (entry.algorithm == collectives::Algorithm::in_switch) start_switches(c, entry, it);
  // The SMs NCCL's channels hold and the memory bandwidth its traffic takes for the whole call: compute kernels that
  // overlap it get the rest (contention.cpp).
  const double sms = sms_shared() ? collectives::sm_share(entry.wire, cluster_.compute_units) : 0;
  const double hbm = sms_shared() ? hbm_share(c.group, entry.algorithm) : 0;
  if (sms > 0 || hbm > 0) hold(ranks_[rank], sms, hbm);
  status.wait = StreamStatus::Wait::peer;
  if (entry.wire.base_latency > 0 && entry.schedule->step_count() > 0)
    sg4::this_actor::sleep_for(entry.wire.base_latency);
  // NCCL's channels run side by side, each at its own pace: one actor a lane, on this rank's GPU.
  const auto lanes = entry.schedule->lanes();
  if (lanes.empty()) {
    run_lane(rank, c, *entry.schedule, 0, 1, it, status);
  } else {
    std::vector<sg4::ActorPtr> actors;
    for (std::size_t i = 0; i < lanes.size(); ++i)
      actors.push_back(sg4::Actor::create(fmt::format("rank{}-lane{}", rank, i), platform_.gpus[rank],
                                          [this, rank, &c, lane = lanes[i], i, n = lanes.size(), it, &status] {
                                            run_lane(rank, c, *lane, static_cast<int>(i), n, it, status);
                                          }));
    for (auto& actor : actors)
      actor->join();
  }
  if (sms > 0 || hbm > 0) hold(ranks_[rank], -sms, -hbm);
  status.step = -1;
  // Every member has posted it by the time it ends (a collective cannot finish without them all).
  auto& done = arrivals_.at(call);
  const double busy_from = done.last;
  if (++done.finished == static_cast<int>(graph_.groups[c.group].size())) arrivals_.erase(call);
  return busy_from;
}

// One lane of a collective (all of it when it has none) as this rank runs it.
void Replay::run_lane(int rank, const graph::Collective& c, const collectives::Schedule& schedule, int lane,
                      std::size_t lanes, std::uint32_t it, StreamStatus& status) {
  const auto& members = graph_.groups[c.group];
  const auto& wire = schedule_for(c).wire;
  const int position = positions_[c.group][rank];
  std::vector<sg4::CommPtr> sends;
  std::map<int, std::pair<sg4::CommPtr, int>> last_send; // per peer: the last message to it and its step
  char* received = nullptr;
  const auto post_receives = [&](int k) {
    std::vector<sg4::CommPtr> comms;
    for (const auto& recv : schedule.step(position, k).recvs)
      comms.push_back(mailbox(endpoint(rank, members, recv.peer), rank, lane)->get_async(&received));
    return comms;
  };
  for (int k = 0; k < schedule.step_count(); ++k) {
    const auto step = schedule.step(position, k);
    status.step = k;
    status.peer = step.recvs.empty() ? -1 : endpoint(rank, members, step.recvs.front().peer);
    const double start = sg4::Engine::get_clock();
    // The protocol's cap on what this position's channels push, shared by the lanes (channels) and among a step's
    // capped flows by their bytes. LL and LL128 pass a tree's received lines on as they arrive (Transfer::forwarded):
    // those flows go at what the links carry, the cap having bounded the data where it entered the tree.
    const bool cut_through =
        wire.protocol == collectives::Protocol::ll || wire.protocol == collectives::Protocol::ll128;
    const auto capped = [&](const collectives::Transfer& send) { return !(cut_through && send.forwarded); };
    double step_bytes = 0;
    for (const auto& send : step.sends)
      if (capped(send)) step_bytes += send.bytes;
    const double cap = wire.rate_cap / std::max<std::size_t>(1, lanes);
    // NCCL opens a network connection per channel (its sockets: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD each),
    // so a lane's flow to a peer stands for the channels it carries (of every rank the op stands for).
    const double connections =
        c.stands_for * std::max(1.0, static_cast<double>(wire.channels) / static_cast<double>(lanes));
    const Pair* slowest_out = nullptr; // the slowest outgoing path: a send-only step's latency term (rendezvous)
    auto waited = post_receives(k);    // before any send can block
    const auto received_count = waited.size();
    for (const auto& send : step.sends) {
      const int to = endpoint(rank, members, send.peer);
      auto& out = pair(rank, to);
      // A connection sends in order (a queue pair, a socket, a channel's NVLink writes): this step's data to `to`
      // leaves once an earlier step's is out, not beside it at half the rate.
      if (const auto previous = last_send.find(to);
          previous != last_send.end() && previous->second.second < k &&
          previous->second.first->get_state() != sg4::Activity::State::FINISHED)
        previous->second.first->wait();
      const double rate = cap > 0 && step_bytes > 0 && capped(send) ? cap * send.bytes / step_bytes : -1;
      sends.push_back(
          start_put(mailbox(rank, to, lane), &token_, send.bytes * wire.wire_factor, out, rate, connections));
      last_send[to] = {sends.back(), k};
      account(rank, out, send.bytes, send.bytes * wire.wire_factor, it);
      if (!slowest_out || out.latency > slowest_out->latency) slowest_out = &out;
    }
    if (!wire.eager_sends) {
      waited.insert(waited.end(), sends.begin(), sends.end());
      sends.clear();
    } else { // delivered sends need no wait at the end: keep only those in flight (a long ring has thousands)
      std::erase_if(sends, [](const sg4::CommPtr& c) { return c->get_state() == sg4::Activity::State::FINISHED; });
    }
    sg4::Comm::wait_all(waited);
    // When the step's data is there for the GPU: each receive's last byte plus its latency term (the larger of the
    // path's latency and NCCL's per-step latency on its link class) where the step pays one, else the path's latency;
    // where SimGrid already paid the path's latency (CPU ranks) only what the term adds to it.
    double visible = sg4::Engine::get_clock();
    double bytes_in = start; // when the step's last byte came in, latency aside
    const Pair* term = nullptr;
    for (std::size_t i = 0; i < received_count; ++i) {
      const auto& in = pair(endpoint(rank, members, step.recvs[i].peer), rank);
      const double path = in.latency * latency_factor_;
      const double delay = step.latency_terms > 0 ? term_cost(in, wire) : path;
      const double finish = waited[i]->get_finish_time();
      visible = std::max(visible, finish + (explicit_latency_ ? delay : delay - path));
      bytes_in = std::max(bytes_in, finish - (explicit_latency_ ? 0 : path));
      if (!term || in.latency > term->latency) term = &in;
    }
    // A send-only step that waited for its sends pays its outgoing term (CPU ranks: beyond the latency paid).
    if (!term && !wire.eager_sends && slowest_out && step.latency_terms > 0) {
      term = slowest_out;
      visible += std::max(0.0, term_cost(*term, wire) - (explicit_latency_ ? 0 : term->latency * latency_factor_));
    }
    sleep_until(visible);
    // The reduction overlaps the receives (NCCL reduces slices as they arrive): only what outlasts the transfer is
    // added, with the terms an aggregated step stands for beyond its own.
    double extra = std::max(0.0, step.reduce_bytes * c.reduce_seconds_per_byte - (bytes_in - start));
    if (term && step.latency_terms > 1) extra += aggregated_latency(rank, members, step, wire, *term);
    if (extra > 0) sg4::this_actor::sleep_for(extra);
  }
  sg4::Comm::wait_all(sends);
}

// A lane's messages between two endpoints have a mailbox of their own, so that lanes never take each other's.
sg4::Mailbox* Replay::mailbox(int from, int to, int lane) {
  if (lane == 0) return pair(from, to).mailbox;
  const auto key = std::make_tuple(from, to, lane);
  if (const auto found = lane_boxes_.find(key); found != lane_boxes_.end()) return found->second;
  auto* box = sg4::Mailbox::by_name(fmt::format("{}>{}#{}", from, to, lane)); // a simcall: same name, same mailbox
  make_eager(box, to);
  return lane_boxes_.try_emplace(key, box).first->second;
}

sg4::CommPtr Replay::put_init(sg4::Mailbox* box, void* payload, double bytes, const Pair& route, double rate,
                              double connections) {
  auto comm = box->put_init(payload, flow_size(bytes));
  if (route.connection_cap > 0) {
    const double cap = route.connection_cap * connections;
    rate = rate > 0 ? std::min(rate, cap) : cap;
  }
  if (rate > 0) comm->set_rate(rate);
  return comm;
}

sg4::CommPtr Replay::start_put(sg4::Mailbox* box, void* payload, double bytes, const Pair& route, double rate,
                               double connections) {
  auto comm = put_init(box, payload, bytes, route, rate, connections);
  comm->start();
  return comm;
}

void Replay::sleep_until(double time) {
  const double now = sg4::Engine::get_clock();
  if (time > now) sg4::this_actor::sleep_for(time - now);
}

// What a message's receiver waits beyond its last byte: on GPU clusters the path's latency (SimGrid carries their
// bytes without it, explicit_latency_), elsewhere nothing (SimGrid paid it).
double Replay::arrival_delay(const Pair& path) const {
  return explicit_latency_ ? path.latency * latency_factor_ : 0;
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
  if (step.latency_peers.empty() && step.latency_hops.empty()) return (step.latency_terms - 1) * term_cost(term, wire);
  double sum = 0, slowest = 0;
  const auto add = [&](double cost) {
    sum += cost;
    slowest = std::max(slowest, cost);
  };
  for (const auto& [to, from] : step.latency_peers) {
    double cost = 0;
    if (to >= 0) cost = std::max(cost, term_cost(pair(rank, endpoint(rank, members, to)), wire));
    if (from >= 0) cost = std::max(cost, term_cost(pair(endpoint(rank, members, from), rank), wire));
    add(cost);
  }
  for (const auto& [from, to] : step.latency_hops)
    add(term_cost(pair(members[static_cast<std::size_t>(from)], members[static_cast<std::size_t>(to)]), wire));
  return sum - slowest;
}

// Schedules are shared by every member (they are functions of the position), and by every op that describes the same
// call: each member's op of a call is its own (an MoE layer's dispatch over 128 GPUs is 128 ops sharing one matrix).
const Replay::ScheduleEntry& Replay::schedule_for(const graph::Collective& c) {
  if (auto found = schedules_.find(&c); found != schedules_.end()) return *found->second;
  const auto key = std::make_tuple(c.op, c.algorithm, c.protocol, c.group, c.bytes, c.root, c.aggregate,
                                   c.reduce_seconds_per_byte, c.stands_for, static_cast<const void*>(c.matrix.get()));
  auto [entry, inserted] = shared_schedules_.try_emplace(key);
  if (inserted) {
    const auto request = graph::resolved_request(c, graph_.groups[c.group], cluster_);
    entry->second.algorithm = request.algorithm;
    entry->second.wire = graph::wire_model(c, request);
    entry->second.schedule = c.aggregate ? collectives::aggregate(request) : collectives::make_schedule(request);
  }
  schedules_.emplace(&c, &entry->second);
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
  if (p.link == collectives::LinkClass::network) p.connection_cap = cluster_.tcp.connection_bandwidth();
  for (auto* link : links)
    if (auto found = platform_.link_index.find(link); found != platform_.link_index.end())
      p.links.push_back(found->second);
  p.mailbox = sg4::Mailbox::by_name(fmt::format("{}>{}", from, to));
  make_eager(p.mailbox, to);
  return pairs_.try_emplace(key, std::move(p)).first->second;
}

// GPUs' collective messages flow before their receiver asks for them (NCCL's FIFO is open): the receiving GPU's first
// actor is the mailbox's permanent receiver (SimGrid lets any actor of that GPU take the message; the data lands on
// its host either way). CPU ranks (Gloo, MPI) and the reducing switches keep rendezvous.
void Replay::make_eager(sg4::Mailbox* box, int to) {
  if (cluster_.compute_capability > 0 && to < static_cast<int>(rank_actors_.size()) && rank_actors_[to])
    box->set_receiver(rank_actors_[to]);
}

// Bytes per rank (the data it sent) and per link (what crossed it: the data and the protocol's flags).
void Replay::account(int from, const Pair& route, double bytes, double wire_bytes, std::uint32_t it) {
  count_transfer(it);
  ranks_[from].timeline.bytes_sent[it] += bytes;
  account_links(route, wire_bytes, it);
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

void Replay::account_links(const Pair& route, double bytes, std::uint32_t it) {
  for (int link : route.links)
    ledger_.add(link, bytes, it);
}
} // namespace dtsim::engine::detail
