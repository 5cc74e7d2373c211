// From a replay's raw timelines to the figures a run reports.
#include "sim/collectives/nccl_release.hpp"
#include "sim/plan/input_pipeline.hpp"
#include "sim/report/attribution.hpp"
#include "sim/report/energy.hpp"
#include "sim/report/result.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <span>

namespace dtsim::report {
namespace {

constexpr std::size_t kBusiestLinks = 5;
constexpr std::size_t kBusiestOfAKind = 3;

// The input stage's rates and, from the timelines, the GPU's own work per measured iteration: from the rank's start
// of the iteration to its last compute or communication op, the slowest rank's, averaged over iterations.
InputStage input_stage(const scenario::Scenario& s, const engine::ReplayResult& replay, std::size_t first,
                       std::size_t total) {
  InputStage in;
  const auto rates = plan::input_rates(s);
  if (rates.seconds_per_iteration <= 0) return in;
  in.modeled = true;
  in.samples_per_second = rates.samples_per_second;
  in.cpu_samples_per_second = rates.cpu_samples_per_second;
  in.storage_samples_per_second = rates.storage_samples_per_second;
  in.loader_seconds = rates.seconds_per_iteration;
  std::vector<double> gpu(total, 0.0);
  for (const auto& rank : replay.ranks)
    for (auto stream : {graph::Stream::compute, graph::Stream::comm})
      for (const auto& interval : rank.streams[static_cast<int>(stream)]) {
        const std::size_t i = interval.iteration;
        if (i < first || i >= total) continue;
        const double start = i > 0 && i - 1 < rank.iteration_end.size() ? rank.iteration_end[i - 1] : 0.0;
        gpu[i] = std::max(gpu[i], interval.end - start);
      }
  if (total > first)
    in.gpu_seconds = std::accumulate(gpu.begin() + static_cast<std::ptrdiff_t>(first), gpu.end(), 0.0) /
                     static_cast<double>(total - first);
  return in;
}

// What a run's time per iteration measures, and its throughput.
struct Pace {
  Distribution iteration;
  double throughput = 0;
  std::string per = "iteration"; // StrategyMetrics::time_per
};

// Iterations a worker has completed by time t: whole ones, and the share of the one under way (its start the previous
// one's end).
double progress_at(std::span<const double> ends, double t) {
  const auto done = static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), t) - ends.begin());
  if (done >= ends.size()) return static_cast<double>(ends.size());
  const double start = done ? ends[done - 1] : 0.0;
  return static_cast<double>(done) + (ends[done] > start ? (t - start) / (ends[done] - start) : 0.0);
}

} // namespace

std::vector<double> shared_window_periods(const std::vector<std::vector<double>>& iteration_ends, std::size_t first,
                                          std::size_t total) {
  std::vector<double> periods;
  if (total <= first) return periods;
  double from = 0, to = std::numeric_limits<double>::infinity();
  for (const auto& ends : iteration_ends) {
    from = std::max(from, first ? ends[first - 1] : 0.0);
    to = std::min(to, ends[total - 1]);
  }
  for (const auto& all : iteration_ends) {
    const auto ends = std::span(all).first(total);
    if (to > from) {
      const double completed = progress_at(ends, to) - progress_at(ends, from);
      periods.push_back(completed > 0 ? (to - from) / completed : 0.0);
    } else {
      periods.push_back((ends.back() - (first ? ends[first - 1] : 0.0)) / static_cast<double>(total - first));
    }
  }
  return periods;
}

