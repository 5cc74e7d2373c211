// The job controller and what interrupts it, as SimGrid actors on one host. The controller waits, for each phase of
// the run (training until the next checkpoint, a checkpoint, a restart), on a condition with that phase's deadline;
// a failure source or the cloud pushes an event and wakes it. Whatever was trained since the last complete checkpoint
// is lost at an interruption; wall = useful + checkpoints + down + lost by construction (lost is the rest: work
// redone, warm-ups, checkpoints cut short). Under Bamboo's redundant computation a preempted node's stage is taken over
// by its shadow instead, and the job trains on, slower, until the replacement rejoins.
#include "sim/engine/job_replay.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <random>

namespace sg4 = simgrid::s4u;

namespace dtsim::engine {
namespace {

using lifecycle::JobTimes;
using lifecycle::TrialResult;

constexpr int kSpot = -1; // Event::source of a spot interruption notice

struct Event {
  double time = 0;
  int source = 0; // index in JobTimes::failures, or kSpot
};

// Uniform in [0, 1) from 53 random bits (bit for bit the same with every standard library).
double uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}
double exponential(std::mt19937_64& rng, double rate) {
  return -std::log1p(-uniform(rng)) / rate;
}
// Weibull with shape k and the given mean: scale = mean / Gamma(1 + 1/k).
double weibull(std::mt19937_64& rng, double shape, double mean) {
  return mean / std::tgamma(1 + 1 / shape) * std::pow(-std::log1p(-uniform(rng)), 1 / shape);
}

class Job {
public:
  Job(const JobTimes& job, std::uint64_t seed)
      : job_(job), seed_(seed), iteration_(job.iteration), draining_(job.iteration_draining), victims_(stream(-2)) {
    result_.failures_by_source.assign(job.failures.size(), 0);
    if (redundant())
      preempted_.assign(static_cast<std::size_t>(job.redundancy.stages * job.redundancy.nodes_per_stage), 0);
  }

  TrialResult run() {
    char name[] = "dtsim";
    int argc = 1;
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
    xbt_log_control_set("root.thresh:critical");
    mutex_ = sg4::Mutex::create(); // SimGrid's synchronization objects belong to a running engine
    wake_ = sg4::ConditionVariable::create();
    auto* zone = sg4::create_full_zone("job");
    host_ = zone->create_host("controller", 1e9)->seal();
    zone->seal();
    for (std::size_t i = 0; i < job_.failures.size(); ++i)
      sg4::Actor::create("failures", host_, [this, i] { failure_source(static_cast<int>(i)); })->daemonize();
    if (job_.spot.enabled && (job_.spot.interruptions_per_month > 0 || !job_.spot.trace.empty()))
      sg4::Actor::create("spot", host_, [this] { spot_source(); })->daemonize();
    sg4::Actor::create("controller", host_, [this] { control(); });
    engine.run();
    result_.useful = static_cast<double>(job_.steps) * useful_iteration();
    result_.lost = result_.wall - result_.useful - result_.checkpoint_time - result_.down - result_.degraded;
    if (result_.lost < 1e-9 * result_.wall) result_.lost = 0; // rounding of the sums, not work lost
    const double price =
        job_.spot.enabled && job_.spot.price_per_hour > 0 ? job_.spot.price_per_hour : job_.price_per_hour;
    result_.cost = price * job_.nodes * result_.wall / 3600.0;
    // Every node of the job draws while it waits too: on a checkpoint's write, on detection, a replacement, a restart.
    if (job_.power.known) {
      const double waiting = result_.checkpoint_time + result_.down;
      result_.energy_kwh = lifecycle::energy_kwh(job_.power, job_.energy, job_.nodes, result_.wall - waiting, waiting);
      result_.co2_kg = lifecycle::co2_kg(result_.energy_kwh, job_.energy);
    }
    return result_;
  }

private:
  std::mt19937_64 stream(int source) const { return std::mt19937_64(seed_ * 1000003 + 7919 * (source + 2)); }

