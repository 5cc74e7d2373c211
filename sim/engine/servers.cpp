// Parameter servers: one actor per shard. It keeps a receive posted on every worker's push mailbox, takes the pushes
// in the order they arrive (their transfers share the server's NIC meanwhile), aggregates or applies each, and
// answers with the shard's parameters when its schedule allows (graph::ServerSchedule). Answers are detached sends:
// the server goes on with the next push while they flow.
//
// Staleness is measured where it arises. A worker's clock is the number of iterations it has pushed (its first key);
// when it reads (gets an answer), the slowest running worker's clock is some iterations behind its own: that lag is
// the staleness of the gradient it computes next (0 under BSP, at most s under SSP, Ho et al. 2013). The update lag
// is the number of updates the shard applied between that read and the gradient's own update (tau in Lian et al.
// 2015's analysis of asynchronous SGD).
#include "sim/engine/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

XBT_LOG_NEW_DEFAULT_CATEGORY(dtsim_servers, "dtsim: parameter servers");

namespace dtsim::engine::detail {

void Replay::start_services() {
  rank_servers_.assign(graph_.rank_count(), {});
  finish_messages_.assign(graph_.rank_count(), PushMessage{0, 0, 0, true});
  servers_.assign(graph_.servers.size(), ServerState{});
  bool pushes = false;
  std::vector<int> first_key(graph_.servers.size(), std::numeric_limits<int>::max());
  for (int r = 0; r < graph_.rank_count(); ++r) {
    for (const auto& op : graph_.program_of(r).ops) {
      pushes = pushes || std::holds_alternative<graph::Push>(op.body);
      if (const auto* p = std::get_if<graph::PushPull>(&op.body))
        for (const auto& shard : p->shards) {
          first_key[shard.server] = std::min(first_key[shard.server], p->key + shard.key);
          if (std::find(rank_servers_[r].begin(), rank_servers_[r].end(), shard.server) == rank_servers_[r].end())
            rank_servers_[r].push_back(shard.server);
        }
    }
    for (int s : rank_servers_[r])
      servers_[s].workers.push_back(r);
  }
  // Mailboxes are looked up here, once (Mailbox::by_name runs directly in maestro), not per message.
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    auto& state = servers_[s];
    state.push.assign(graph_.rank_count(), nullptr);
    state.pull.assign(graph_.rank_count(), nullptr);
    for (int r : state.workers) {
      state.push[r] = sg4::Mailbox::by_name(fmt::format("push{}>s{}", r, s));
      state.pull[r] = sg4::Mailbox::by_name(fmt::format("pull s{}>{}", s, r));
    }
  }
  if (pushes) {
    push_payloads_.resize(graph_.rank_count());
    for (int r = 0; r < graph_.rank_count(); ++r) {
      inboxes_.push_back(sg4::Mailbox::by_name(fmt::format("inbox{}", r)));
      reply_boxes_.push_back(sg4::Mailbox::by_name(fmt::format("reply{}", r)));
    }
  }
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    auto& state = servers_[s];
    const auto n = state.workers.size();
    state.running.assign(n, true);
    state.clock.assign(n, 0);
    state.read_lag.assign(n, 0);
    state.first_key = first_key[s];
    state.stats.endpoint = graph_.servers[s].endpoint;
    if (n == 0) continue;
    // Daemons: the simulation ends with the workers, whatever the services are waiting for.
    sg4::Actor::create(fmt::format("server{}", s), host(graph_.servers[s].endpoint), [this, s] {
      sg4::Actor::self()->daemonize();
      server_loop(static_cast<int>(s));
    });
  }
  if (pushes)
    for (int r = 0; r < graph_.rank_count(); ++r)
      sg4::Actor::create(fmt::format("rank{}-inbox", r), platform_.gpus[r], [this, r] {
        sg4::Actor::self()->daemonize();
        inbox_loop(r);
      });
}

void Replay::run_push_pull(int rank, const graph::PushPull& op, std::uint32_t it, StreamStatus& status) {
  status.wait = StreamStatus::Wait::peer;
  std::vector<PushMessage> messages;
  messages.reserve(op.shards.size());
  std::vector<sg4::CommPtr> comms;
  char* answer = nullptr;
  for (const auto& shard : op.shards) {
    status.peer = graph_.servers[shard.server].endpoint;
    messages.push_back({op.key + shard.key, shard.push_bytes, shard.pull_bytes, false});
    comms.push_back(start_put(servers_[shard.server].push[rank], &messages.back(), shard.push_bytes,
                              pair(rank, graph_.servers[shard.server].endpoint), channel_rate(shard.server)));
    comms.push_back(servers_[shard.server].pull[rank]->get_async(&answer));
  }
  sg4::Comm::wait_all(comms);
  double visible = sg4::Engine::get_clock();
  for (std::size_t i = 0; i < op.shards.size(); ++i)
    visible = std::max(visible, comms[2 * i + 1]->get_finish_time() +
                                    arrival_delay(pair(graph_.servers[op.shards[i].server].endpoint, rank)));
  sleep_until(visible);
  for (const auto& shard : op.shards) {
    account(rank, pair(rank, graph_.servers[shard.server].endpoint), shard.push_bytes, shard.push_bytes, it);
    servers_[shard.server].stats.bytes_received += shard.push_bytes;
    ranks_[rank].timeline.bytes_received += shard.pull_bytes;
  }
}

// Tells every server this worker used that it is done, so rounds stop waiting for it (a message of no bytes, after
// the worker's last iteration has ended). Not detached: the simulation must not end with it in flight.
void Replay::finish_with_servers(int rank) {
  for (int s : rank_servers_[rank])
    servers_[s].push[rank]->put(&finish_messages_[rank], 0);
}

