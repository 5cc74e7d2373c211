// The replay: one actor per rank and stream, executing the rank's program in dependency order.
// Activities are created lazily (only the ready frontier exists), as SimGrid 3.32 needs for speed.
#include "sim/collectives/schedule.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/platform.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>
#include <xbt/log.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

XBT_LOG_NEW_DEFAULT_CATEGORY(dtsim_replay, "dtsim: replay of execution graphs");

namespace sg4 = simgrid::s4u;

namespace dtsim::engine {
namespace {

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
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
  int waiters = 0;
  std::vector<std::int64_t> done_iteration; // per op: last iteration it completed in (-1: none yet)
  std::uint64_t ops_done = 0;
  RankTimeline timeline;
  std::array<StreamStatus, graph::kStreamCount> status;
};

class Replay {
public:
  Replay(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph, const ReplayOptions& options)
      : cluster_(cluster), graph_(graph), options_(options) {}

  ReplayResult run() {
    configure_engine();
    platform_ = build_platform(cluster_);
    // The network model sets its latency factor when the platform creates it (LV08: 13.01, CM02: 1).
    latency_factor_ = simgrid::config::get_value<double>("network/latency-factor");
    link_bytes_.assign(platform_.links.size(), 0.0);
    if (static_cast<int>(platform_.gpus.size()) < graph_.rank_count())
      throw std::runtime_error(fmt::format("the graph has {} ranks but the cluster only {} GPUs", graph_.rank_count(),
                                           platform_.gpus.size()));
    index_programs();
    start_actors();
    engine_->run();
    if (options_.show_progress && progress_shown_) std::fputs("\r\033[K", stderr);
    if (finished_streams_ != started_streams_) throw DeadlockError(deadlock_report());
    return collect();
  }

private:
  void configure_engine() {
    int argc = 1;
    char name[] = "dtsim";
    char* argv[] = {name, nullptr};
    engine_ = std::make_unique<sg4::Engine>(&argc, argv);
    // SimGrid's own chatter (configuration changes, its deadlock dump) stays out of dtsim's output;
    // dtsim reports problems itself. DTSIM_SIMGRID_LOG=... restores it for debugging.
    if (const char* log = std::getenv("DTSIM_SIMGRID_LOG"))
      xbt_log_control_set(log);
    else
      xbt_log_control_set("root.thresh:critical root.app:file:/dev/null");
    sg4::Engine::set_config(std::string("network/model:") +
                            (options_.network_model == NetworkModel::cm02 ? "CM02" : "LV08"));
    sg4::Engine::set_config(std::string("network/crosstraffic:") + (options_.cross_traffic ? "1" : "0"));
    // GPU fabrics (NVLink, RDMA) are not window-limited TCP: lift CM02/LV08's TCP-gamma rate bound.
    sg4::Engine::set_config("network/TCP-gamma:1e18");
  }

  void index_programs() {
    stream_ops_.resize(graph_.programs.size());
    for (std::size_t p = 0; p < graph_.programs.size(); ++p)
      for (std::uint32_t i = 0; i < graph_.programs[p].ops.size(); ++i)
        stream_ops_[p][static_cast<int>(graph_.programs[p].ops[i].stream)].push_back(i);
    positions_.assign(graph_.groups.size(), std::vector<int>(graph_.rank_count(), -1));
    for (std::size_t g = 0; g < graph_.groups.size(); ++g)
      for (std::size_t i = 0; i < graph_.groups[g].size(); ++i)
        positions_[g][graph_.groups[g][i]] = static_cast<int>(i);
  }

  void start_actors() {
    ranks_.resize(graph_.rank_count());
    for (int r = 0; r < graph_.rank_count(); ++r) {
      auto& state = ranks_[r];
      const auto& program = graph_.program_of(r);
      state.done_iteration.assign(program.ops.size(), -1);
      state.timeline.bytes_sent.assign(options_.iterations, 0.0);
      if (program.ops.empty()) state.timeline.iteration_end.assign(options_.iterations, 0.0);
      for (int s = 0; s < graph::kStreamCount; ++s) {
        state.status[s].wait = StreamStatus::Wait::finished;
        if (stream_ops_[graph_.rank_program[r]][s].empty()) continue; // no actor for an idle stream
        state.status[s].wait = StreamStatus::Wait::running;
        ++started_streams_;
        sg4::Actor::create(fmt::format("rank{}-{}", r, graph::to_string(static_cast<graph::Stream>(s))),
                           platform_.gpus[r], [this, r, s] { stream_loop(r, s); });
      }
    }
  }