namespace {

// Workers that do not wait for each other: each one's time per iteration over the window they all run in
// (shared_window_periods); the throughput is the sum of their rates.
Pace own_pace(const plan::Plan& plan, const engine::ReplayResult& replay, std::size_t first, std::size_t total) {
  Pace pace{{}, 0, "worker"};
  std::vector<std::vector<double>> workers;
  for (const auto& rank : replay.ranks)
    if (rank.iteration_end.size() >= total) workers.push_back(rank.iteration_end);
  auto periods = shared_window_periods(workers, first, total);
  for (double period : periods)
    if (period > 0) pace.throughput += plan.samples_per_worker_iteration / period;
  pace.iteration = distribution(std::move(periods));
  return pace;
}

// Backup workers: progress is the rounds the servers close, each with the first n - b gradients; the stragglers' late
// gradients are dropped and count for nothing. Rounds count until the first worker is done: after that the
// stragglers' leftover iterations close rounds on their own, which a real job (stopping after its rounds) would not
// run.
Pace round_pace(const plan::Plan& plan, const engine::ReplayResult& replay, std::size_t first) {
  Pace pace{{}, 0, "round"};
  double done = replay.simulated_seconds;
  for (const auto& rank : replay.ranks)
    if (!rank.iteration_end.empty()) done = std::min(done, rank.iteration_end.back());
  std::vector<double> rounds;
  for (double t : replay.servers.front().round_ends)
    if (t <= done) rounds.push_back(t);
  const std::size_t from = std::min(first, rounds.empty() ? 0 : rounds.size() - 1);
  std::vector<double> periods;
  for (std::size_t i = std::max<std::size_t>(from, 1); i < rounds.size(); ++i)
    periods.push_back(rounds[i] - rounds[i - 1]);
  pace.iteration = distribution(std::move(periods));
  if (rounds.size() > from + 1) {
    const double lo = rounds[from], hi = rounds.back();
    const auto& updates = replay.servers.front().updates;
    const auto applied = std::count_if(updates.begin(), updates.end(),
                                       [&](const engine::AppliedUpdate& u) { return u.time > lo && u.time <= hi; });
    pace.throughput = static_cast<double>(applied) * plan.samples_per_worker_iteration / (hi - lo);
  }
  return pace;
}

// Synchronous strategies: an iteration ends when its last rank finishes it (`ends`).
Pace time_iterations(const scenario::Scenario& s, const plan::Plan& plan, const engine::ReplayResult& replay,
                     const std::vector<double>& ends, std::size_t first) {
  if (strategies::is_asynchronous(s.training.strategy)) return own_pace(plan, replay, first, ends.size());
  if (s.training.strategy.backup_workers > 0 && !replay.servers.empty()) return round_pace(plan, replay, first);
  Pace pace;
  std::vector<double> durations;
  for (std::size_t i = first; i < ends.size(); ++i)
    durations.push_back(ends[i] - (i ? ends[i - 1] : 0.0));
  pace.iteration = distribution(std::move(durations));
  if (pace.iteration.mean > 0) pace.throughput = plan.workers * plan.samples_per_worker_iteration / pace.iteration.mean;
  return pace;
}

// Megatron-LM's model FLOPs per sample: forward and backward of the GEMM-like ops and attention cores.
double model_flops_per_sample(const models::Workload& w) {
  double flops = 0;
  for (const auto& l : w.layers)
    if (models::is_gemm_like(l.kind) || l.kind == models::LayerKind::attention)
      flops += l.forward_flops + l.backward_flops;
  return flops;
}

Utilization utilization(const scenario::Scenario& s, const RunResult& r) {
  Utilization u;
  if (const auto t = scenario::transformer_of(s.model))
    u.tokens_per_second = r.throughput * static_cast<double>(t->sequence);
  u.model_flops_per_iteration = model_flops_per_sample(s.model.workload) * r.global_batch;
  if (r.iteration.mean > 0 && r.strategy.time_per == "iteration") {
    u.tflops_per_gpu = u.model_flops_per_iteration / r.iteration.mean / r.gpus / 1e12;
    // The peak of the precision the GEMMs run in (amp: fp16 tensor cores).
    const auto math = calibration::math_precision(s.model.precision);
    if (s.gpu.peak_flops.count(math)) u.mfu = u.tflops_per_gpu * 1e12 / s.gpu.peak(math);
  }
  return u;
}

ParallelMetrics parallel_metrics(const plan::Plan& plan, const RunResult& r) {
  ParallelMetrics m;
  const auto& p = plan.parallel;
  if (!p.enabled()) return m;
  m.enabled = true;
  m.tensor = p.tensor;
  m.context = p.context;
  m.pipeline = p.pipeline;
  m.data = p.data;
  m.expert = p.expert;
  m.micro_batches = p.micro_batches;
  m.virtual_stages = p.virtual_stages;
  m.schedule = p.schedule;
  m.sequence_parallel = p.sequence_parallel;
  m.chunk_units = p.chunk_units;
  if (p.pipeline > 1 && r.iteration.mean > 0) m.bubble_fraction = r.breakdown.idle / r.iteration.mean;
  for (const auto& stage : p.stage_memory) {
    m.stage_memory.push_back(stage.total());
    m.stage_items.push_back(stage.items);
  }
  m.peak_micro_batches = p.peak_micro_batches;
  m.routed_tokens = p.routed_tokens;
  m.dropped_tokens = p.dropped_tokens;
  return m;
}

StrategyMetrics strategy_metrics(const scenario::Scenario& s, const plan::Plan& plan,
                                 const engine::ReplayResult& replay, double lo, double hi) {
  StrategyMetrics m;
  m.name = strategies::strategy_name(s.training.strategy);
  m.workers = plan.workers;
  m.servers = static_cast<int>(replay.servers.size());
  m.asynchronous = strategies::is_asynchronous(s.training.strategy);
  m.spectral_gap = plan.spectral_gap;
  if (plan.wire_bytes > 0) m.compression_ratio = plan.dense_bytes / plan.wire_bytes;
  const double ranks = static_cast<double>(std::max<std::size_t>(1, replay.ranks.size()));
  const double total_iterations = static_cast<double>(s.run.warmup_iterations + s.run.iterations);
  for (const auto& rank : replay.ranks) {
    m.bytes_received_per_worker += rank.bytes_received / total_iterations / ranks;
    m.gossip_rounds_per_worker +=
        static_cast<double>(rank.pushes_sent + rank.pushes_received) / total_iterations / ranks;
  }
  if (replay.servers.empty()) return m;
  const auto& first = replay.servers.front();
  std::vector<double> staleness;
  double lag = 0, applied = 0;
  for (const auto& u : first.updates) {
    staleness.push_back(u.staleness);
    lag += u.update_lag;
    if (m.staleness_histogram.size() <= static_cast<std::size_t>(u.staleness))
      m.staleness_histogram.resize(u.staleness + 1, 0);
    ++m.staleness_histogram[u.staleness];
    if (u.time > lo && u.time <= hi) ++applied;
  }
  m.staleness = distribution(std::move(staleness));
  if (!first.updates.empty()) m.mean_update_lag = lag / static_cast<double>(first.updates.size());
  if (hi > lo) m.updates_per_second = applied / (hi - lo);
  const double nic = s.cluster.nic.bandwidth;
  for (const auto& server : replay.servers) {
    m.dropped += server.dropped;
    if (replay.simulated_seconds <= 0) continue;
    m.server_bytes_per_second =
        std::max(m.server_bytes_per_second, (server.bytes_received + server.bytes_sent) / replay.simulated_seconds);
    if (nic > 0)
      m.server_nic_utilization = std::max(m.server_nic_utilization, std::max(server.bytes_received, server.bytes_sent) /
                                                                        (nic * replay.simulated_seconds));
  }
  return m;
}

} // namespace