  void push(int source) {
    std::unique_lock lock(*mutex_);
    events_.push_back({sg4::Engine::get_clock(), source});
    wake_->notify_all();
  }

  // Exponential units superpose into one exponential of rate N / MTBF; Weibull units are renewed one by one (a failed
  // unit is replaced by a new one), each with its own clock.
  void failure_source(int index) {
    const auto& f = job_.failures[static_cast<std::size_t>(index)];
    auto rng = stream(index);
    const double units = f.units_per_node * job_.nodes;
    if (f.distribution == lifecycle::Distribution::exponential) {
      for (;;) {
        sg4::this_actor::sleep_for(exponential(rng, units / f.mtbf));
        push(index);
      }
    }
    std::priority_queue<double, std::vector<double>, std::greater<>> next;
    for (long u = 0; u < std::max(1L, std::lround(units)); ++u)
      next.push(weibull(rng, f.weibull_shape, f.mtbf));
    for (;;) {
      const double at = next.top();
      next.pop();
      sg4::this_actor::sleep_until(at);
      push(index);
      next.push(at + weibull(rng, f.weibull_shape, f.mtbf));
    }
  }

  void spot_source() {
    if (!job_.spot.trace.empty()) { // a recorded history, the same in every trial
      for (double at : job_.spot.trace) {
        sg4::this_actor::sleep_until(at);
        push(kSpot);
      }
      return;
    }
    auto rng = stream(kSpot);
    const double rate = job_.spot.job_rate(job_.nodes);
    for (;;) {
      sg4::this_actor::sleep_for(exponential(rng, rate));
      push(kSpot);
    }
  }

  // Waits `seconds`; true (and the event in `event`) if something interrupted it first.
  bool wait(double seconds, Event& event) {
    std::unique_lock lock(*mutex_);
    const double deadline = sg4::Engine::get_clock() + seconds;
    while (events_.empty() && seconds > 0)
      if (wake_->wait_until(lock, deadline) == std::cv_status::timeout) break;
    if (events_.empty()) return false;
    event = events_.front();
    events_.pop_front();
    return true;
  }

  double now() const { return sg4::Engine::get_clock(); }

  // Seconds to train `steps` iterations from now, slower while an asynchronous checkpoint drains.
  double training_seconds(double steps) const {
    const double window = drain_pending_ ? std::max(0.0, drain_end_ - now()) : 0.0;
    const double slow = draining_;
    if (steps * slow <= window) return steps * slow;
    return window + (steps - window / slow) * iteration_;
  }
  // Iterations completed `elapsed` seconds into a training phase that began with `window` seconds of drain left.
  double steps_after(double elapsed, double window) const {
    const double slow = std::min(elapsed, window);
    return slow / draining_ + (elapsed - slow) / iteration_;
  }

  // Elastic: the iteration on the replicas left (a full step's worth of samples), from the shapes simulated.
  bool elastic() const { return !job_.shrunk_iteration.empty(); }
  int lost_replicas() const { return (lost_nodes_ + job_.nodes_per_replica - 1) / job_.nodes_per_replica; }
  bool can_shrink() const { return lost_replicas() < static_cast<int>(job_.shrunk_iteration.size()); }
  void set_shape() { set_iteration(job_.shrunk_iteration.at(static_cast<std::size_t>(lost_replicas()))); }
  // Lost nodes whose replacements have come by now rejoin the count of nodes available.
  bool take_returns() {
    const int before = lost_replicas();
    std::erase_if(returns_, [&](const std::pair<double, int>& r) {
      if (r.first > now()) return false;
      lost_nodes_ -= r.second;
      return true;
    });
    return lost_replicas() != before;
  }

