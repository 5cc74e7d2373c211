#pragma once
// Engine-private: the replay of an execution graph on SimGrid, one actor per rank and stream. Its parts:
// replay.cpp (actors, streams, results), collective_replay.cpp (collectives as flows), switches.cpp (the
// switches of in-switch reductions). What watches it is apart (replay_observers.hpp: the link ledger, the link-load
// samples, the progress line; steady_state.hpp: iterations that repeat), told of what happens as it happens.
#include "sim/collectives/nccl.hpp"
#include "sim/collectives/pairwise_exchange.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/platform.hpp"
#include "sim/engine/replay_observers.hpp"
#include "sim/engine/steady_state.hpp"

#include <simgrid/s4u.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace dtsim::engine::detail {

namespace sg4 = simgrid::s4u;

// What a stream actor is doing; read when the replay stalls, to say who waited on what.
struct StreamStatus {
  enum class Wait : std::uint8_t { running, dependencies, previous_iteration, peer, finished };
  Wait wait = Wait::running;
  std::uint32_t op = 0;
  std::uint32_t iteration = 0;
  int step = -1;
  int peer = -1;
};

struct RankState {
  sg4::MutexPtr mutex = sg4::Mutex::create();
  // Each stream waits on a condition of its own, for one thing: an op of this iteration (awaited_op) or the rank's
  // count of completed ops (awaited_count); mark_done wakes only the stream whose wait it ends.
  struct StreamWait {
    sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
    std::int64_t awaited_op = -1;
    std::uint64_t awaited_count = 0;
    bool waiting = false;
  };
  std::array<StreamWait, graph::kStreamCount> waits;
  std::vector<std::int64_t> done_iteration; // per op: last iteration it completed in (-1: none yet)
  std::uint64_t ops_done = 0;
  RankTimeline timeline;
  std::array<StreamStatus, graph::kStreamCount> status;
  // What the collectives in flight take from the GPU (contention.cpp): the share of its SMs their NCCL channels hold
  // and the share of its memory bandwidth their copies and reductions use; a signal when either changes.
  double sms_held = 0;
  double hbm_held = 0;
  double kernel_math_share = 1;         // of the running kernel's time, the part its math sets (the rest: memory)
  double work_lost = 0, lost_since = 0; // kernel seconds the collectives took, up to lost_since
  bool kernel_waits = false;            // a kernel waits on sms_changed
  sg4::ConditionVariablePtr sms_changed = sg4::ConditionVariable::create();
  // The running kernel's speed against the whole GPU's: its math on the SMs left, its memory traffic in the bandwidth
  // left, one after the other: 1 / (m / (1 - s) + (1 - m) / (1 - h)).
  double kernel_rate() const;
  double lost_until_now() const;
};

// Of a compute op's time, the part its math sets (graph::Compute::math_seconds; 1 for work the kernel model did not
// price): how much of it the SMs a collective holds slow, the rest being what its memory traffic does.
double math_share(const graph::Compute& compute);

class Replay {
public:
  Replay(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph, const ReplayOptions& options)
      : cluster_(cluster), graph_(graph), options_(options), progress_(options.show_progress, options.iterations) {}

  ReplayResult run();

private:
  void configure_engine();
  void index_programs();
  void start_actors();
  void start_services(); // parameter servers and gossip inboxes, when the graph has them
  void stream_loop(int rank, int stream);

  // Waits until the rank has completed `count` ops in all.
  void wait_for_count(RankState& state, int stream, std::uint64_t count);
  // Waits until every op of `deps` has completed iteration `it`.
  void wait_for_deps(RankState& state, int stream, const std::vector<std::uint32_t>& deps, std::uint32_t it);

  void mark_done(RankState& state, std::uint32_t op, std::uint32_t it, std::uint64_t per_iteration);
  // Returns when the op's stream started being busy with it: its start, except for a receive that waited for its
  // sender (a pipeline stage waiting for its neighbour is idle, not communicating: the bubble).
  double execute(int rank, const graph::Op& op, std::uint32_t it, StreamStatus& status);
  double send_recv(int rank, const graph::SendRecv& op, graph::Stream stream, std::uint32_t it, StreamStatus& status);
  sg4::Mailbox* p2p_mailbox(int from, int to, graph::Stream stream);
  std::uint64_t channel_key(int from, int to, graph::Stream stream) const {
    return graph::p2p_channel(from, to, stream, graph_.rank_count());
  }