Distribution distribution(std::vector<double> samples) {
  Distribution d;
  if (samples.empty()) return d;
  d.samples = samples;
  std::sort(samples.begin(), samples.end());
  // Nearest-rank percentile: the smallest sample with at least p% of the samples at or below it.
  auto percentile = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * samples.size()));
    return samples[std::clamp<std::size_t>(rank, 1, samples.size()) - 1];
  };
  d.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
  d.p50 = percentile(50);
  d.p90 = percentile(90);
  d.p99 = percentile(99);
  d.min = samples.front();
  d.max = samples.back();
  return d;
}

RunResult summarize(const scenario::Scenario& s, const plan::Plan& plan, const engine::ReplayResult& replay) {
  RunResult r;
  r.name = s.name;
  r.nodes = s.cluster.nodes;
  r.gpus = s.world_size();
  r.global_batch = std::llround(plan.workers * plan.samples_per_worker_iteration);
  r.sample_unit = s.model.workload.sample_unit;
  // A trace's kernels are the ones it recorded, whichever framework ran them.
  r.framework = s.model.trace ? s.model.trace->format + " trace's" : s.framework.name;
  r.fidelity = std::string(scenario::to_string(s.run.fidelity));
  r.fidelity_reason = s.run.fidelity_reason;
  r.gradient_bytes = plan.gradient_bytes;
  r.buckets = plan.buckets;
  r.allreduce_algorithms = plan.allreduce_algorithms;
  r.nccl = collectives::nccl_version_name(s.cluster.nccl_version);
  r.memory = plan.memory;
  r.kernels = plan.kernels;
  r.host_wait_seconds = plan.host_wait_seconds;
  r.warnings = plan.warnings;
  r.clock = plan.clock;
  r.slowest_gpu = plan.slowest_gpu;
  if (plan.slowest_gpu != 1) r.gpu_speed_sigma = s.stragglers.gpu_speed_sigma;
  r.synchronization_wait = plan.synchronization_wait;
  if (plan.synchronization_wait > 0) r.kernel_noise_sigma = s.stragglers.kernel_noise_sigma;
  r.simulated_seconds = replay.simulated_seconds;
  r.transfers = replay.transfers;
  r.replayed_iterations = replay.replayed_iterations;
  r.repeat_period = replay.repeat_period;
  r.total_iterations = s.run.warmup_iterations + s.run.iterations;
  r.scenario = scenario::to_json(s);

  // An iteration ends when its last rank finishes it.
  const std::size_t total = static_cast<std::size_t>(s.run.warmup_iterations + s.run.iterations);
  std::vector<double> ends(total, 0.0);
  for (const auto& rank : replay.ranks)
    for (std::size_t i = 0; i < std::min(total, rank.iteration_end.size()); ++i)
      ends[i] = std::max(ends[i], rank.iteration_end[i]);
  const std::size_t first = static_cast<std::size_t>(s.run.warmup_iterations);
  const auto pace = time_iterations(s, plan, replay, ends, first);
  r.iteration = pace.iteration;
  r.throughput = pace.throughput;
  if (s.dataset.samples > 0 && r.throughput > 0)
    r.epoch_seconds = static_cast<double>(s.dataset.samples) / r.throughput;
  r.epochs = s.dataset.epochs;
  r.price_per_hour = s.cluster.price_per_node_hour * s.cluster.nodes;
  r.cost_per_epoch = r.price_per_hour * r.epoch_seconds / 3600;
  r.cost_of_run =
      r.epoch_seconds > 0 ? r.cost_per_epoch * r.epochs : r.price_per_hour * r.iteration.mean * s.run.iterations / 3600;

  // Where the time of the measured iterations went, per rank, then averaged.
  const double lo_all = first ? ends[first - 1] : 0.0;
  const double hi_all = ends.back();
  const double measured = static_cast<double>(total - first);
  const double ranks = static_cast<double>(
      std::count_if(replay.ranks.begin(), replay.ranks.end(), [](const auto& rank) { return rank.simulated; }));
  const bool own_clock = strategies::is_asynchronous(s.training.strategy);
  for (const auto& g : plan.groups)
    r.groups.push_back({g.name, g.gpu, g.ranks, g.batch_per_gpu, g.kernel_seconds, g.bounds, {}});
  for (std::size_t index = 0; index < replay.ranks.size(); ++index) {
    const auto& rank = replay.ranks[index];
    if (!rank.simulated) continue; // coarse fidelity: another rank stood for it
    // Workers that do not wait for each other are timed over their own measured iterations, not the slowest's.
    double lo = lo_all, hi = hi_all;
    if (own_clock && rank.iteration_end.size() >= total) {
      lo = first ? rank.iteration_end[first - 1] : 0.0;
      hi = rank.iteration_end[total - 1];
    }
    const auto t = detail::attribute_time(plan.graph.program_of(static_cast<int>(index)), rank, lo, hi);
    const double scale = 1 / measured / ranks;
    r.breakdown.compute += t.compute * scale;
    r.breakdown.exposed_communication += t.communication() * scale;
    r.breakdown.exposed_tensor += t.tensor * scale;
    r.breakdown.exposed_pipeline += t.pipeline * scale;
    r.breakdown.exposed_expert += t.expert * scale;
    r.breakdown.exposed_data += t.data * scale;
    r.breakdown.idle += t.idle * scale;
    for (std::size_t g = 0; g < plan.groups.size(); ++g) {
      const auto& group = plan.groups[g];
      if (static_cast<int>(index) < group.first_rank || static_cast<int>(index) >= group.first_rank + group.ranks)
        continue;
      auto& b = r.groups[g].breakdown;
      const double per = 1 / measured / group.ranks;
      b.compute += t.compute * per;
      b.exposed_communication += t.communication() * per;
      b.exposed_data += t.data * per;
      b.idle += t.idle * per;
    }
    r.communication_seconds += t.communication_busy * scale;
    for (std::size_t i = first; i < std::min(total, rank.bytes_sent.size()); ++i)
      r.bytes_sent_per_gpu += rank.bytes_sent[i] * scale;
  }

  r.input = input_stage(s, replay, first, total);
  r.strategy = strategy_metrics(s, plan, replay, lo_all, hi_all);
  r.strategy.time_per = pace.per;
  r.strategy.barrier_wait = r.breakdown.idle;
  r.utilization = utilization(s, r);
  r.parallel = parallel_metrics(plan, r);

  for (const auto& link : replay.links) {
    if (link.bytes <= 0 || link.bandwidth <= 0 || replay.simulated_seconds <= 0) continue;
    r.busiest_links.push_back({link.name, link_kind(link.name), link.bandwidth, link.bytes,
                               link.bytes / (link.bandwidth * replay.simulated_seconds)});
  }
  // Links that carry the same bytes (the mirror images of a ring) come out equal only to rounding, which a replay
  // skipped past its steady state rounds otherwise: ranked to 30 bits of utilization (1e-9), then by name.
  const auto ranked = [](double utilization) {
    int exponent = 0;
    const double mantissa = std::frexp(utilization, &exponent);
    return std::ldexp(std::round(std::ldexp(mantissa, 30)), exponent - 30);
  };
  std::sort(r.busiest_links.begin(), r.busiest_links.end(), [&](const LinkUsage& a, const LinkUsage& b) {
    const double x = ranked(a.utilization), y = ranked(b.utilization);
    return x != y ? x > y : a.name < b.name;
  });
  std::map<std::string, int> taken; // of each kind
  for (const auto& l : r.busiest_links)
    if (taken[l.kind]++ < static_cast<int>(kBusiestOfAKind)) r.busiest_links_by_kind.push_back(l);
  std::stable_sort(r.busiest_links_by_kind.begin(), r.busiest_links_by_kind.end(),
                   [](const LinkUsage& a, const LinkUsage& b) { return a.kind < b.kind; });
  if (r.busiest_links.size() > kBusiestLinks) r.busiest_links.resize(kBusiestLinks);
  r.energy = iteration_energy(s, r);
  return r;
}

} // namespace dtsim::report

