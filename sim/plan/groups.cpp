// Data parallelism over a cluster that mixes GPU types. Every rank runs the same collectives on the same gradient
// buckets (they depend on the model, not on the GPU or the batch), so each group's program is planned as a uniform
// cluster of that group's GPU would plan it, on its own profile and micro-batch, and each rank replays its group's
// program: the all-reduces wait for the slowest group, as they do on a real cluster.
//
// With equal batches every rank takes the scenario's micro-batch and the fastest GPUs wait. With proportional
// batches the global batch (micro-batch x GPUs) is split in proportion to each GPU's speed at its own batch
// (samples per second of its kernels), refined three times since a kernel's time is not linear in its batch (waves,
// launches, fixed optimizer passes): the load balancing of LB-BSP (Chen et al. 2020, "Semi-Dynamic Load Balancing")
// and of HetPipe's data-parallel workers (Park et al., USENIX ATC 2020). Whole samples: the global batch is kept to
// within rounding.
#include "sim/plan/data_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dtsim::plan::detail {
namespace {

scenario::Scenario group_scenario(const scenario::Scenario& s, const scenario::GpuGroup& g, std::int64_t batch) {
  auto one = s;
  one.groups.clear();
  one.gpu = g.gpu;
  one.cluster.gpu = g.gpu_name;
  one.cluster.compute_units = g.gpu.compute_units;
  one.cluster.memory_bandwidth = g.gpu.memory_bandwidth * g.gpu.memory_efficiency;
  one.model.batch_per_gpu = static_cast<int>(batch);
  return one;
}

double kernel_seconds(const Plan& plan) {
  return std::accumulate(plan.kernels.begin(), plan.kernels.end(), 0.0,
                         [](double sum, const KernelRow& k) { return sum + k.seconds; });
}

Plan plan_group(const scenario::Scenario& s, const scenario::GpuGroup& g, std::int64_t batch) {
  try {
    return DataParallelPlanner(group_scenario(s, g, batch)).build();
  } catch (const PlanError& e) {
    throw PlanError(fmt::format("group \"{}\" ({} GPUs of {} at micro-batch {}): {}", g.name, g.ranks, g.gpu.name,
                                batch, e.what()));
  }
}

// Micro-batches in proportion to `rate` (samples/s of one GPU of each group) that add up to `total` over the ranks:
// each group's share rounded down, the samples left given one GPU-group at a time to the largest remainders.
std::vector<std::int64_t> split(const std::vector<scenario::GpuGroup>& groups, const std::vector<double>& rate,
                                std::int64_t total) {
  double capacity = 0;
  for (std::size_t i = 0; i < groups.size(); ++i)
    capacity += rate[i] * groups[i].ranks;
  std::vector<std::int64_t> batch(groups.size());
  std::vector<double> remainder(groups.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const double exact = static_cast<double>(total) * rate[i] / capacity;
    batch[i] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(exact)));
    remainder[i] = exact - static_cast<double>(batch[i]);
    given += batch[i] * groups[i].ranks;
  }
  // Whole samples per GPU: add one to a group while it still fits in the total, largest remainder first.
  std::vector<std::size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t i : order)
    if (given + groups[i].ranks <= total) {
      ++batch[i];
      given += groups[i].ranks;
    }
  return batch;
}

} // namespace

Plan make_grouped_plan(const scenario::Scenario& s) {
  const auto& groups = s.groups;
  std::vector<std::int64_t> batch(groups.size(), s.model.batch_per_gpu);
  std::vector<Plan> plans;
  for (std::size_t i = 0; i < groups.size(); ++i)
    plans.push_back(plan_group(s, groups[i], batch[i]));
  if (s.batch_split == scenario::BatchSplit::proportional) {
    const std::int64_t total = static_cast<std::int64_t>(s.model.batch_per_gpu) * s.world_size();
    for (int round = 0; round < 3; ++round) {
      std::vector<double> rate;
      for (std::size_t i = 0; i < groups.size(); ++i)
        rate.push_back(static_cast<double>(batch[i]) / kernel_seconds(plans[i]));
      const auto next = split(groups, rate, total);
      if (next == batch) break;
      batch = next;
      for (std::size_t i = 0; i < groups.size(); ++i)
        plans[i] = plan_group(s, groups[i], batch[i]);
    }
  }

  // The first group's plan carries the graph (groups, servers, slowdowns) and its kernel table stands for rank 0;
  // each group contributes its program.
  Plan out = std::move(plans[0]);
  out.graph.rank_program.assign(static_cast<std::size_t>(s.world_size()), 0);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (i > 0) out.graph.programs.push_back(std::move(plans[i].graph.programs.at(0)));
    for (int r = groups[i].first_rank; r < groups[i].first_rank + groups[i].ranks; ++r)
      out.graph.rank_program[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(i);
    const auto& kernels = i == 0 ? out.kernels : plans[i].kernels;
    out.groups.push_back({groups[i].name, groups[i].gpu.name, groups[i].first_rank, groups[i].ranks, batch[i],
                          i == 0 ? kernel_seconds(out) : kernel_seconds(plans[i]), bound_seconds(kernels)});
  }
  const double accumulation = out.samples_per_worker_iteration / static_cast<double>(batch[0]);
  double samples = 0;
  for (std::size_t i = 0; i < groups.size(); ++i)
    samples += static_cast<double>(batch[i]) * groups[i].ranks;
  out.samples_per_worker_iteration = accumulation * samples / out.workers;
  graph::validate(out.graph); // every group's program posts the same collectives in the same order
  return out;
}

} // namespace dtsim::plan::detail