  // Replays this rank's part of a collective: each step's transfers as concurrent flows, then the step's
  // GPU reduction, protocol overhead and (in aggregated schedules) the latency terms it stands for.
  // Returns when the stream started being busy with it: when the group's last member posted it (before that the
  // rank waits for its peers, as a receive waits for its sender).
  double run_collective(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status);
  // All-to-all-v in aggregate and coarse fidelity (timed_all_to_all.cpp): the pairwise exchange timed from its
  // links' loads and its rounds' chain, its bytes booked on its routes' links, no flows.
  double run_timed_all_to_all(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status);
  struct GroupRoutes {
    std::vector<collectives::ExchangePath> paths; // per (position, position): links as exchange_links_ numbers them
    std::vector<std::vector<int>> tracked;        // per (position, position): its tracked link halves
  };
  struct ExchangeModel {
    collectives::PairwiseExchange exchange;
    const GroupRoutes* routes = nullptr;
  };
  const GroupRoutes& group_routes(int group);
  const ExchangeModel& exchange_model(const graph::Collective& c);
  double bandwidth_factor() const;
  // GPUs whose SMs compute and NCCL's channels share (their SM count is known): compute runs as work on the GPU's
  // host, collectives hold their channels' SMs and a share of the memory bandwidth (contention.cpp).
  // A kernel of `seconds` on the whole GPU, at the rate what the rank's collectives take leaves it.
  void run_kernel(RankState& state, double seconds, double math_share);
  void hold(RankState& state, double sms, double hbm);
  // The share of a GPU's memory bandwidth a collective of the group takes while it runs (0 where not known).
  double hbm_share(int group, collectives::Algorithm algorithm);
  std::unordered_map<int, double> port_rates_; // per group: bytes/s a member's port carries (hbm_share)
  bool sms_shared() const { return cluster_.compute_capability > 0 && cluster_.compute_units > 0; }
  // One lane of a collective (Schedule::lanes(); the whole schedule when it has none) as this rank runs it.
  // `lanes`: how many run side by side (they share the protocol's rate cap).
  void run_lane(int rank, const graph::Collective& c, const collectives::Schedule& schedule, int lane,
                std::size_t lanes, std::uint32_t it, StreamStatus& status);
  // A lane's messages between two endpoints have a mailbox of their own (lane 0 the pair's).
  sg4::Mailbox* mailbox(int from, int to, int lane);
  // On GPUs, messages to `to` flow before it asks for them (NCCL's open FIFO): its first actor receives for it.
  void make_eager(sg4::Mailbox* box, int to);

  // Point-to-point ops beyond SendRecv (p2p.cpp): concurrent transfers with neighbours, and one-sided pushes into a
  // peer's inbox (an actor per rank that takes whatever comes and answers when asked).
  void run_exchange(int rank, const graph::Exchange& op, std::uint32_t it, StreamStatus& status);
  void run_push(int rank, const graph::Push& op, std::uint32_t it, StreamStatus& status);
  void inbox_loop(int rank);

  // Parameter servers (servers.cpp): an actor per shard takes every worker's pushes as they arrive and answers each
  // when its schedule allows.
  struct PushMessage {
    int key = 0;
    double push_bytes = 0;
    double pull_bytes = 0;
    bool finished = false; // the worker is done: rounds no longer wait for it
  };
  struct ServerKey {
    std::uint64_t version = 0;               // updates applied
    std::vector<int> pending;                // synchronous: workers (positions) in the open round
    std::vector<std::uint64_t> read_version; // per worker: the version its last answer carried
    double pull_bytes = 0;
  };
  struct ServerState {
    std::vector<int> workers;        // ranks that push to it
    std::vector<sg4::Mailbox*> push; // per rank: its pushes to this shard (looked up once, before the replay)
    std::vector<sg4::Mailbox*> pull; // per rank: this shard's answers to it
    std::vector<bool> running;       // per worker position
    std::vector<std::int64_t> clock; // per worker: iterations pushed (first key)
    std::vector<int> read_lag;       // per worker: the slowest's lag when it last read (first key)
    int first_key = 0; // the smallest key pushed to it: one push of it a worker's iteration (partitions spread keys)
    std::map<int, ServerKey> keys;
    std::vector<std::pair<int, int>> held; // bounded: (worker, key) answers waiting for the slowest
    ServerStats stats;
  };
  void run_push_pull(int rank, const graph::PushPull& op, std::uint32_t it, StreamStatus& status);
  static bool overlapped(const graph::Op& op);
  void run_overlapped(int rank, int stream, std::uint32_t index, std::uint32_t it, std::uint64_t per_iteration);
  void finish_with_servers(int rank);
  void server_loop(int server);
  void server_push(int server, int worker, const PushMessage& message);
  void close_rounds(int server);
  void release_held(int server);
  void answer(int server, int worker, int key);
  // The cap on a message between a worker and the server (graph::Server::channel_rate), as put_init takes it.
  double channel_rate(int server) const {
    const double rate = graph_.servers[static_cast<std::size_t>(server)].channel_rate;
    return rate > 0 ? rate : -1;
  }
  void record_update(int server, int worker, const ServerKey& key);
  std::int64_t slowest_clock(const ServerState& state) const;

