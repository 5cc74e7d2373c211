// Point-to-point ops beyond SendRecv: D-PSGD's concurrent exchanges with neighbours, and the one-sided pushes of
// gossip and AD-PSGD into a peer's inbox. An inbox is a mailbox with a permanent receiver (the peer's inbox actor),
// so a push flows as soon as it is posted whatever the peer is doing, as MPI's eager messages and TCP do.
#include "sim/engine/replay.hpp"

#include <fmt/format.h>

XBT_LOG_NEW_DEFAULT_CATEGORY(dtsim_p2p, "dtsim: exchanges and gossip pushes");

namespace dtsim::engine::detail {

void Replay::run_exchange(int rank, const graph::Exchange& op, std::uint32_t it, StreamStatus& status) {
  status.wait = StreamStatus::Wait::peer;
  std::vector<sg4::CommPtr> comms;
  char* received = nullptr;
  for (const auto& t : op.transfers) {
    status.peer = t.peer;
    if (t.send)
      comms.push_back(start_put(pair(rank, t.peer).mailbox, &token_, t.bytes, pair(rank, t.peer)));
    else
      comms.push_back(pair(t.peer, rank).mailbox->get_async(&received));
  }
  sg4::Comm::wait_all(comms);
  double visible = sg4::Engine::get_clock();
  for (std::size_t i = 0; i < op.transfers.size(); ++i)
    if (!op.transfers[i].send)
      visible = std::max(visible, comms[i]->get_finish_time() + arrival_delay(pair(op.transfers[i].peer, rank)));
  sleep_until(visible);
  for (const auto& t : op.transfers)
    if (t.send)
      account(rank, pair(rank, t.peer), t.bytes, t.bytes, it);
    else
      ranks_[rank].timeline.bytes_received += t.bytes;
}

void Replay::run_push(int rank, const graph::Push& op, std::uint32_t it, StreamStatus& status) {
  if (op.peers.empty()) return;
  const int peer = op.peers[it % op.peers.size()];
  if (peer < 0) return; // no push this iteration (gossip's coin said no)
  status.wait = StreamStatus::Wait::peer;
  status.peer = peer;
  // The payload says who pushed and what to answer with. The slot is the rank's own, rewritten with the same
  // values by its later pushes (a rank's pushes all come from its one Push op), so the inbox may read it late.
  auto& payload = push_payloads_[rank];
  payload = {rank, op.reply_bytes};
  start_put(inboxes_[peer], &payload, op.bytes, pair(rank, peer))->wait();
  account(rank, pair(rank, peer), op.bytes, op.bytes, it);
  ranks_[peer].timeline.bytes_received += op.bytes;
  ++ranks_[rank].timeline.pushes_sent;
  if (op.reply_bytes > 0) {
    char* reply = nullptr;
    const auto comm = reply_boxes_[rank]->get_async(&reply);
    comm->wait();
    sleep_until(comm->get_finish_time() + arrival_delay(pair(peer, rank)));
    ranks_[rank].timeline.bytes_received += op.reply_bytes;
  }
}

// Takes every push into this rank's model (the averaging itself is a few vector ops, not modeled) and answers those
// that ask for the rank's model back.
void Replay::inbox_loop(int rank) {
  auto* box = inboxes_[rank];
  box->set_receiver(sg4::Actor::self());
  for (;;) {
    PushPayload* payload = nullptr;
    const auto comm = box->get_async(&payload);
    comm->wait();
    const auto [from, reply] = *payload;
    sleep_until(comm->get_finish_time() + arrival_delay(pair(from, rank)));
    auto& timeline = ranks_[rank].timeline;
    ++timeline.pushes_received;
    if (reply > 0) {
      put_init(reply_boxes_[from], &token_, reply, pair(rank, from))->detach();
      const auto it = std::min<std::size_t>(timeline.bytes_sent.size() - 1, timeline.iteration_end.size());
      timeline.bytes_sent[it] += reply;
      account_links(pair(rank, from), reply, static_cast<std::uint32_t>(it));
    }
  }
}

} // namespace dtsim::engine::detail
