// Collectives replayed as flows: each step of a schedule becomes concurrent flows between per-pair mailboxes.
#include "sim/engine/replay.hpp"
#include "sim/graph/collective_request.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::engine::detail {

// Replays this rank's part of a collective: each step's transfers as concurrent flows, then the step's
// GPU reduction, protocol overhead and (in aggregated schedules) the latency terms it stands for.
void Replay::run_collective(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status) {
  const auto& members = graph_.groups[c.group];
  const auto& entry = schedule_for(c);
  const auto& schedule = *entry.schedule;
  const int position = positions_[c.group][rank];
  if (entry.algorithm == collectives::Algorithm::in_switch) start_switches(c, entry, it);
  status.wait = StreamStatus::Wait::peer;
  std::vector<sg4::CommPtr> comms;
  std::vector<const Pair*> outgoing;
  char* received = nullptr;
  for (int k = 0; k < schedule.step_count(); ++k) {
    const auto step = schedule.step(position, k);
    status.step = k;
    status.peer = step.recvs.empty() ? -1 : endpoint(rank, members, step.recvs.front().peer);
    comms.clear();
    outgoing.clear();
    const double start = sg4::Engine::get_clock();
    double alpha_out = 0; // the slowest outgoing path's latency, for the latency terms an aggregated step adds
    double alpha_in = 0;  // the slowest incoming path's latency: when the reduction can start
    for (const auto& send : step.sends) {
      auto& out = pair(rank, endpoint(rank, members, send.peer));
      comms.push_back(out.mailbox->put_async(&token_, flow_size(send.bytes)));
      outgoing.push_back(&out);
      alpha_out = std::max(alpha_out, out.latency);
    }
    for (const auto& recv : step.recvs) {
      auto& in = pair(endpoint(rank, members, recv.peer), rank);
      comms.push_back(in.mailbox->get_async(&received));
      alpha_in = std::max(alpha_in, in.latency);
    }
    sg4::Comm::wait_all(comms);
    for (std::size_t i = 0; i < outgoing.size(); ++i)
      account(rank, *outgoing[i], step.sends[i].bytes, it);
    // The reduction overlaps the receives (NCCL reduces slices as they arrive): only what outlasts the
    // transfer is added. Aggregated steps add the latency terms of the steps they stand for.
    const double transfer = sg4::Engine::get_clock() - start - alpha_in * latency_factor_;
    const double extra = std::max(0.0, step.reduce_bytes * c.reduce_seconds_per_byte - transfer) +
                         aggregated_latency(rank, members, step, alpha_out) * latency_factor_;
    if (extra > 0) sg4::this_actor::sleep_for(extra);
  }
  status.step = -1;
}

// The latency terms an aggregated step stands for beyond the one its flows paid: each merged step's path
// latency when the schedule names them, else the slowest outgoing path's for each extra term.
double Replay::aggregated_latency(int rank, const std::vector<int>& members, const collectives::Step& step,
                                  double alpha_out) {
  if (step.latency_terms <= 1) return 0;
  if (step.latency_peers.empty()) return (step.latency_terms - 1) * alpha_out;
  double sum = 0, slowest = 0;
  for (const auto& [to, from] : step.latency_peers) {
    const double latency =
        std::max(to < 0 ? 0.0 : pair(rank, members[to]).latency, from < 0 ? 0.0 : pair(members[from], rank).latency);
    sum += latency;
    slowest = std::max(slowest, latency);
  }
  return sum - slowest;
}

// Schedules are shared by every member (they are functions of the position) and built once per op, before
// the actors start (index_programs).
const Replay::ScheduleEntry& Replay::schedule_for(const graph::Collective& c) {
  auto [entry, inserted] = schedules_.try_emplace(&c);
  if (inserted) {
    auto request = graph::collective_request(c, graph_.groups[c.group], cluster_);
    request.algorithm = graph::resolved_algorithm(request);
    entry->second.algorithm = request.algorithm;
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
  for (auto* link : links)
    if (auto found = platform_.link_index.find(link); found != platform_.link_index.end())
      p.links.push_back(found->second);
  p.mailbox = sg4::Mailbox::by_name(fmt::format("{}>{}", from, to));
  return pairs_.try_emplace(key, std::move(p)).first->second;
}

// Bytes per rank and per link.
void Replay::account(int from, const Pair& route, double bytes, std::uint32_t it) {
  if ((++transfers_ & 0xffff) == 0 && options_.show_progress) show_progress(it);
  ranks_[from].timeline.bytes_sent[it] += bytes;
  account_links(route, bytes);
}

void Replay::account_links(const Pair& route, double bytes) {
  for (int link : route.links)
    link_bytes_[link] += bytes;
}
} // namespace dtsim::engine::detail