  void stream_loop(int rank, int stream) {
    auto& state = ranks_[rank];
    auto& status = state.status[stream];
    const auto& program = graph_.program_of(rank);
    const auto& ops = stream_ops_[graph_.rank_program[rank]][stream];
    const std::uint64_t per_iteration = program.ops.size();
    for (std::uint32_t it = 0; it < static_cast<std::uint32_t>(options_.iterations); ++it) {
      status.iteration = it;
      status.wait = StreamStatus::Wait::previous_iteration;
      wait_until(state, [&] { return state.ops_done >= it * per_iteration; });
      for (std::uint32_t index : ops) {
        const auto& op = program.ops[index];
        status.op = index;
        status.wait = StreamStatus::Wait::dependencies;
        wait_until(state, [&] {
          for (auto dep : op.deps)
            if (state.done_iteration[dep] < it) return false;
          return true;
        });
        status.wait = StreamStatus::Wait::running;
        const double start = sg4::Engine::get_clock();
        execute(rank, op, it, status);
        state.timeline.streams[stream].push_back({start, sg4::Engine::get_clock(), index, it});
        mark_done(state, index, it, per_iteration);
      }
    }
    status.wait = StreamStatus::Wait::finished;
    ++finished_streams_;
  }

  template <class Pred> void wait_until(RankState& state, Pred ready) {
    if (ready()) return;
    std::unique_lock lock(*state.mutex);
    ++state.waiters;
    while (!ready())
      state.cv->wait(lock);
    --state.waiters;
  }

  void mark_done(RankState& state, std::uint32_t op, std::uint32_t it, std::uint64_t per_iteration) {
    state.done_iteration[op] = it;
    if (++state.ops_done % per_iteration == 0) state.timeline.iteration_end.push_back(sg4::Engine::get_clock());
    if (state.waiters > 0) state.cv->notify_all();
  }

  void execute(int rank, const graph::Op& op, std::uint32_t it, StreamStatus& status) {
    if (const auto* compute = std::get_if<graph::Compute>(&op.body)) {
      sg4::this_actor::sleep_for(compute->seconds);
    } else if (const auto* collective = std::get_if<graph::Collective>(&op.body)) {
      run_collective(rank, *collective, it, status);
    } else if (const auto* p2p = std::get_if<graph::SendRecv>(&op.body)) {
      status.peer = p2p->peer;
      status.wait = StreamStatus::Wait::peer;
      if (p2p->send) {
        auto& out = pair(rank, p2p->peer);
        out.mailbox->put(&token_, flow_size(p2p->bytes));
        account(rank, out, p2p->bytes, it);
      } else {
        pair(p2p->peer, rank).mailbox->get<char>();
      }
    }
  }

