// The replay: one actor per rank and stream, executing the rank's program in dependency order.
// Activities are created lazily (only the ready frontier exists), as SimGrid 3.32 needs for speed.
#include "sim/engine/replay.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/footprint.hpp"

#include <fmt/format.h>
#include <simgrid/plugins/load.h>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <malloc.h>
#include <map>
#include <set>
#include <unordered_map>

XBT_LOG_NEW_DEFAULT_CATEGORY(dtsim_replay, "dtsim: replay of execution graphs");

namespace dtsim::engine {
namespace detail {

ReplayResult Replay::run() {
  configure_engine();
  if (options_.sample_links) sg_link_load_plugin_init(); // before the links exist: it attaches to each as created
  platform_ = build_platform(cluster_, graph_.nic_share);
  // The network model sets its latency factor when the platform creates it (LV08: 13.01, CM02: 1).
  latency_factor_ = simgrid::config::get_value<double>("network/latency-factor");
  explicit_latency_ = cluster_.compute_capability > 0;
  if (explicit_latency_) sg4::Engine::set_config("network/latency-factor:0");
  ledger_.open(platform_.links.size());
  if (options_.sample_links) sampler_.start(platform_.links);
  if (static_cast<int>(platform_.gpus.size()) < graph_.rank_count())
    throw std::runtime_error(
        fmt::format("the graph has {} ranks but the cluster only {} GPUs", graph_.rank_count(), platform_.gpus.size()));
  index_programs();
  steady_.look_for();
  start_actors();
  start_services();
  engine_->run();
  if (options_.sample_links) sampler_.sample(true);
  progress_.finish();
  // Once the steady state is found, the streams stop where they are and those waiting on one another stay blocked:
  // the engine returns as on a deadlock, and what they did after the last replayed iteration is dropped.
  if (finished_streams_ != started_streams_ && !steady_.stopped()) throw DeadlockError(deadlock_report());
  auto result = collect();
  steady_.extend(result);
  return result;
}

void Replay::configure_engine() {
  char name[] = "dtsim";
#ifdef __SANITIZE_ADDRESS__
  // AddressSanitizer cannot follow SimGrid's own context switches (Debian's SimGrid is built without its fiber
  // annotations): it takes an actor's stack for heap and reports overflows that are none. SimGrid's thread factory
  // gives each actor a real thread, which it understands; slower, and only the sanitizer build's small replays use
  // it. The factory is chosen as the engine starts, so it goes on its command line.
  char factory[] = "--cfg=contexts/factory:thread";
  char quiet[] = "--log=xbt_cfg.thresh:warning"; // else SimGrid announces the change on stderr
  int argc = 3;
  char* argv[] = {name, quiet, factory, nullptr};
#else
  int argc = 1;
  char* argv[] = {name, nullptr};
#endif
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
  // No guard page under each actor's stack: every guard is a separate memory mapping, and the kernel's limit on
  // mappings (vm.max_map_count, 65,530 by default) then caps a replay at about 32,000 actors (16,384 single-GPU nodes
  // aborted). SimGrid's "Configuring SimGrid" page advises this when actors are many, with stacks left large, as
  // they are here (the default 8 MiB). Without guards SimGrid takes stacks from malloc, and glibc raises its mmap
  // threshold past 8 MiB once such a block is freed: later stacks then come from the heap, whose pages stay
  // resident after the actor ends (Mixtral's expert all-to-alls, an actor per lane per call, grew to 2.2 GB). A fixed
  // threshold keeps every stack a mapping of its own, touched only as deep as it is used and returned when freed
  // (the same replay: 145 MB).
#ifndef __SANITIZE_ADDRESS__ // the sanitizer build runs actors as threads instead (above)
  sg4::Engine::set_config("contexts/guard-size:0");
  ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  // Each actor's stack reserves its size in address space, touched or not: under an address-space limit (ulimit -v)
  // 512 ranks' streams at 8 MiB each pass 4 GiB and SimGrid aborts. There, stacks share half the limit among the
  // actors the streams need (one per stream of each rank), between 256 KiB (replay's deepest calls use tens) and 8 MiB.
  if (const double space = address_space_limit(); space > 0) {
    const double actors = static_cast<double>(graph_.rank_count()) * graph::kStreamCount;
    const double stack = std::clamp(space / 2 / std::max(1.0, actors), 256.0 * 1024, 8.0 * 1024 * 1024);
    sg4::Engine::set_config(fmt::format("contexts/stack-size:{}", static_cast<long>(stack / 1024)));
  }
#endif
}

void Replay::index_programs() {
  stream_ops_.resize(graph_.programs.size());
  for (std::size_t p = 0; p < graph_.programs.size(); ++p)
    for (std::uint32_t i = 0; i < graph_.programs[p].ops.size(); ++i) {
      const auto& op = graph_.programs[p].ops[i];
      stream_ops_[p][static_cast<int>(op.stream)].push_back(i);
      // Every schedule is built here, before any actor runs: a collective the algorithm cannot do is reported
      // as an error of the plan, not thrown inside an actor (which SimGrid turns into an abort).
      if (const auto* c = std::get_if<graph::Collective>(&op.body)) schedule_for(*c);
    }
  positions_.assign(graph_.groups.size(), std::vector<int>(graph_.rank_count(), -1));
  for (std::size_t g = 0; g < graph_.groups.size(); ++g)
    for (std::size_t i = 0; i < graph_.groups[g].size(); ++i)
      positions_[g][graph_.groups[g][i]] = static_cast<int>(i);
}

void Replay::start_actors() {
  ranks_.resize(graph_.rank_count());
  calls_posted_.assign(graph_.rank_count(), {});
  rank_actors_.resize(graph_.rank_count());
  for (int r = 0; r < graph_.rank_count(); ++r) {
    auto& state = ranks_[r];
    const auto& program = graph_.program_of(r);
    state.done_iteration.assign(program.ops.size(), -1);
    state.timeline.bytes_sent.assign(options_.iterations, 0.0);
    if (program.ops.empty()) {
      state.timeline.simulated = false;
      state.timeline.iteration_end.assign(options_.iterations, 0.0);
    }
    for (int s = 0; s < graph::kStreamCount; ++s) {
      state.status[s].wait = StreamStatus::Wait::finished;
      if (stream_ops_[graph_.rank_program[r]][s].empty()) continue; // no actor for an idle stream
      state.status[s].wait = StreamStatus::Wait::running;
      ++started_streams_;
      auto actor = sg4::Actor::create(fmt::format("rank{}-{}", r, graph::to_string(static_cast<graph::Stream>(s))),
                                      platform_.gpus[r], [this, r, s] { stream_loop(r, s); });
      if (!rank_actors_[r]) rank_actors_[r] = std::move(actor);
    }
  }
}

void Replay::stream_loop(int rank, int stream) {
  auto& state = ranks_[rank];
  auto& status = state.status[stream];
  const auto& program = graph_.program_of(rank);
  const auto& ops = stream_ops_[graph_.rank_program[rank]][stream];
  const std::uint64_t per_iteration = program.ops.size();
  for (std::uint32_t it = 0; it < static_cast<std::uint32_t>(options_.iterations); ++it) {
    status.iteration = it;
    status.wait = StreamStatus::Wait::previous_iteration;
    wait_for_count(state, stream, it * per_iteration);
    for (std::uint32_t index : ops) {
      if (steady_.stopped()) return; // the rest of the run repeats the steady state (steady_state.cpp)
      const auto& op = program.ops[index];
      status.op = index;
      status.wait = StreamStatus::Wait::dependencies;
      wait_for_deps(state, stream, op.deps, it);
      status.wait = StreamStatus::Wait::running;
      if ((it + 1) % op.every == 0 && overlapped(op)) { // ends on its own; the stream goes on
        run_overlapped(rank, stream, index, it, per_iteration);
        continue;
      }
      if ((it + 1) % op.every == 0) { // else skipped this iteration
        const double busy_from = execute(rank, op, it, status);
        state.timeline.streams[stream].push_back({busy_from, sg4::Engine::get_clock(), index, it});
        if (options_.sample_links) sampler_.sample();
      }
      mark_done(state, index, it, per_iteration);
    }
  }
  if (stream == static_cast<int>(graph::Stream::comm)) {
    // Its overlapped pushes may still be in flight: the servers hear that it is done only after them.
    status.wait = StreamStatus::Wait::previous_iteration;
    wait_for_count(state, stream, static_cast<std::uint64_t>(options_.iterations) * per_iteration);
    finish_with_servers(rank);
  }
  status.wait = StreamStatus::Wait::finished;
  ++finished_streams_;
}

bool Replay::overlapped(const graph::Op& op) {
  const auto* push_pull = std::get_if<graph::PushPull>(&op.body);
  return push_pull != nullptr && push_pull->overlapped;
}

// An op its stream does not wait for (graph::PushPull::overlapped): an actor of its own runs it and marks it done, so
// the ops after it on the stream start at once and those that depend on it wait for it as for any other.
void Replay::run_overlapped(int rank, int stream, std::uint32_t index, std::uint32_t it, std::uint64_t per_iteration) {
  const auto& program = graph_.program_of(rank);
  sg4::Actor::create(fmt::format("rank{}-{}-op{}", rank, graph::to_string(static_cast<graph::Stream>(stream)), index),
                     platform_.gpus[rank], [this, rank, stream, index, it, per_iteration, &program] {
                       auto& state = ranks_[rank];
                       StreamStatus status; // its own: the stream's says what the stream itself waits for
                       const double busy_from = execute(rank, program.ops[index], it, status);
                       state.timeline.streams[stream].push_back({busy_from, sg4::Engine::get_clock(), index, it});
                       if (options_.sample_links) sampler_.sample();
                       mark_done(state, index, it, per_iteration);
                     });
}

void Replay::wait_for_count(RankState& state, int stream, std::uint64_t count) {
  if (state.ops_done >= count) return;
  auto& wait = state.waits[stream];
  std::unique_lock lock(*state.mutex);
  wait.waiting = true;
  wait.awaited_op = -1;
  wait.awaited_count = count;
  while (state.ops_done < count)
    wait.cv->wait(lock);
  wait.waiting = false;
}

void Replay::wait_for_deps(RankState& state, int stream, const std::vector<std::uint32_t>& deps, std::uint32_t it) {
  const auto unmet = [&]() -> std::int64_t {
    for (auto dep : deps)
      if (state.done_iteration[dep] < it) return dep;
    return -1;
  };
  if (unmet() < 0) return;
  auto& wait = state.waits[stream];
  // Taking the mutex is a simcall: other actors run meanwhile and may complete the awaited op before this one waits
  // (it would then never be woken), so what is unmet is read again once the mutex is held.
  std::unique_lock lock(*state.mutex);
  wait.waiting = true;
  wait.awaited_count = 0;
  for (auto awaited = unmet(); awaited >= 0; awaited = unmet()) {
    wait.awaited_op = awaited;
    wait.cv->wait(lock);
  }
  wait.waiting = false;
}

void Replay::mark_done(RankState& state, std::uint32_t op, std::uint32_t it, std::uint64_t per_iteration) {
  state.done_iteration[op] = it;
  if (++state.ops_done % per_iteration == 0) {
    state.timeline.iteration_end.push_back(sg4::Engine::get_clock());
    if (steady_.watching()) steady_.rank_finished_iteration(it);
  }
  for (auto& wait : state.waits)
    if (wait.waiting && (wait.awaited_op == static_cast<std::int64_t>(op) ||
                         (wait.awaited_op < 0 && state.ops_done >= wait.awaited_count)))
      wait.cv->notify_one();
}

double Replay::execute(int rank, const graph::Op& op, std::uint32_t it, StreamStatus& status) {
  const double start = sg4::Engine::get_clock();
  if (const auto* compute = std::get_if<graph::Compute>(&op.body)) {
    const auto& slowdown = graph_.compute_slowdown;
    const bool straggles = graph::paced_by_gpu(op) && !slowdown.empty() && !slowdown[rank].empty();
    const double seconds = compute->seconds * (straggles ? slowdown[rank][it % slowdown[rank].size()] : 1.0);
    // GPU kernels slow down while collectives hold some of the SMs and of the memory bandwidth (contention.cpp); the
    // data loader's work runs beside the GPU.
    if (op.stream == graph::Stream::compute && sms_shared())
      run_kernel(ranks_[rank], seconds, math_share(*compute));
    else
      sg4::this_actor::sleep_for(seconds);
  } else if (const auto* collective = std::get_if<graph::Collective>(&op.body)) {
    return run_collective(rank, *collective, it, status);
  } else if (const auto* p2p = std::get_if<graph::SendRecv>(&op.body)) {
    return send_recv(rank, *p2p, op.stream, it, status);
  } else if (const auto* exchange = std::get_if<graph::Exchange>(&op.body)) {
    run_exchange(rank, *exchange, it, status);
  } else if (const auto* push = std::get_if<graph::Push>(&op.body)) {
    run_push(rank, *push, it, status);
  } else if (const auto* push_pull = std::get_if<graph::PushPull>(&op.body)) {
    run_push_pull(rank, *push_pull, it, status);
  }
  return start;
}

// Point-to-point ops have mailboxes of their own: a pipeline's pending sends never meet a collective's messages
// between the same two GPUs, and each p2p stream (a pipeline's two directions when they overlap) matches its own.
sg4::Mailbox* Replay::p2p_mailbox(int from, int to, graph::Stream stream) {
  const auto key = channel_key(from, to, stream);
  if (const auto found = p2p_boxes_.find(key); found != p2p_boxes_.end()) return found->second;
  // a simcall: same name, same mailbox
  auto* box = sg4::Mailbox::by_name(fmt::format("{}:{}>{}", graph::to_string(stream), from, to));
  return p2p_boxes_.try_emplace(key, box).first->second;
}

// Sends are detached (isend): the flow starts once the peer's receive is posted. The receive is busy from the later
// of its own posting and the send's.
double Replay::send_recv(int rank, const graph::SendRecv& op, graph::Stream stream, std::uint32_t it,
                         StreamStatus& status) {
  const double start = sg4::Engine::get_clock();
  if (op.send) {
    posted_sends_[channel_key(rank, op.peer, stream)].push_back(start);
    // Coarse fidelity: a transfer between nodes carries the traffic of the ranks it stands for, over their connections.
    const auto& route = pair(rank, op.peer);
    const double connections = route.link == collectives::LinkClass::network ? graph_.nic_share : 1;
    put_init(p2p_mailbox(rank, op.peer, stream), &token_, op.bytes, route, -1, connections)->detach();
    account(rank, route, op.bytes, op.bytes, it);
    return start;
  }
  status.peer = op.peer;
  status.wait = StreamStatus::Wait::peer;
  char* data = nullptr;
  const auto comm = p2p_mailbox(op.peer, rank, stream)->get_async(&data);
  comm->wait();
  sleep_until(comm->get_finish_time() + arrival_delay(pair(op.peer, rank)));
  auto& posted = posted_sends_[channel_key(op.peer, rank, stream)];
  const double sent = posted.empty() ? start : posted.front();
  if (!posted.empty()) posted.pop_front();
  return std::max(start, sent);
}

std::string Replay::deadlock_report() const {
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

ReplayResult Replay::collect() {
  ReplayResult result;
  result.transfers = ledger_.transfers();
  for (auto& state : ranks_) {
    if (!state.timeline.iteration_end.empty())
      result.simulated_seconds = std::max(result.simulated_seconds, state.timeline.iteration_end.back());
    result.ranks.push_back(std::move(state.timeline));
  }
  for (auto& server : servers_)
    result.servers.push_back(std::move(server.stats));
  for (std::size_t i = 0; i < platform_.links.size(); ++i) {
    const auto* link = platform_.links[i];
    result.links.push_back({link->get_name(), link->get_bandwidth(), ledger_.bytes()[i]});
  }
  result.link_samples = sampler_.take();
  return result;
}
} // namespace detail

namespace {
constexpr char kResultTag = 'R';
constexpr char kDeadlockTag = 'D';
} // namespace

using detail::Replay;

ReplayResult replay_in_this_process(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                                    const ReplayOptions& options) {
  graph::validate(graph);
  check_footprint(estimate_footprint(cluster, graph, options), options);
  return Replay(cluster, graph, options).run();
}

ReplayResult replay(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                    const ReplayOptions& options) {
  graph::validate(graph); // fail fast, in the parent, on a malformed plan
  check_footprint(estimate_footprint(cluster, graph, options), options); // and on one too large to replay
  const ChildJob job = [&]() -> std::string {
    try {
      return kResultTag + encode(Replay(cluster, graph, options).run());
    } catch (const DeadlockError& e) {
      return kDeadlockTag + std::string(e.what());
    }
  };
  auto outcome = run_in_children({job}, 1, {}, {}, {options.memory_limit, options.memory_limit_text}).front();
  if (outcome.over_memory) throw ResourceError("the simulation process was " + outcome.output);
  if (!outcome.ok) throw std::runtime_error(outcome.output);
  if (outcome.output.empty() || outcome.output.front() != kResultTag) {
    if (!outcome.output.empty() && outcome.output.front() == kDeadlockTag)
      throw DeadlockError(outcome.output.substr(1));
    throw std::runtime_error("the simulation process returned no result");
  }
  return decode(outcome.output.substr(1));
}

} // namespace dtsim::engine