  // An asynchronous checkpoint whose drain has ended is complete.
  void settle_drain() {
    if (!drain_pending_ || drain_end_ > now()) return;
    drain_pending_ = false;
    committed_ = drain_steps_;
    ++result_.checkpoints;
    result_.checkpoint_time += job_.checkpoint_blocking + drain_slowdown_;
  }

  void control() {
    while (done_ < job_.steps) {
      if (redundant() && !rejoin()) continue;
      // A checkpoint interval runs on across a failover or a rejoin: it began where the last one ended.
      if (!resume_) since_ = done_;
      resume_ = false;
      std::int64_t target = std::max(done_, std::min(job_.steps, since_ + job_.interval_steps));
      // A replacement due before the interval's end: train up to the iteration it comes in, then let it rejoin.
      bool cut = false;
      if (!returns_.empty() && redundant()) {
        const double first = std::min_element(returns_.begin(), returns_.end())->first;
        const auto by = done_ + std::max<std::int64_t>(1, std::llround(std::ceil((first - now()) / iteration_)));
        if (by < target) target = by, cut = true;
      }
      const double window = drain_pending_ ? std::max(0.0, drain_end_ - now()) : 0.0;
      const double seconds = training_seconds(static_cast<double>(target - done_));
      // A synchronous checkpoint follows the steps in the same wait (half the waits of a long run).
      const bool write = job_.checkpoints && !job_.async && target < job_.steps && !cut;
      const double start = now();
      Event event;
      const bool interrupted = wait(seconds + (write ? job_.checkpoint_blocking : 0.0), event);
      const double elapsed = now() - start;
      // What the drain's traffic took from training: the drained seconds' iterations, had they run at full speed.
      const double drained = std::min(elapsed, window);
      drain_slowdown_ += drained - drained / draining_ * iteration_;
      const std::int64_t before = done_;
      if (interrupted) {
        // Cut short in training, or in the checkpoint after it (which then does not count).
        done_ =
            elapsed >= seconds
                ? target
                : std::min(target, done_ + static_cast<std::int64_t>(std::floor(steps_after(elapsed, window) + 1e-9)));
        result_.degraded += static_cast<double>(done_ - before) * (iteration_ - useful_iteration());
        settle_drain();
        resume_ = true; // unless the interruption rolls the job back to its checkpoint
        interrupt(event);
        continue;
      }
      done_ = target;
      result_.degraded += static_cast<double>(done_ - before) * (iteration_ - useful_iteration());
      settle_drain();
      if (cut) {
        resume_ = true;
      } else if (write) {
        committed_ = done_;
        ++result_.checkpoints;
        result_.checkpoint_time += job_.checkpoint_blocking;
        grow();
      } else if (done_ < job_.steps && job_.checkpoints) {
        checkpoint();
      }
    }
    // The run ends with its last step; a drain still running is not waited for (the model is already trained).
    result_.wall = now();
  }

  // An asynchronous checkpoint: the snapshot into host memory, then the drain in the background.
  void checkpoint() {
    Event event;
    if (job_.async && drain_pending_) { // one snapshot in host memory at a time: the last drain finishes first
      const double start = now();
      if (wait(drain_end_ - now(), event)) return retry_after(event);
      result_.checkpoint_time += now() - start;
      settle_drain();
    }
    if (wait(job_.checkpoint_blocking, event)) return retry_after(event);
    drain_pending_ = true;
    drain_steps_ = done_;
    drain_end_ = now() + job_.checkpoint_drain;
    drain_slowdown_ = 0;
  }

  // A checkpoint cut short by a failover is taken again once the shadow has the stage (the interval goes on).
  void retry_after(const Event& event) {
    resume_ = true;
    interrupt(event);
  }

  // Right after a checkpoint (nothing to lose), a shrunk job takes back the nodes that have come back: it re-plans
  // and restarts on them from that checkpoint.
  void grow() {
    if (!elastic() || lost_nodes_ == 0 || committed_ != done_ || !take_returns()) return;
    Event event;
    ++result_.resizes;
    if (!phase(job_.reconfigure + job_.checkpoint_load, true, event)) return interrupt(event);
    set_shape();
  }

