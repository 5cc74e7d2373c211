// The human-readable report of `dtsim run`.
#include "sim/collectives/nccl_release.hpp"
#include "sim/report/format.hpp"
#include "sim/report/result.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dtsim::report {

namespace {

std::string format_parallel(const RunResult& r) {
  const auto& p = r.parallel;
  std::string out = "\nParallelism\n";
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<28} {}\n", label, value);
  };
  line("grid", fmt::format("tensor {}{} x pipeline {} x data {}{}{}", p.tensor,
                           p.context > 1 ? fmt::format(" x context {}", p.context) : std::string(), p.pipeline, p.data,
                           p.expert > 1 ? fmt::format(" (experts over {})", p.expert) : std::string(),
                           p.sequence_parallel ? ", sequence parallel" : ""));
  if (p.pipeline > 1)
    line("pipeline", fmt::format("{} micro-batches, {}{}, blocks per chunk {}", p.micro_batches, p.schedule,
                                 p.virtual_stages > 1 ? fmt::format(" with {} chunks per GPU", p.virtual_stages) : "",
                                 fmt::join(p.chunk_units, "/")));
  if (p.pipeline > 1)
    line("pipeline bubble", fmt::format("{} of the iteration ({} {} of activations on the first stage at its peak)",
                                        format_percent(p.bubble_fraction), p.peak_micro_batches,
                                        p.virtual_stages > 1 ? "micro-batch chunks" : "micro-batches"));
  if (p.routed_tokens > 0)
    line("MoE tokens dropped", fmt::format("{:.0f} of {:.0f} per iteration ({})", p.dropped_tokens, p.routed_tokens,
                                           format_percent(p.dropped_tokens / p.routed_tokens)));
  std::string stages;
  for (std::size_t i = 0; i < p.stage_memory.size(); ++i)
    stages += (i ? ", " : "") + format_bytes(p.stage_memory[i]);
  line("memory per GPU by stage", stages);
  return out;
}

} // namespace