  struct ScheduleEntry {
    std::shared_ptr<const collectives::Schedule> schedule;
    collectives::Algorithm algorithm = collectives::Algorithm::ring; // `automatic` resolved
    collectives::WireModel wire;                                     // its protocol's bytes, rate and latencies
  };

  // Schedules are shared by every member (they are functions of the position) and by the ops of one call.
  const ScheduleEntry& schedule_for(const graph::Collective& c);

  // Endpoints are GPUs (0..G-1), then the nodes' NVSwitches, then the network switch: what a schedule's peer
  // means for this rank.
  int endpoint(int rank, const std::vector<int>& members, int peer) const;

  sg4::Host* host(int endpoint) const;

  // The switches of an in-switch collective are actors too: the first member to reach the collective in an
  // iteration starts one per switch involved, which mirrors what the members send it and return to them.
  void start_switches(const graph::Collective& c, const ScheduleEntry& entry, std::uint32_t it);

  void switch_loop(const graph::Collective& c, const collectives::Schedule& schedule, int constant, int self,
                   const std::vector<int>& positions, std::uint32_t it);

  static std::uint64_t flow_size(double bytes) { return static_cast<std::uint64_t>(std::llround(bytes)); }

  // What two GPUs share: the mailbox of their messages (from -> to) and the route between them.
  struct Pair {
    sg4::Mailbox* mailbox = nullptr;
    std::vector<int> links; // tracked link halves of the route
    double latency = 0;     // sum of the route's link latencies, before the network model's factor
    collectives::LinkClass link = collectives::LinkClass::nvlink;
    double connection_cap = 0; // bytes/s a connection over this path carries at most (TCP's streams); 0: none
  };
  // A message over `route`, created (and started): its rate capped at `rate` (when > 0) and at the route's
  // connection cap (TCP's streams). Detach what put_init() makes, or start it.
  // `connections`: how many of the route's connections the flow stands for (a lane carries its share of a call's
  // channels, and NCCL opens a connection per channel), each under the cap.
  sg4::CommPtr put_init(sg4::Mailbox* box, void* payload, double bytes, const Pair& route, double rate = -1,
                        double connections = 1);
  sg4::CommPtr start_put(sg4::Mailbox* box, void* payload, double bytes, const Pair& route, double rate = -1,
                         double connections = 1);
  collectives::LinkClass link_class(int from, int to) const;
  void sleep_until(double time);
  // What a message's receiver waits beyond its last byte: on GPU clusters the path's latency, which SimGrid does not
  // apply to them (explicit_latency_), elsewhere nothing.
  double arrival_delay(const Pair& path) const;

  // One latency term of a step over this path: the path's latency, or NCCL's per-step latency for its link class
  // when that is more.
  double term_cost(const Pair& path, const collectives::WireModel& wire) const;
  // The latency terms an aggregated step stands for beyond the one its flows paid: each merged step's term when the
  // schedule names its peers, else the step's own term again for each extra one.
  double aggregated_latency(int rank, const std::vector<int>& members, const collectives::Step& step,
                            const collectives::WireModel& wire, const Pair& term);

  // Looked up once per ordered pair and cached. Mailbox::by_name is a simcall: other actors run meanwhile and
  // may ask for the same pair, so the entry is cached only once complete (both get the same mailbox).
  const Pair& pair(int from, int to);