namespace dtsim::report {

// The run's steps: training.steps, else its epochs of the dataset at the global batch (0: unknown).
namespace {
std::int64_t run_steps(const scenario::Scenario& s, const RunResult& r) {
  if (s.training.steps > 0) return s.training.steps;
  if (s.dataset.samples <= 0 || r.global_batch <= 0) return 0;
  const double samples = static_cast<double>(s.dataset.samples) * s.dataset.epochs;
  return static_cast<std::int64_t>(std::ceil(samples / static_cast<double>(r.global_batch)));
}
} // namespace

void add_warmup_stage(const scenario::Scenario& s, const RunResult& dense, RunResult& r) {
  auto& st = r.stages;
  st.warmup_steps = s.training.compression.warmup_steps;
  st.warmup_iteration = dense.iteration.mean;
  st.run_steps = run_steps(s, r);
  if (st.run_steps <= 0) return;
  const double n = static_cast<double>(st.run_steps);
  const double warm = static_cast<double>(std::min(st.warmup_steps, st.run_steps));
  const double run_seconds = warm * dense.iteration.mean + (n - warm) * r.iteration.mean;
  st.run_iteration = run_seconds / n;
  // Epochs, cost and energy over both stages: the warm-up's steps at the dense pace and draw.
  const double epochs = std::max(1, r.epochs);
  if (r.epoch_seconds > 0) r.epoch_seconds = run_seconds / epochs;
  r.cost_per_epoch = r.price_per_hour * r.epoch_seconds / 3600;
  r.cost_of_run = r.price_per_hour * run_seconds / 3600;
  if (!r.energy.known) return;
  const double kwh = warm * dense.energy.kwh_per_iteration + (n - warm) * r.energy.kwh_per_iteration;
  if (r.energy.kwh_of_run > 0) r.energy.co2_kg_of_run *= kwh / r.energy.kwh_of_run;
  r.energy.kwh_of_run = kwh;
  if (r.energy.kwh_per_epoch > 0) r.energy.kwh_per_epoch = kwh / epochs;
}

std::string link_kind(std::string_view name) {
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("nvlink") || has("nvswitch")) return "NVLink";
  if (has("pcie")) return "PCIe";
  if (has("-nic")) return "NIC";
  if (has("uplink") || has("spine") || has("leaf") || has("core") || has("switch") || has("router"))
    return "network switches";
  return "other";
}

} // namespace dtsim::report