void Replay::server_loop(int s) {
  auto& state = servers_[s];
  const int n = static_cast<int>(state.workers.size());
  std::vector<int> listening(n); // worker positions with a receive posted
  std::vector<sg4::CommPtr> receives(n);
  std::vector<PushMessage*> received(n, nullptr);
  for (int i = 0; i < n; ++i) {
    listening[i] = i;
    receives[i] = state.push[state.workers[i]]->get_async(&received[i]);
  }
  while (!receives.empty()) {
    const auto k = static_cast<std::size_t>(sg4::Comm::wait_any(receives));
    const int worker = listening[k];
    const PushMessage message = *received[worker];
    sleep_until(receives[k]->get_finish_time() +
                arrival_delay(pair(state.workers[worker], graph_.servers[s].endpoint)));
    if (message.finished) {
      state.running[worker] = false;
      receives.erase(receives.begin() + static_cast<std::ptrdiff_t>(k));
      listening.erase(listening.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      receives[k] = state.push[state.workers[worker]]->get_async(&received[worker]);
      server_push(s, worker, message);
    }
    close_rounds(s);
    release_held(s);
  }
}

std::int64_t Replay::slowest_clock(const ServerState& state) const {
  std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < state.clock.size(); ++i)
    if (state.running[i]) slowest = std::min(slowest, state.clock[i]);
  return slowest == std::numeric_limits<std::int64_t>::max() ? 0 : slowest;
}

void Replay::server_push(int s, int worker, const PushMessage& message) {
  auto& state = servers_[s];
  const auto& spec = graph_.servers[s];
  auto& key = state.keys[message.key];
  key.read_version.resize(state.workers.size(), 0);
  key.pull_bytes = message.pull_bytes;
  ++state.stats.pushes;
  const bool first = message.key == state.first_key;
  if (first) ++state.clock[worker];
  if (spec.schedule == graph::ServerSchedule::synchronous) {
    // A gradient computed on parameters older than the current ones belongs to a round closed without it (backup
    // workers): dropped, and answered at once with the current parameters.
    if (spec.backup > 0 && key.read_version[worker] < key.version) {
      if (s == 0 && first) ++state.stats.dropped; // one count per gradient, not per shard and bucket
      answer(s, worker, message.key);
      return;
    }
    sg4::this_actor::sleep_for(message.push_bytes * spec.aggregate_seconds_per_byte);
    key.pending.push_back(worker);
    return;
  }
  sg4::this_actor::sleep_for(message.pull_bytes * spec.update_seconds_per_byte);
  if (first) record_update(s, worker, key);
  ++key.version;
  if (spec.schedule == graph::ServerSchedule::bounded && state.clock[worker] - slowest_clock(state) > spec.staleness)
    state.held.emplace_back(worker, message.key);
  else
    answer(s, worker, message.key);
}

// Synchronous rounds close once (pushers - backup) gradients are in, or every worker still running has pushed.
void Replay::close_rounds(int s) {
  auto& state = servers_[s];
  const auto& spec = graph_.servers[s];
  if (spec.schedule != graph::ServerSchedule::synchronous) return;
  const int running = static_cast<int>(std::count(state.running.begin(), state.running.end(), true));
  const int needed = std::max(1, std::min(static_cast<int>(state.workers.size()) - spec.backup, running));
  for (auto& [id, key] : state.keys) {
    if (static_cast<int>(key.pending.size()) < needed) continue;
    sg4::this_actor::sleep_for(key.pull_bytes * spec.update_seconds_per_byte);
    if (id == state.first_key) {
      for (int worker : key.pending)
        record_update(s, worker, key);
      state.stats.round_ends.push_back(sg4::Engine::get_clock());
    }
    ++key.version;
    const auto pending = std::move(key.pending);
    key.pending.clear();
    for (int worker : pending)
      answer(s, worker, id);
  }
}

void Replay::release_held(int s) {
  auto& state = servers_[s];
  const auto& spec = graph_.servers[s];
  auto& held = state.held;
  for (std::size_t i = 0; i < held.size();) {
    const auto [worker, key] = held[i];
    if (state.clock[worker] - slowest_clock(state) <= spec.staleness) {
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      answer(s, worker, key);
    } else {
      ++i;
    }
  }
}

void Replay::record_update(int s, int worker, const ServerKey& key) {
  if (s != 0) return; // every shard sees the same gradients; the first one's record stands for them
  auto& state = servers_[s];
  // A synchronous round applies only gradients computed on its own version: none is stale, whatever the lead of the
  // workers over a straggler whose late gradients are dropped.
  const bool synchronous = graph_.servers[s].schedule == graph::ServerSchedule::synchronous;
  state.stats.updates.push_back({sg4::Engine::get_clock(), state.workers[worker],
                                 synchronous ? 0 : state.read_lag[worker],
                                 static_cast<int>(key.version - key.read_version[worker])});
}

// The worker reads the shard: the version it gets, and how far the slowest running worker is behind it.
void Replay::answer(int s, int worker, int key_id) {
  auto& state = servers_[s];
  auto& key = state.keys[key_id];
  key.read_version[worker] = key.version;
  if (key_id == state.first_key) state.read_lag[worker] = static_cast<int>(state.clock[worker] - slowest_clock(state));
  const int rank = state.workers[worker];
  put_init(state.pull[rank], &token_, key.pull_bytes, pair(graph_.servers[s].endpoint, rank), channel_rate(s))
      ->detach();
  state.stats.bytes_sent += key.pull_bytes;
  account_links(pair(graph_.servers[s].endpoint, rank), key.pull_bytes, 0); // never skipped: no per-iteration count
}

} // namespace dtsim::engine::detail