  // Waits a phase of a restart; counted as down time unless it is a warm-up. False if interrupted again.
  bool phase(double seconds, bool down, Event& event) {
    const double start = now();
    const bool interrupted = wait(seconds, event);
    if (down) result_.down += now() - start;
    return !interrupted;
  }

  void interrupt(Event event) {
    if (event.source == kSpot && redundant() && fail_over(event)) return;
    resume_ = false;
    for (;;) {
      drain_pending_ = false;    // a snapshot in host memory does not survive the restart
      const Event cause = event; // `event` becomes the next interruption if one comes during this one's phases
      bool calm = true;
      if (event.source == kSpot) {
        ++result_.preemptions;
        // A checkpoint that fits in the notice saves what was trained; the rest of the notice is lost to training.
        const double write = job_.async ? job_.checkpoint_blocking + job_.checkpoint_drain : job_.checkpoint_blocking;
        const double notice_left = std::max(0.0, event.time + job_.spot.notice - now());
        if (job_.checkpoints && job_.spot.checkpoint_on_notice && write <= notice_left && done_ > committed_) {
          const double start = now();
          Event next;
          if (!wait(write, next)) {
            committed_ = done_;
            ++result_.checkpoints;
            result_.checkpoint_time += now() - start;
          } else {
            event = next, calm = false;
          }
        }
        // The instance goes at the end of the notice; its replacement runs `replacement` later, whatever else happens.
        back_at_ = std::max(back_at_, event.time + job_.spot.notice + job_.spot.replacement);
        if (calm) calm = phase(std::max(0.0, event.time + job_.spot.notice - now()), false, event);
      } else {
        ++result_.failures;
        ++result_.failures_by_source[static_cast<std::size_t>(event.source)];
        const double detection = job_.failures[static_cast<std::size_t>(event.source)].detection;
        calm = phase(std::max(0.0, event.time + detection - now()), true, event);
      }
      done_ = committed_;
      if (elastic()) {
        // The lost nodes come back when replaced; meanwhile the job goes on without them if it can.
        const int nodes = cause.source == kSpot ? 1 : job_.failures[static_cast<std::size_t>(cause.source)].nodes;
        const double back = cause.source == kSpot ? cause.time + job_.spot.notice + job_.spot.replacement
                                                  : cause.time + job_.reschedule;
        lost_nodes_ += nodes;
        returns_.emplace_back(back, nodes);
        take_returns();
        while (calm && !can_shrink()) { // too many lost at once: wait for the next replacement
          const auto next = std::min_element(returns_.begin(), returns_.end())->first;
          calm = phase(std::max(0.0, next - now()), true, event);
          take_returns();
        }
        if (calm) {
          if (lost_nodes_ > 0) ++result_.resizes;
          set_shape();
        }
      } else if (calm) {
        calm = phase(std::max(0.0, back_at_ - now()), true, event); // a preempted node's replacement
      }
      // A restart: rescheduled, or (elastic) reconfigured on the nodes there are; the checkpoint's load; warm-up.
      // Every preempted node's replacement has come by then (back_at_): a redundant job's pipelines are whole again.
      if (calm && redundant()) {
        std::fill(preempted_.begin(), preempted_.end(), 0);
        returns_.clear();
        set_iteration(job_.iteration);
      }
      if (calm) {
        ++result_.restarts;
        calm = phase((elastic() ? job_.reconfigure : job_.restart) + job_.checkpoint_load * (committed_ > 0), true,
                     event) &&
               phase(job_.warmup_iterations * iteration_, false, event);
      }
      if (calm) return;
    }
  }