  // A transfer from rank `from` told to the observers: bytes per rank (the data it sent) and per link (what crossed
  // it: the data and the protocol's flags).
  void account(int from, const Pair& route, double bytes, double wire_bytes, std::uint32_t it);
  void account_links(const Pair& route, double bytes, std::uint32_t it);
  // One more transfer counted (and every 65,536 the progress line told).
  void count_transfer(std::uint32_t it) {
    if (const auto n = ledger_.count_transfer(it); (n & 0xffff) == 0) progress_.on_transfers(it, n);
  }

  std::string deadlock_report() const;
  ReplayResult collect();

  const topologies::ClusterSpec& cluster_;
  const graph::ExecutionGraph& graph_;
  ReplayOptions options_;
  std::unique_ptr<sg4::Engine> engine_;
  Platform platform_;
  std::vector<std::array<std::vector<std::uint32_t>, graph::kStreamCount>> stream_ops_; // per program
  std::vector<std::vector<int>> positions_; // per group: each rank's place in it (-1: not a member)
  std::vector<RankState> ranks_;
  std::vector<sg4::ActorPtr> rank_actors_; // per rank: its first stream actor (null: it runs nothing)
  std::unordered_map<std::uint64_t, Pair> pairs_;
  std::map<std::tuple<int, int, int>, sg4::Mailbox*> lane_boxes_; // (from, to, lane > 0)
  using CollectiveKey =
      std::tuple<collectives::Operation, collectives::Algorithm, collectives::Protocol, int, double, int, bool, double,
                 double, const void*>; // what a Collective describes, its matrix by address
  std::map<CollectiveKey, ScheduleEntry> shared_schedules_;
  std::unordered_map<const graph::Collective*, const ScheduleEntry*> schedules_;  // per op: its call's entry
  std::set<std::pair<const graph::Collective*, std::uint32_t>> switches_started_; // (collective, iteration)
  double latency_factor_ = 1; // the network model's latency factor (LV08: 13.01), for the latency terms dtsim applies
  // GPU clusters: SimGrid carries bytes without latency and the receivers apply it (arrival_delay()), so that a
  // connection's consecutive messages pipeline their latency as on real links (NCCL's FIFO keeps 8 in flight) while
  // their bytes leave in order.
  bool explicit_latency_ = false;
  // The observers (replay_observers.hpp, steady_state.hpp), told of what happens.
  LinkLedger ledger_;
  LinkSampler sampler_; // with options_.sample_links
  ReplayProgress progress_;
  SteadyState steady_{graph_, options_, ledger_, ranks_};
  int started_streams_ = 0;
  int finished_streams_ = 0;
  char token_ = 0; // the payload pointer of every message: only sizes are simulated
  std::vector<ServerState> servers_;
  std::vector<std::vector<int>> rank_servers_; // per rank: the servers its PushPull ops address
  std::vector<PushMessage> finish_messages_;   // per rank
  // Gossip and AD-PSGD: per rank, its inbox and the mailbox its peers' answers come to, and the payload of its pushes
  // (who pushed, and how much the peer answers with).
  struct PushPayload {
    int from = 0;
    double reply_bytes = 0;
  };
  std::vector<sg4::Mailbox*> inboxes_;
  std::vector<sg4::Mailbox*> reply_boxes_;
  std::vector<PushPayload> push_payloads_;
  // Point-to-point sends: per ordered pair (from * G + to), the times of the sends posted and not yet received.
  std::unordered_map<std::uint64_t, std::deque<double>> posted_sends_;
  // The k-th collective a member posts on a group is the group's k-th call (as NCCL's communicators order them):
  // per rank and group how many it posted, and per (group, call) when members posted it.
  struct Arrivals {
    int posted = 0, finished = 0;
    double last = 0;
    sg4::BarrierPtr barrier;           // a timed all-to-all's members wait for each other
    std::vector<double> start, finish; // and then finish when the model says, from when each posted it
  };
  std::vector<std::unordered_map<int, std::uint64_t>> calls_posted_;
  std::map<std::pair<int, std::uint64_t>, Arrivals> arrivals_;
  std::unordered_map<std::uint64_t, sg4::Mailbox*> p2p_boxes_;
  std::map<int, GroupRoutes> group_routes_;
  std::map<std::pair<const void*, int>, ExchangeModel> exchange_models_; // per (matrix, group)
  std::unordered_map<const sg4::Link*, int> exchange_links_;             // every shared link a timed exchange uses
  std::vector<double> exchange_capacity_;                                // their bytes/s
};

} // namespace dtsim::engine::detail
