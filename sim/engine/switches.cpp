// The switches of an in-switch reduction (NVLink SHARP, InfiniBand SHARP) as endpoints and actors.
#include "sim/engine/replay.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace dtsim::engine::detail {

// Endpoints are GPUs (0..G-1), then the nodes' NVSwitches, then the network switch: what a schedule's peer
// means for this rank.
int Replay::endpoint(int rank, const std::vector<int>& members, int peer) const {
  if (peer >= 0) return members[peer];
  const int gpus = static_cast<int>(platform_.gpus.size());
  if (peer == collectives::kNodeSwitch && !platform_.node_switches.empty()) return gpus + cluster_.node_of(rank);
  if (peer == collectives::kNetworkSwitch && platform_.network_switch)
    return gpus + static_cast<int>(platform_.node_switches.size());
  throw std::runtime_error("a collective reduces in a switch the cluster does not let reduce");
}

sg4::Host* Replay::host(int endpoint) const {
  const int gpus = static_cast<int>(platform_.gpus.size());
  if (endpoint < gpus) return platform_.gpus[endpoint];
  if (endpoint - gpus < static_cast<int>(platform_.node_switches.size()))
    return platform_.node_switches[endpoint - gpus];
  return platform_.network_switch;
}

// The switches of an in-switch collective are actors too: the first member to reach the collective in an
// iteration starts one per switch involved, which mirrors what the members send it and return to them.
void Replay::start_switches(const graph::Collective& c, const ScheduleEntry& entry, std::uint32_t it) {
  if (!switches_started_.insert({&c, it}).second) return;
  const auto& members = graph_.groups[c.group];
  std::map<int, std::vector<int>> by_node; // node -> positions
  for (std::size_t p = 0; p < members.size(); ++p)
    by_node[cluster_.node_of(members[p])].push_back(static_cast<int>(p));
  auto start = [&](int constant, int endpoint_id, std::vector<int> positions) {
    sg4::Actor::create(fmt::format("switch{}", endpoint_id), host(endpoint_id),
                       [this, &c, &entry, constant, endpoint_id, it, positions = std::move(positions)] {
                         switch_loop(c, *entry.schedule, constant, endpoint_id, positions, it);
                       });
  };
  if (!platform_.node_switches.empty())
    for (const auto& [node, positions] : by_node)
      start(collectives::kNodeSwitch, endpoint(members[positions.front()], members, collectives::kNodeSwitch),
            positions);
  if (platform_.network_switch && by_node.size() > 1) {
    std::vector<int> all(members.size());
    for (std::size_t p = 0; p < all.size(); ++p)
      all[p] = static_cast<int>(p);
    start(collectives::kNetworkSwitch, endpoint(members.front(), members, collectives::kNetworkSwitch), all);
  }
}

void Replay::switch_loop(const graph::Collective& c, const collectives::Schedule& schedule, int constant, int self,
                         const std::vector<int>& positions, std::uint32_t it) {
  const auto& members = graph_.groups[c.group];
  std::vector<sg4::CommPtr> comms;
  std::vector<const Pair*> from; // the path of each receive, first in comms
  char* received = nullptr;
  for (int k = 0; k < schedule.step_count(); ++k) {
    comms.clear();
    from.clear();
    for (int p : positions)
      for (const auto& t : schedule.step(p, k).sends)
        if (t.peer == constant) {
          from.push_back(&pair(members[p], self));
          comms.push_back(from.back()->mailbox->get_async(&received));
        }
    for (int p : positions)
      for (const auto& t : schedule.step(p, k).recvs)
        if (t.peer == constant) {
          const auto& out = pair(self, members[p]);
          const double wire = t.bytes * schedule_for(c).wire.wire_factor;
          comms.push_back(out.mailbox->put_async(&token_, flow_size(wire)));
          for (int link : out.links)
            ledger_.add(link, wire, it);
        }
    sg4::Comm::wait_all(comms);
    double visible = sg4::Engine::get_clock();
    for (std::size_t i = 0; i < from.size(); ++i)
      visible = std::max(visible, comms[i]->get_finish_time() + arrival_delay(*from[i]));
    sleep_until(visible);
  }
}
} // namespace dtsim::engine::detail
