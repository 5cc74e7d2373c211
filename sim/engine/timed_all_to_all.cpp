// All-to-all-v in aggregate and coarse fidelity: the pairwise exchange timed from its links' loads and its rounds'
// chain (collectives/pairwise_exchange.hpp) instead of replayed as flows, with every byte still counted on the links of
// its route. An MoE layer's expert all-to-alls over 128 GPUs are 16,256 flows a call as flows; here each member
// waits for the others, sleeps until its own finish and books its sends.
#include "sim/collectives/pairwise_exchange.hpp"
#include "sim/engine/replay.hpp"

#include <xbt/config.hpp>

namespace dtsim::engine::detail {

double Replay::run_timed_all_to_all(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status) {
  const auto call = std::make_pair(c.group, calls_posted_[rank][c.group]++);
  const auto& members = graph_.groups[c.group];
  const int n = static_cast<int>(members.size());
  const int position = positions_[c.group][rank];
  const auto& model = exchange_model(c); // built whole by the first member, without yielding to other actors
  auto& arrivals = arrivals_[call];      // std::map: the reference stays valid until the last member erases it
  if (!arrivals.barrier) {
    arrivals.barrier = sg4::Barrier::create(static_cast<unsigned>(n));
    arrivals.start.assign(static_cast<std::size_t>(n), 0.0);
  }
  const double now = sg4::Engine::get_clock();
  arrivals.last = std::max(arrivals.last, now);
  arrivals.start[static_cast<std::size_t>(position)] = now;
  ++arrivals.posted;
  status.wait = StreamStatus::Wait::peer;
  // NCCL's kernel holds its channels' SMs and memory bandwidth from its launch, waiting for the peers included (as
  // run_collective).
  const auto& entry = schedule_for(c);
  const double sms = sms_shared() ? collectives::sm_share(entry.wire, cluster_.compute_units) : 0;
  const double hbm = sms_shared() ? hbm_share(c.group, collectives::Algorithm::pairwise) : 0;
  if (sms > 0 || hbm > 0) hold(ranks_[rank], sms, hbm);
  const auto barrier = arrivals.barrier;
  barrier->wait(); // every member's start is known once the last one posts
  if (arrivals.finish.empty()) arrivals.finish = model.exchange.finish_times(arrivals.start);
  const double busy_from = arrivals.last;
  const double finish = arrivals.finish[static_cast<std::size_t>(position)];
  const auto& bytes = *c.matrix;
  for (int q = 0; q < n; ++q) {
    const double b = bytes[static_cast<std::size_t>(position) * n + q];
    if (q == position || b <= 0) continue;
    count_transfer(it);
    ranks_[rank].timeline.bytes_sent[it] += b;
    for (int link : model.routes->tracked[static_cast<std::size_t>(position) * n + q])
      ledger_.add(link, b * entry.wire.wire_factor, it);
  }
  sleep_until(finish + (n > 1 ? entry.wire.base_latency : 0));
  if (sms > 0 || hbm > 0) hold(ranks_[rank], -sms, -hbm);
  if (++arrivals.finished == n) arrivals_.erase(call);
  return busy_from;
}

// The routes between a group's members, once per group: every link of each (for the model, whatever it is) and the
// tracked ones (for the link loads).
const Replay::GroupRoutes& Replay::group_routes(int group) {
  auto [found, inserted] = group_routes_.try_emplace(group);
  auto& routes = found->second;
  if (!inserted) return routes;
  const auto& members = graph_.groups[group];
  const auto n = members.size();
  const double factor = bandwidth_factor();
  routes.paths.resize(n * n);
  routes.tracked.resize(n * n);
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q < n; ++q) {
      if (p == q) continue;
      std::vector<sg4::Link*> links;
      double latency = 0;
      host(members[p])->route_to(host(members[q]), links, &latency); // not a simcall: no other actor runs meanwhile
      auto& path = routes.paths[p * n + q];
      path.latency = latency * latency_factor_;
      if (link_class(members[p], members[q]) == collectives::LinkClass::network)
        path.rate_cap = cluster_.tcp.connection_bandwidth();
      for (auto* link : links) {
        if (link->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE) {
          // every flow gets the whole bandwidth: a cap on each, not a share
          const double rate = link->get_bandwidth() * factor;
          path.rate_cap = path.rate_cap > 0 ? std::min(path.rate_cap, rate) : rate;
          continue;
        }
        auto [index, added] = exchange_links_.try_emplace(link, static_cast<int>(exchange_capacity_.size()));
        if (added) exchange_capacity_.push_back(link->get_bandwidth() * factor);
        path.links.push_back(index->second);
        if (auto tracked = platform_.link_index.find(link); tracked != platform_.link_index.end())
          routes.tracked[p * n + q].push_back(tracked->second);
      }
    }
  return routes;
}

// One model per (matrix, group): the ops of a layer's dispatch share their matrix, and its calls their timings.
const Replay::ExchangeModel& Replay::exchange_model(const graph::Collective& c) {
  const auto key = std::make_pair(static_cast<const void*>(c.matrix.get()), c.group);
  if (auto found = exchange_models_.find(key); found != exchange_models_.end()) return found->second;
  const auto& routes = group_routes(c.group);
  const auto& wire = schedule_for(c).wire;
  const int n = static_cast<int>(graph_.groups[c.group].size());
  const auto& matrix = *c.matrix;
  // The protocol's rate cap applies whole to each transfer: a position sends one a round.
  collectives::PairwiseExchange exchange(
      n, [&](int p, int q) { return matrix[static_cast<std::size_t>(p) * n + q] * wire.wire_factor; },
      [&](int p, int q) -> const collectives::ExchangePath& {
        return routes.paths[static_cast<std::size_t>(p) * n + q];
      },
      exchange_capacity_, wire.rate_cap);
  return exchange_models_.try_emplace(key, ExchangeModel{std::move(exchange), &routes}).first->second;
}

// SimGrid's network model scales every link's bandwidth by this (LV08: 0.97; CM02: 1).
double Replay::bandwidth_factor() const {
  return simgrid::config::get_value<double>("network/bandwidth-factor");
}

} // namespace dtsim::engine::detail