std::string format_summary(const RunResult& r) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<28} {}\n", label, value);
  };
  out += fmt::format("{}: {} nodes, {} GPUs, global batch {} {}, {} kernels\n\n", r.name, r.nodes, r.gpus,
                     r.global_batch, r.sample_unit, r.framework);

  out += "Iteration\n";
  line("time (mean)",
       format_seconds(r.iteration.mean) + (r.strategy.time_per == "iteration" ? "" : " per " + r.strategy.time_per));
  line("time (p50 / p90 / p99)", format_seconds(r.iteration.p50) + " / " + format_seconds(r.iteration.p90) + " / " +
                                     format_seconds(r.iteration.p99));
  line("throughput", format_rate(r.throughput, r.sample_unit));
  if (r.utilization.tokens_per_second > 0) line("tokens", format_rate(r.utilization.tokens_per_second, "tokens"));
  if (r.utilization.tflops_per_gpu > 0)
    line("model FLOP/s per GPU", fmt::format("{:.1f} TFLOP/s, MFU {} (Megatron-LM's count: every GEMM, no "
                                             "recomputation)",
                                             r.utilization.tflops_per_gpu, format_percent(r.utilization.mfu)));
  if (r.stages.warmup_steps > 0) {
    // The figures above are the compressed stage's; the warm-up sends dense gradients.
    line("dense warm-up", fmt::format("{} per iteration for the first {} steps (compression starts after)",
                                      format_seconds(r.stages.warmup_iteration), r.stages.warmup_steps));
    if (r.stages.run_steps > 0)
      line("over the run", fmt::format("{} per iteration, mean of {} steps", format_seconds(r.stages.run_iteration),
                                       r.stages.run_steps));
  }
  if (r.epoch_seconds > 0) line("time per epoch", format_seconds(r.epoch_seconds));
  line("fidelity", r.fidelity_reason.empty() ? r.fidelity : "auto: " + r.fidelity_reason);
  for (const auto& warning : r.warnings)
    line("warning", warning);

  const double total = r.iteration.mean > 0 ? r.iteration.mean : 1;
  out += "\nWhere the time goes (per iteration, mean over GPUs)\n";
  line("compute", format_seconds(r.breakdown.compute) + "  (" + format_percent(r.breakdown.compute / total) + ")");
  if (r.host_wait_seconds > 0)
    line("  waiting for the host", format_seconds(r.host_wait_seconds) + "  (kernels issued slower than they run; "
                                                                         "rank 0)");
  if (r.clock.capped) // a profile without clock figures (sm_clock_mhz 0) names no clock
    line("  at the power limit",
         fmt::format("{}its math at {} of its burst rate (its kernels would draw {:.0f} W at burst clocks)",
                     r.clock.sm_clock_mhz > 0 ? fmt::format("SM clock about {:.0f} MHz: ", r.clock.sm_clock_mhz) : "",
                     format_percent(r.clock.rate), r.clock.demand_watts));
  if (r.slowest_gpu > 1)
    line("  at the slowest GPU's pace",
         fmt::format("its compute {} longer than the median GPU's (GPUs of one model differ: sigma {:.2f}%, from "
                     "Sinha et al. SC'22)",
                     format_percent(r.slowest_gpu - 1), 100 * r.gpu_speed_sigma));
  if (r.synchronization_wait > 0)
    line("  at synchronizations",
         fmt::format("its compute {} longer waiting for each group's slowest member (one kernel's time varies by "
                     "sigma {:.2f}%, measured)",
                     format_percent(r.synchronization_wait), 100 * r.kernel_noise_sigma));
  line("exposed communication", format_seconds(r.breakdown.exposed_communication) + "  (" +
                                    format_percent(r.breakdown.exposed_communication / total) + ")");
  const auto& b = r.breakdown;
  if (r.parallel.enabled)
    for (const auto& [label, seconds] :
         {std::pair{r.parallel.context > 1 ? "  tensor + context parallel" : "  tensor parallel", b.exposed_tensor},
          {"  pipeline transfers", b.exposed_pipeline},
          {"  expert all-to-all", b.exposed_expert}, // waiting for the busiest expert included
          {"  data parallel", b.exposed_data}})
      line(label, format_seconds(seconds) + "  (" + format_percent(seconds / total) + ")");
  line(r.parallel.pipeline > 1 ? "idle (pipeline bubble)" : "idle",
       format_seconds(r.breakdown.idle) + "  (" + format_percent(r.breakdown.idle / total) + ")");
  line("communication (total)", format_seconds(r.communication_seconds) + "  (hidden: " +
                                    format_seconds(r.communication_seconds - r.breakdown.exposed_communication) + ")");

  if (!r.groups.empty()) {
    out += "\nGPU groups (who waits for whom: each group's compute, its communication left exposed, its idle time)\n";
    out += fmt::format("  {:<14} {:>6} {:>12} {:>14} {:>14} {:>14} {:>14}\n", "group", "GPUs", "micro-batch", "kernels",
                       "compute", "exposed comm.", "idle");
    for (const auto& g : r.groups)
      out += fmt::format("  {:<14} {:>6} {:>12} {:>14} {:>14} {:>14} {:>14}\n", g.name, g.ranks, g.batch_per_gpu,
                         g.kernel_seconds > 0 ? format_seconds(g.kernel_seconds) : "-",
                         format_seconds(g.breakdown.compute), format_seconds(g.breakdown.exposed_communication),
                         format_seconds(g.breakdown.idle));
  }

  if (r.input.modeled) {
    const auto& in = r.input;
    out += "\nInput pipeline (data loading on each node's CPUs, the next batch while the GPU trains)\n";
    line("input pipeline", format_rate(in.samples_per_second, r.sample_unit) + " per node, " +
                               format_seconds(in.loader_seconds) + " per iteration per GPU");
    std::string rates = "CPU " + format_rate(in.cpu_samples_per_second, r.sample_unit);
    if (in.storage_samples_per_second > 0)
      rates += ", storage " + format_rate(in.storage_samples_per_second, r.sample_unit);
    line("loading rates", rates);
    line("GPU work per iteration",
         format_seconds(in.gpu_seconds) + (in.bounds_iteration()
                                               ? fmt::format(": the input pipeline bounds the iteration (the GPU waits "
                                                             "{} for data)",
                                                             format_seconds(in.loader_seconds - in.gpu_seconds))
                                               : std::string(": the input pipeline is hidden behind it")));
  }

  if (r.parallel.enabled) out += format_parallel(r);

  const auto& st = r.strategy;
  if (st.name != "allreduce" || st.compression_ratio != 1) {
    out += fmt::format("\nStrategy: {}{}\n", st.name, st.asynchronous ? " (workers do not wait for each other)" : "");
    line("workers",
         fmt::format("{} GPUs{}", st.workers,
                     st.servers > 0 ? fmt::format(", {} server shard{}", st.servers, st.servers == 1 ? "" : "s")
                                    : std::string()));
    if (st.servers > 0) {
      line("updates applied", format_rate(st.updates_per_second, "gradients"));
      line("staleness (mean / p99 / max)",
           fmt::format("{:.2f} / {:.0f} / {:.0f} iterations", st.staleness.mean, st.staleness.p99, st.staleness.max));
      line("update lag (mean)",
           fmt::format("{:.2f} updates between a gradient's read and its update", st.mean_update_lag));
      if (st.dropped > 0) line("dropped gradients", fmt::format("{} (late for their round)", st.dropped));
      line("busiest server", format_bandwidth(st.server_bytes_per_second) + ", NIC " +
                                 format_percent(st.server_nic_utilization) + " busy");
    }
    line("waiting on others", format_seconds(st.barrier_wait) + " per iteration");
    line("bytes received per worker", format_bytes(st.bytes_received_per_worker) + " per iteration");
    if (st.gossip_rounds_per_worker > 0)
      line("gossip rounds per worker",
           fmt::format("{:.2f} per iteration (pushes sent and received)", st.gossip_rounds_per_worker));
    if (st.spectral_gap >= 0)
      line("spectral gap",
           fmt::format("{:.4f} (1 - |lambda_2| of the averaging; larger mixes faster)", st.spectral_gap));
    if (st.compression_ratio != 1)
      line("compression", fmt::format("{:.1f}x fewer gradient bytes", st.compression_ratio));
  }

  out += "\nTraffic\n";
  line("gradients reduced",
       format_bytes(r.gradient_bytes) + fmt::format(" in {} bucket{}", r.buckets, r.buckets == 1 ? "" : "s"));
  if (!r.allreduce_algorithms.empty())
    line("collective algorithms", fmt::format("{}", fmt::join(r.allreduce_algorithms, ", ")));
  // An older release's choices differ (nccl_release.hpp): said wherever the scenario named one.
  if (!r.nccl.empty() && r.nccl != collectives::nccl_version_name(collectives::kNcclTuningVersion))
    line("NCCL release", fmt::format("{} (training.nccl; the tuning's constants are {}'s)", r.nccl,
                                     collectives::nccl_version_name(collectives::kNcclTuningVersion)));
  line("bytes sent per GPU", format_bytes(r.bytes_sent_per_gpu) + " per iteration");
  if (!r.busiest_links.empty()) {
    out += "\nBusiest links (mean utilization over the run)\n";
    for (const auto& l : r.busiest_links)
      line(l.name, format_percent(l.utilization) + " of " + format_bandwidth(l.bandwidth));
  }

  if (r.price_per_hour > 0) {
    out += "\nCost (USD)\n";
    line("cluster", fmt::format("${:.2f} per hour", r.price_per_hour));
    if (r.epoch_seconds > 0) {
      line("one epoch", fmt::format("${:.2f}", r.cost_per_epoch));
      line(fmt::format("training run ({} epoch{})", r.epochs, r.epochs == 1 ? "" : "s"),
           fmt::format("${:.2f} over {}", r.cost_of_run, format_seconds(r.epoch_seconds * r.epochs)));
    } else {
      line("simulated iterations", fmt::format("${:.4f}", r.cost_of_run));
    }
  }

  if (r.energy.known) {
    const auto& e = r.energy;
    out += "\nEnergy (GPU draw by what each kernel is bound by; host, network and PUE from the scenario)\n";
    line("GPU draw",
         fmt::format("{} mean ({} at compute-bound draw, {} streaming, the rest idle)", format_power(e.gpu_watts),
                     format_percent(e.math_share), format_percent(e.memory_share)));
    if (!e.group_gpu_watts.empty()) {
      std::string by;
      for (std::size_t i = 0; i < r.groups.size() && i < e.group_gpu_watts.size(); ++i)
        by += fmt::format("{}{} {}", i ? ", " : "", r.groups[i].name, format_power(e.group_gpu_watts[i]));
      line("GPU draw by group", by);
    }
    line("node draw",
         e.host_watts > 0
             ? fmt::format("{} ({} of it host and network)", format_power(e.node_watts), format_power(e.host_watts))
             : fmt::format("{} (its GPUs alone: no figure for the host)", format_power(e.node_watts)));
    line("cluster at the meter", format_power(e.cluster_watts));
    if (r.epoch_seconds > 0) {
      line("one epoch", format_energy(e.kwh_per_epoch));
      line(fmt::format("training run ({} epoch{})", r.epochs, r.epochs == 1 ? "" : "s"), format_energy(e.kwh_of_run));
    } else {
      line("per iteration", format_energy(e.kwh_per_iteration));
    }
    if (e.co2_kg_of_run > 0) line("CO2 of the run", format_co2(e.co2_kg_of_run));
  }

  out += "\nMemory per GPU\n" + format_memory(r.memory);

  out += fmt::format("\nSimulated {} of training ({} network transfers).\n", format_seconds(r.simulated_seconds),
                     r.transfers);
  if (r.replayed_iterations > 0 && r.replayed_iterations < r.total_iterations) {
    const int first = r.replayed_iterations - r.repeat_period + 1; // 1-based, as the iterations are counted here
    out += fmt::format("Replayed {} of {} iterations: {} repeated {} (every rank's timeline to 1e-7 of its length, "
                       "every link's bytes), and the rest repeat {}.\n",
                       r.replayed_iterations, r.total_iterations,
                       r.repeat_period == 1 ? fmt::format("iteration {}", r.replayed_iterations)
                                            : fmt::format("iterations {}-{}", first, r.replayed_iterations),
                       r.repeat_period == 1 ? fmt::format("iteration {}", first - 1)
                                            : fmt::format("{}-{}", first - r.repeat_period, first - 1),
                       r.repeat_period == 1 ? "it" : "them");
  }
  return out;
}

} // namespace dtsim::report