  // Replays this rank's part of a collective: each step's transfers as concurrent flows, then the step's
  // GPU reduction, protocol overhead and (in aggregated schedules) the latency terms it stands for.
  void run_collective(int rank, const graph::Collective& c, std::uint32_t it, StreamStatus& status) {
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
  double aggregated_latency(int rank, const std::vector<int>& members, const collectives::Step& step,
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

  struct ScheduleEntry {
    std::shared_ptr<const collectives::Schedule> schedule;
    collectives::Algorithm algorithm = collectives::Algorithm::ring; // `automatic` resolved
  };

  // Schedules are shared by every member (they are functions of the position) and built once per op.
  const ScheduleEntry& schedule_for(const graph::Collective& c) {
    auto [entry, inserted] = schedules_.try_emplace(&c);
    if (inserted) {
      collectives::Request request;
      request.op = c.op;
      request.ranks = static_cast<int>(graph_.groups[c.group].size());
      request.bytes = c.bytes;
      request.root = c.root;
      request.matrix = c.matrix;
      request.node_switch_reduces = cluster_.nvswitch_reduces;
      request.network_switch_reduces = cluster_.switch_reduces;
      for (int member : graph_.groups[c.group])
        request.node_of.push_back(cluster_.node_of(member));
      request.algorithm =
          c.algorithm == collectives::Algorithm::automatic ? collectives::choose_algorithm(request) : c.algorithm;
      entry->second.algorithm = request.algorithm;
      entry->second.schedule = c.aggregate ? collectives::aggregate(request) : collectives::make_schedule(request);
    }
    return entry->second;
  }

  // Endpoints are GPUs (0..G-1), then the nodes' NVSwitches, then the network switch: what a schedule's peer
  // means for this rank.
  int endpoint(int rank, const std::vector<int>& members, int peer) const {
    if (peer >= 0) return members[peer];
    const int gpus = static_cast<int>(platform_.gpus.size());
    if (peer == collectives::kNodeSwitch && !platform_.node_switches.empty()) return gpus + cluster_.node_of(rank);
    if (peer == collectives::kNetworkSwitch && platform_.network_switch)
      return gpus + static_cast<int>(platform_.node_switches.size());
    throw std::runtime_error("a collective reduces in a switch the cluster does not let reduce");
  }

  sg4::Host* host(int endpoint) const {
    const int gpus = static_cast<int>(platform_.gpus.size());
    if (endpoint < gpus) return platform_.gpus[endpoint];
    if (endpoint - gpus < static_cast<int>(platform_.node_switches.size()))
      return platform_.node_switches[endpoint - gpus];
    return platform_.network_switch;
  }

  // The switches of an in-switch collective are actors too: the first member to reach the collective in an
  // iteration starts one per switch involved, which mirrors what the members send it and return to them.
  void start_switches(const graph::Collective& c, const ScheduleEntry& entry, std::uint32_t it) {
    if (!switches_started_.insert({&c, it}).second) return;
    const auto& members = graph_.groups[c.group];
    std::map<int, std::vector<int>> by_node; // node -> positions
    for (std::size_t p = 0; p < members.size(); ++p)
      by_node[cluster_.node_of(members[p])].push_back(static_cast<int>(p));
    auto start = [&](int constant, int endpoint_id, std::vector<int> positions) {
      sg4::Actor::create(fmt::format("switch{}", endpoint_id), host(endpoint_id),
                         [this, &c, &entry, constant, endpoint_id, positions = std::move(positions)] {
                           switch_loop(c, *entry.schedule, constant, endpoint_id, positions);
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

  void switch_loop(const graph::Collective& c, const collectives::Schedule& schedule, int constant, int self,
                   const std::vector<int>& positions) {
    const auto& members = graph_.groups[c.group];
    std::vector<sg4::CommPtr> comms;
    char* received = nullptr;
    for (int k = 0; k < schedule.step_count(); ++k) {
      comms.clear();
      for (int p : positions) {
        const auto step = schedule.step(p, k);
        for (const auto& t : step.sends)
          if (t.peer == constant) comms.push_back(pair(members[p], self).mailbox->get_async(&received));
        for (const auto& t : step.recvs)
          if (t.peer == constant) {
            const auto& out = pair(self, members[p]);
            comms.push_back(out.mailbox->put_async(&token_, flow_size(t.bytes)));
            for (int link : out.links)
              link_bytes_[link] += t.bytes;
          }
      }
      sg4::Comm::wait_all(comms);
    }
  }

  static std::uint64_t flow_size(double bytes) { return static_cast<std::uint64_t>(std::llround(bytes)); }

  // What two GPUs share: the mailbox of their messages (from -> to) and the route between them.
  struct Pair {
    sg4::Mailbox* mailbox = nullptr;
    std::vector<int> links; // tracked link halves of the route
    double latency = 0;     // sum of the route's link latencies, before the network model's factor
  };

  // Looked up once per ordered pair and cached. Mailbox::by_name is a simcall: other actors run meanwhile and
  // may ask for the same pair, so the entry is cached only once complete (both get the same mailbox).
  const Pair& pair(int from, int to) {
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
  void account(int from, const Pair& route, double bytes, std::uint32_t it) {
    if ((++transfers_ & 0xffff) == 0 && options_.show_progress) show_progress(it);
    ranks_[from].timeline.bytes_sent[it] += bytes;
    for (int link : route.links)
      link_bytes_[link] += bytes;
  }

  // At most twice a second of wall time: simulated time reached, iteration, flows so far.
  void show_progress(std::uint32_t iteration) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ < std::chrono::milliseconds(500)) return;
    last_progress_ = now;
    progress_shown_ = true;
    std::fprintf(stderr, "\rsimulating: iteration %u/%d, %.6f s simulated, %llu transfers", iteration + 1,
                 options_.iterations, sg4::Engine::get_clock(), static_cast<unsigned long long>(transfers_));
    std::fflush(stderr);
  }

  std::string deadlock_report() const {
    std::string report = "the replay stalled: no rank can make progress (the plan's communication does not match)";
    int shown = 0;
    for (int r = 0; r < graph_.rank_count() && shown < 16; ++r)
      for (int s = 0; s < graph::kStreamCount; ++s) {
        const auto& st = ranks_[r].status[s];
        if (st.wait == StreamStatus::Wait::finished) continue;
        ++shown;
        const auto& op = graph_.program_of(r).ops[st.op];
        report += fmt::format("\n  rank {} {} stream, iteration {}, op {} '{}': ", r,
                              graph::to_string(static_cast<graph::Stream>(s)), st.iteration, st.op, op.name);
        switch (st.wait) {
        case StreamStatus::Wait::dependencies:
          report += "waits for its dependencies";
          break;
        case StreamStatus::Wait::previous_iteration:
          report += "waits for the rank's previous iteration";
          break;
        case StreamStatus::Wait::peer:
          report += st.step >= 0 ? fmt::format("step {} waits on rank {}", st.step, st.peer)
                                 : fmt::format("waits on rank {}", st.peer);
          break;
        default:
          report += "was running";
          break;
        }
      }
    return report;
  }

  ReplayResult collect() {
    ReplayResult result;
    result.transfers = transfers_;
    for (auto& state : ranks_) {
      if (!state.timeline.iteration_end.empty())
        result.simulated_seconds = std::max(result.simulated_seconds, state.timeline.iteration_end.back());
      result.ranks.push_back(std::move(state.timeline));
    }
    for (std::size_t i = 0; i < platform_.links.size(); ++i) {
      const auto* link = platform_.links[i];
      result.links.push_back({link->get_name(), link->get_bandwidth(), link_bytes_[i]});
    }
    return result;
  }

  const topologies::ClusterSpec& cluster_;
  const graph::ExecutionGraph& graph_;
  ReplayOptions options_;
  std::unique_ptr<sg4::Engine> engine_;
  Platform platform_;
  std::vector<std::array<std::vector<std::uint32_t>, graph::kStreamCount>> stream_ops_; // per program
  std::vector<std::vector<int>> positions_; // per group: each rank's place in it (-1: not a member)
  std::vector<RankState> ranks_;
  std::unordered_map<std::uint64_t, Pair> pairs_;
  std::unordered_map<const graph::Collective*, ScheduleEntry> schedules_;
  std::set<std::pair<const graph::Collective*, std::uint32_t>> switches_started_; // (collective, iteration)
  double latency_factor_ = 1;      // the network model's latency factor (LV08: 13.01), for aggregated latency terms
  std::vector<double> link_bytes_; // per tracked link half
  std::uint64_t transfers_ = 0;
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
  bool progress_shown_ = false;
  int started_streams_ = 0;
  int finished_streams_ = 0;
  char token_ = 0; // the payload pointer of every message: only sizes are simulated
};

constexpr char kResultTag = 'R';
constexpr char kDeadlockTag = 'D';

} // namespace

ReplayResult replay_in_this_process(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                                    const ReplayOptions& options) {
  graph::validate(graph);
  return Replay(cluster, graph, options).run();
}

ReplayResult replay(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                    const ReplayOptions& options) {
  graph::validate(graph); // fail fast, in the parent, on a malformed plan
  const ChildJob job = [&]() -> std::string {
    try {
      return kResultTag + encode(Replay(cluster, graph, options).run());
    } catch (const DeadlockError& e) {
      return kDeadlockTag + std::string(e.what());
    }
  };
  auto outcome = run_in_children({job}, 1).front();
  if (!outcome.ok) throw std::runtime_error(outcome.output);
  if (outcome.output.empty() || outcome.output.front() != kResultTag) {
    if (!outcome.output.empty() && outcome.output.front() == kDeadlockTag)
      throw DeadlockError(outcome.output.substr(1));
    throw std::runtime_error("the simulation process returned no result");
  }
  return decode(outcome.output.substr(1));
}

} // namespace dtsim::engine
