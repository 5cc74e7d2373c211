// The run-level replay of a whole training job against hand calculations and closed forms: an uninterrupted run's
// time, an asynchronous checkpoint's drain, Poisson failure counts, Young's first-order waste, spot interruptions.
// Every trial runs a SimGrid engine, so each runs in a child process of its own.
#include "sim/engine/child_process.hpp"
#include "sim/engine/job_replay.hpp"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

namespace dtsim::engine {
namespace {

using lifecycle::FailureSource;
using lifecycle::JobTimes;
using lifecycle::TrialResult;

std::vector<TrialResult> trials(const JobTimes& job, int count) {
  std::vector<ChildJob> work;
  for (int i = 0; i < count; ++i)
    work.emplace_back([job, i] {
      const auto t = replay_job(job, 1000 + static_cast<std::uint64_t>(i));
      return fmt::format("{:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {} {} {} {} {:.17g} {:.17g} {:.17g} {} {}", t.wall,
                         t.useful, t.checkpoint_time, t.lost, t.down, t.failures, t.preemptions, t.checkpoints,
                         t.restarts, t.cost, t.energy_kwh, t.degraded, t.resizes, t.failovers);
    });
  std::vector<TrialResult> results;
  for (const auto& outcome : run_in_children(work, 2)) {
    EXPECT_TRUE(outcome.ok) << outcome.output;
    std::istringstream in(outcome.output);
    TrialResult t;
    in >> t.wall >> t.useful >> t.checkpoint_time >> t.lost >> t.down >> t.failures >> t.preemptions >> t.checkpoints >>
        t.restarts >> t.cost >> t.energy_kwh >> t.degraded >> t.resizes >> t.failovers;
    results.push_back(t);
  }
  return results;
}

JobTimes uninterrupted(std::int64_t steps, double iteration, std::int64_t interval_steps, double blocking) {
  JobTimes job;
  job.steps = steps;
  job.nodes = 4;
  job.gpus = 32;
  job.iteration = job.iteration_draining = iteration;
  job.checkpoints = true;
  job.interval_steps = interval_steps;
  job.checkpoint_interval = static_cast<double>(interval_steps) * iteration;
  job.checkpoint_blocking = blocking;
  return job;
}

TEST(JobReplay, WithoutFailuresTheRunIsStepsTimesIterationPlusEachCheckpoint) {
  // 1,000 steps of 0.5 s, a 3 s checkpoint every 100 steps: after steps 100, 200, ..., 900 (none after the last).
  auto job = uninterrupted(1000, 0.5, 100, 3);
  job.price_per_hour = 10;
  const auto t = trials(job, 1).at(0);
  EXPECT_NEAR(t.wall, 1000 * 0.5 + 9 * 3, 1e-9);
  EXPECT_EQ(t.checkpoints, 9);
  EXPECT_NEAR(t.checkpoint_time, 27, 1e-9);
  EXPECT_NEAR(t.lost, 0, 1e-9);
  EXPECT_EQ(t.failures, 0);
  EXPECT_NEAR(t.cost, 10 * 4 * 527 / 3600.0, 1e-9); // $10 a node-hour, 4 nodes
}

TEST(JobReplay, EnergyCountsTrainingAtTheTrainingDrawAndWaitingAtTheIdleDraw) {
  // 1,000 steps of 0.5 s and nine 3 s checkpoints on 4 nodes drawing 5 kW training and 1.2 kW waiting, PUE 1.2:
  // 1.2 x 4 x (500 s x 5,000 W + 27 s x 1,200 W) / 3.6e6 J/kWh = 3.376 kWh.
  auto job = uninterrupted(1000, 0.5, 100, 3);
  job.power = {5000, 1200, true};
  job.energy.pue = 1.2;
  const auto t = trials(job, 1).at(0);
  EXPECT_NEAR(t.energy_kwh, 1.2 * 4 * (500 * 5000 + 27 * 1200) / 3.6e6, 1e-12);
  // Down time waits at the idle draw: 2 hours of 1 s steps on one 1 kW node (100 W idle), a crash every hour on
  // average, 10 minutes to restart, no checkpoints; whatever the draw of failures, the trial's wall time splits into
  // down time at 100 W and the rest (training, work redone) at 1 kW.
  JobTimes failing;
  failing.steps = 7200;
  failing.nodes = 1;
  failing.iteration = failing.iteration_draining = 1;
  failing.interval_steps = failing.steps;
  failing.restart = 600;
  failing.power = {1000, 100, true};
  failing.failures = {FailureSource{"gpu", 1, 3600, lifecycle::Distribution::exponential, 1, 0, "test"}};
  for (const auto& f : trials(failing, 4)) {
    EXPECT_NEAR(f.energy_kwh, ((f.wall - f.down) * 1000 + f.down * 100) / 3.6e6, 1e-9);
  }
}

TEST(JobReplay, AnAsynchronousDrainSlowsTheIterationsItOverlaps) {
  // 100 steps of 1 s, a checkpoint every 10 steps: a 0.5 s snapshot, then a 3 s drain during which an iteration takes
  // 1.5 s (its traffic takes a third of the bandwidth training needs). Each drain covers 2 iterations in 3 s that
  // would take 2 s: 1 s lost to it. Nine checkpoints: 100 + 9 x 0.5 + 9 x 1 = 113.5 s.
  auto job = uninterrupted(100, 1, 10, 0.5);
  job.async = true;
  job.iteration_draining = 1.5;
  job.checkpoint_drain = 3;
  const auto t = trials(job, 1).at(0);
  EXPECT_NEAR(t.wall, 113.5, 1e-9);
  EXPECT_EQ(t.checkpoints, 9);
  EXPECT_NEAR(t.checkpoint_time, 9 * (0.5 + 1), 1e-9);
  EXPECT_NEAR(lifecycle::checkpoint_cost(job), 0.5 + 1, 1e-12); // what Young's interval weighs per checkpoint
}

TEST(JobReplay, ExponentialFailuresArriveAtTheirRate) {
  // 4 units with an MTBF of 4,000 s: a Poisson process of rate 1e-3 /s. Restarts cost nothing and a checkpoint
  // follows every step, so a trial lasts about its 10,000 useful seconds; over all trials the count must be within
  // 3 standard errors (sqrt of the expected count) of lambda x total wall time.
  auto job = uninterrupted(10'000, 1, 1, 0);
  job.nodes = 4;
  job.failures = {FailureSource{"gpu", 1, 4000, lifecycle::Distribution::exponential, 1, 0, ""}};
  double wall = 0, failures = 0;
  for (const auto& t : trials(job, 100)) {
    wall += t.wall;
    failures += t.failures;
  }
  const double expected = 1e-3 * wall;
  EXPECT_NEAR(failures, expected, 3 * std::sqrt(expected));
  EXPECT_GT(failures, 500); // the test has the power it claims
}

TEST(JobReplay, WeibullUnitsRenewAtTheirMeanRate) {
  // 4 units, Weibull shape 0.7 with a mean of 100 s, renewed at each failure: over 10,000 s (100 lifetimes) the
  // count per unit is t / mean + (CV^2 - 1) / 2 (the renewal function's asymptote, Cox 1962), CV^2 the squared
  // coefficient of variation, Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1; its variance about CV^2 t / mean.
  auto job = uninterrupted(10'000, 1, 1, 0);
  job.failures = {FailureSource{"gpu", 1, 100, lifecycle::Distribution::weibull, 0.7, 0, ""}};
  const double k = 0.7;
  const double cv2 = std::tgamma(1 + 2 / k) / std::pow(std::tgamma(1 + 1 / k), 2) - 1;
  double expected = 0, failures = 0;
  for (const auto& t : trials(job, 20)) {
    expected += 4 * (t.wall / 100 + (cv2 - 1) / 2);
    failures += t.failures;
  }
  EXPECT_NEAR(failures, expected, 3 * std::sqrt(cv2 * expected));
}

TEST(JobReplay, YoungsIntervalWastesWhatTheFirstOrderFormulaSays) {
  // C = 10 s, M = 10,000 s, R = 60 s: Young's interval sqrt(2 C M) = 447 s; first-order waste C/tau + tau/2M + R/M
  // = 5.07% of wall time. Over 100 trials of a million seconds' work the simulated waste must be within 5% of it.
  const double c = 10, m = 10'000, r = 60;
  const double tau = lifecycle::young_interval(c, m);
  EXPECT_NEAR(tau, std::sqrt(2 * c * m), 1e-9);
  auto job = uninterrupted(1'000'000, 1, std::llround(tau), c);
  job.nodes = 1;
  job.restart = r;
  job.failures = {FailureSource{"node", 1, m, lifecycle::Distribution::exponential, 1, 0, ""}};
  double wall = 0, useful = 0;
  for (const auto& t : trials(job, 100)) {
    wall += t.wall;
    useful += t.useful;
    EXPECT_NEAR(t.wall, t.useful + t.checkpoint_time + t.lost + t.down, 1e-6 * t.wall); // the accounting adds up
  }
  const double expected = lifecycle::first_order_waste(c, static_cast<double>(std::llround(tau)), m, r);
  EXPECT_NEAR(1 - useful / wall, expected, 0.05 * expected);
}

TEST(JobReplay, SpotWithoutInterruptionsIsTheOnDemandRunAtTheSpotPrice) {
  auto on_demand = uninterrupted(10'000, 0.2, 500, 4);
  on_demand.price_per_hour = 3.06;
  auto spot = on_demand;
  spot.spot.enabled = true;
  spot.spot.price_per_hour = 0.92;
  const auto a = trials(on_demand, 1).at(0), b = trials(spot, 1).at(0);
  EXPECT_DOUBLE_EQ(a.wall, b.wall);
  EXPECT_NEAR(b.cost, 0.92 * 4 * b.wall / 3600, 1e-9);
}

TEST(JobReplay, ACheckpointOnNoticeSavesTheWorkAndLosesOnlyTheRestOfTheNotice) {
  // Interruptions on notice (120 s) with a 4 s checkpoint: what was trained is saved, the 116 s left of the notice
  // are lost to training (the instance is going), and the replacement (600 s), start-up (60 s) and load (5 s) are down
  // time.
  auto job = uninterrupted(200'000, 0.5, 2000, 4);
  job.restart = 60;
  job.checkpoint_load = 5;
  job.spot = {true, 30.0, 120, 600, 0.92, true, lifecycle::SpotPolicy::wait}; // 30 a node a month, 4 nodes
  int checked = 0;
  for (const auto& t : trials(job, 10)) {
    EXPECT_GT(t.preemptions, 0);
    if (t.restarts != t.preemptions) continue; // an interruption during another's restart: not this hand count
    ++checked;
    // Plus the part of the iteration the notice cut short (a checkpoint saves whole iterations, of 0.5 s), or of a
    // periodic checkpoint it cut short (4 s).
    EXPECT_GE(t.lost, t.preemptions * 116.0 - 1e-6);
    EXPECT_LE(t.lost, t.preemptions * (116.0 + 4) + 1e-6);
    EXPECT_NEAR(t.down, t.preemptions * (600.0 + 60 + 5), 1e-6);
  }
  EXPECT_GT(checked, 5);
}

TEST(JobReplay, ASpotTraceIsReplayedAsRecorded) {
  // 10,000 steps of 1 s on 4 nodes without checkpoints; nodes taken back at 1,000 s and 5,000 s with no notice, each
  // replaced 100 s later. The first loses the 1,000 steps done; training starts again at 1,100 s and loses 3,900 steps
  // at 5,000 s; from 5,100 s the 10,000 steps run through: 15,100 s, in every trial alike.
  JobTimes job;
  job.steps = 10000;
  job.nodes = 4;
  job.iteration = job.iteration_draining = 1;
  job.interval_steps = job.steps;
  job.spot.enabled = true;
  job.spot.replacement = 100;
  job.spot.trace = {1000, 5000};
  for (const auto& t : trials(job, 3)) {
    EXPECT_EQ(t.preemptions, 2);
    EXPECT_NEAR(t.wall, 15100, 1e-9);
    EXPECT_NEAR(t.down, 200, 1e-9);
    EXPECT_NEAR(t.lost, 1000 + 3900, 1e-9);
  }
}

TEST(JobReplay, AShrunkJobLosesOnlyTheSlowdownUntilItsNodeComesBack) {
  // Two nodes, one replica each; on one the iteration takes twice as long (T1 = 2 T0 = 2 s). A node fails every
  // 20,000 s on average and is back R = 100 s later; a checkpoint follows every step at no cost, reconfiguring is
  // free, so nothing but the slowdown is lost: R seconds at half speed train R / T1 steps where R / T0 were due,
  // R (1 - T0 / T1) = 50 s degraded a failure, to within a step of each end (the failure and the regrowth fall
  // between checkpoints), unless the other node fails meanwhile (about 1% of failures: the job then waits).
  JobTimes job;
  job.steps = 100000;
  job.nodes = 2;
  job.iteration = job.iteration_draining = 1;
  job.checkpoints = true;
  job.interval_steps = 1;
  job.checkpoint_interval = 1;
  job.reschedule = 100;
  job.shrunk_iteration = {1, 2};
  job.failures = {FailureSource{"node", 1, 20000, lifecycle::Distribution::exponential, 1, 0, ""}};
  int failures = 0;
  double degraded = 0;
  for (const auto& t : trials(job, 8)) {
    failures += t.failures;
    degraded += t.degraded;
    // A shrink at each failure and a regrowth after it (one fewer where the last node comes back after the end).
    EXPECT_GE(t.resizes, 2 * t.failures - 1);
    EXPECT_LE(t.resizes, 2 * t.failures);
    EXPECT_NEAR(t.wall, t.useful + t.checkpoint_time + t.down + t.lost + t.degraded, 1e-6);
    EXPECT_LE(t.lost, 2.0 * t.failures + 1e-9); // at most the step under way at each failure
  }
  ASSERT_GT(failures, 40); // 8 trials x about 10 failures
  EXPECT_NEAR(degraded / failures, 50, 5) << failures << " failures";
}

// Redundant computation on a two-stage ring (one node a stage): 10,000 steps of 1 s (0.8 s of it useful, the rest the
// redundant forwards), 1.5 s after a failover, a 30 s rejoin, no checkpoints; preemptions from a trace without notice,
// replaced 100 s later.
JobTimes two_stage_ring(std::vector<double> trace) {
  JobTimes job;
  job.steps = 10000;
  job.nodes = 2;
  job.iteration = job.iteration_draining = 1;
  job.interval_steps = job.steps;
  job.restart = 10;
  job.spot.enabled = true;
  job.spot.replacement = 100;
  job.spot.policy = lifecycle::SpotPolicy::redundancy;
  job.spot.trace = std::move(trace);
  job.redundancy = {true, 2, 1, 1.5, 30, 0.8};
  return job;
}

TEST(JobReplay, AShadowTakesAPreemptedStageOverWithoutARestart) {
  // Preempted at 1,000 s after 1,000 steps; the shadow carries both stages at 1.5 s until the replacement is due at
  // 1,100 s: ceil(100 / 1.5) = 67 steps, to 1,100.5 s; the rejoin stops the job 30 s; the other 8,933 steps end at
  // 1,130.5 + 8,933 = 10,063.5 s. Nothing is redone: the wall time is the useful 8,000 s, the 30 s down and the slower
  // iterations, 67 x 0.7 + 9,933 x 0.2 s.
  for (const auto& t : trials(two_stage_ring({1000}), 2)) {
    EXPECT_EQ(t.preemptions, 1);
    EXPECT_EQ(t.failovers, 1);
    EXPECT_EQ(t.restarts, 0);
    EXPECT_NEAR(t.wall, 10063.5, 1e-6);
    EXPECT_NEAR(t.useful, 8000, 1e-9);
    EXPECT_NEAR(t.down, 30, 1e-9);
    EXPECT_NEAR(t.degraded, 67 * 0.7 + 9933 * 0.2, 1e-6);
    EXPECT_NEAR(t.lost, 0, 1e-6);
  }
}

TEST(JobReplay, LosingAShadowAndItsStageTogetherRestartsFromTheCheckpoint) {
  // The second preemption (1,050 s) takes the node carrying both stages: no copy of them is left, and the job starts
  // over from step 0 once both replacements run (1,150 s) and it has restarted (10 s): 1,160 + 10,000 s.
  for (const auto& t : trials(two_stage_ring({1000, 1050}), 2)) {
    EXPECT_EQ(t.preemptions, 2);
    EXPECT_EQ(t.failovers, 1);
    EXPECT_EQ(t.restarts, 1);
    EXPECT_NEAR(t.wall, 11160, 1e-6);
    EXPECT_NEAR(t.down, 110, 1e-9);
    EXPECT_NEAR(t.wall, t.useful + t.checkpoint_time + t.down + t.lost + t.degraded, 1e-6);
  }
}

TEST(JobReplay, AShadowCoversAPreemptionUnlessANeighbourIsAlreadyGone) {
  // Eight stages in a ring on 2 columns (16 nodes), a preemption every 1,000 s across the job, each node back 500 s
  // later. A node is then down p = 500 / (16 x 1,000) = 1/32 of the time, and a preemption needs a restart when
  // the stage before or after the victim is down: 1 - (1 - p)^2 = 6.2% of them.
  auto job = two_stage_ring({});
  job.nodes = 16;
  job.steps = 100000;
  job.spot.trace.clear();
  job.spot.interruptions_per_month = 30 * 86400.0 / 16 / 1000;
  job.spot.replacement = 500;
  job.redundancy = {true, 8, 2, 1.5, 30, 0.8};
  job.checkpoints = true; // after every step, at no cost: a restart redoes at most the step under way
  job.interval_steps = 1;
  job.checkpoint_interval = 1;
  int preemptions = 0, restarts = 0;
  for (const auto& t : trials(job, 8)) {
    preemptions += t.preemptions;
    restarts += t.restarts;
    EXPECT_LE(t.failovers + t.restarts, t.preemptions); // a preemption during a restart adds to that restart
    EXPECT_NEAR(t.wall, t.useful + t.checkpoint_time + t.down + t.lost + t.degraded, 1e-6);
  }
  ASSERT_GT(preemptions, 600); // 8 trials of about 100
  const double p = 1.0 / 32, share = 1 - (1 - p) * (1 - p), n = preemptions;
  EXPECT_NEAR(restarts, share * n, 3 * std::sqrt(n * share * (1 - share))) << preemptions << " preemptions";
  // The closed form Young's interval weighs under redundancy says the same share.
  EXPECT_DOUBLE_EQ(lifecycle::rollback_rate({}, job.spot, 16, 8), job.spot.job_rate(16) * share);
}

} // namespace
} // namespace dtsim::engine