  // Redundant computation (Bamboo): the pipelines' stages form rings, each stage the shadow of the next; it holds its
  // successor's layers and state. Nodes are numbered column by column, a column one node of each stage (the node of
  // stage s - 1 in the same column holds the shadows of its ranks). A preempted node is drawn at random among those
  // running; its shadow takes the stage over (the iteration in flight is redone) unless the stage's predecessor is
  // already gone (no shadow) or its successor is (the victim was running that stage too): then two neighbouring
  // stages' state is lost and the job restarts from its checkpoint. True if the shadow took over.
  bool redundant() const { return job_.redundancy.enabled; }
  // An iteration's useful time: the redundant forwards are overhead, counted with the slower iterations.
  double useful_iteration() const { return redundant() ? job_.redundancy.without : job_.iteration; }
  bool fail_over(const Event& event) {
    const int stages = job_.redundancy.stages;
    std::vector<int> running;
    for (int i = 0; i < static_cast<int>(preempted_.size()); ++i)
      if (!preempted_[static_cast<std::size_t>(i)]) running.push_back(i);
    const int victim = running.at(static_cast<std::size_t>(uniform(victims_) * static_cast<double>(running.size())));
    const int first = victim - victim % stages, stage = victim % stages;
    const auto at = [&](int s) { return preempted_[static_cast<std::size_t>(first + (s + stages) % stages)] != 0; };
    if (at(stage - 1) || at(stage + 1)) return false;
    preempted_[static_cast<std::size_t>(victim)] = 1;
    const double back = event.time + job_.spot.notice + job_.spot.replacement;
    returns_.emplace_back(back, victim);
    back_at_ = std::max(back_at_, back);
    ++result_.preemptions;
    ++result_.failovers;
    set_iteration(job_.redundancy.failover);
    return true;
  }
  // Replacements that have come take their stages back: the job stops while they load the stage's state and the
  // communicators are rebuilt. False if something interrupted that (the interruption then handled).
  bool rejoin() {
    bool back = false;
    std::erase_if(returns_, [&](const std::pair<double, int>& r) {
      if (r.first > now()) return false;
      preempted_[static_cast<std::size_t>(r.second)] = 0;
      return back = true;
    });
    if (!back) return true;
    Event event;
    if (!phase(job_.redundancy.rejoin, true, event)) {
      interrupt(event);
      return false;
    }
    if (std::count(preempted_.begin(), preempted_.end(), 1) == 0) set_iteration(job_.iteration);
    return true;
  }
  void set_iteration(double seconds) {
    iteration_ = seconds;
    draining_ = job_.iteration_draining * iteration_ / job_.iteration;
  }

  const JobTimes& job_;
  std::uint64_t seed_;
  TrialResult result_;
  sg4::Host* host_ = nullptr;
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr wake_;
  std::deque<Event> events_;
  double back_at_ = 0; // when the last preempted node's replacement runs
  double iteration_;   // seconds per iteration on the replicas the job has now
  double draining_;    // the same while an asynchronous checkpoint drains
  int lost_nodes_ = 0; // elastic: nodes lost and not yet replaced
  // When lost nodes come back, and (elastic) how many of them or (redundancy) the stage they take back.
  std::vector<std::pair<double, int>> returns_;
  std::int64_t done_ = 0;      // steps trained since the start of the run, kept or not
  std::int64_t committed_ = 0; // steps the last complete checkpoint holds
  bool drain_pending_ = false;
  double drain_end_ = 0;
  std::int64_t drain_steps_ = 0;
  double drain_slowdown_ = 0;
  std::int64_t since_ = 0;      // the step the current checkpoint interval began at
  bool resume_ = false;         // the last segment ended early (a failover, a rejoin): its interval goes on
  std::mt19937_64 victims_;     // redundancy: which node a preemption takes
  std::vector<char> preempted_; // redundancy: per node (column by column), lost and not yet back
};

} // namespace

lifecycle::TrialResult replay_job(const lifecycle::JobTimes& job, std::uint64_t seed) {
  return Job(job, seed).run();
}

} // namespace dtsim::engine
