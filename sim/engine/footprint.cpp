// The replay's memory, estimated from its plan (footprint.hpp), and the refusal of one past its limit.
#include "sim/engine/footprint.hpp"

#include <sys/resource.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unistd.h>
#include <vector>

namespace dtsim::engine {

std::string describe_bytes(double bytes) {
  return bytes >= double(1 << 30) ? fmt::format("{:.1f} GiB", bytes / double(1 << 30))
                                  : fmt::format("{:.0f} MiB", bytes / double(1 << 20));
}

namespace {

std::string count(double n) {
  if (n >= 1e9) return fmt::format("{:.3g} billion", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.3g} million", n / 1e6);
  return fmt::format("{}", static_cast<long long>(std::llround(n)));
}

} // namespace

Footprint estimate_footprint(const topologies::ClusterSpec& cluster, const graph::ExecutionGraph& graph,
                             const ReplayOptions& options) {
  Footprint f;
  f.ranks = cluster.gpu_count();
  f.iterations = options.iterations;
  // Ops per program, then over the ranks that run each program.
  std::vector<double> ranks_of(graph.programs.size(), 0);
  for (const auto p : graph.rank_program)
    ++ranks_of.at(p);
  double ops_run = 0;
  for (std::size_t p = 0; p < graph.programs.size(); ++p) {
    const double ops = static_cast<double>(graph.programs[p].ops.size());
    f.graph_ops += ops;
    if (ops > 0) f.simulated_ranks += static_cast<std::int64_t>(ranks_of[p]);
    ops_run += ops * ranks_of[p];
  }
  f.intervals = ops_run * options.iterations;
  f.group_slots = static_cast<double>(graph.groups.size()) * static_cast<double>(graph.rank_count());
  f.bytes = kProcessBytes + kBytesPerRank * static_cast<double>(f.ranks) + kBytesPerInterval * f.intervals +
            kBytesPerGroupSlot * f.group_slots + kBytesPerGraphOp * f.graph_ops;
  return f;
}

double physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

double address_space_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(limit.rlim_cur);
}

double default_memory_limit() {
  // Under an address-space limit (ulimit -v, as batch schedulers set) the simulation's reservations count against
  // that, not the machine's memory: 3/4 of the smaller.
  const double space = address_space_limit();
  return 0.75 * (space > 0 ? std::min(space, physical_memory()) : physical_memory());
}

std::string describe_limit(double limit, bool from_flag, int jobs) {
  const std::string share =
      jobs > 1 ? fmt::format(", the share of each of {} simulations run at once (--jobs)", jobs) : "";
  if (from_flag) return fmt::format("{} (--max-memory{})", describe_bytes(limit), share);
  const double space = address_space_limit();
  if (space > 0 && space < physical_memory())
    return fmt::format("{} (3/4 of the {} of address space this process may take, ulimit -v{}; --max-memory sets "
                       "another)",
                       describe_bytes(limit), describe_bytes(space), share);
  return fmt::format("{} (3/4 of this machine's {}{}; --max-memory sets another)", describe_bytes(limit),
                     describe_bytes(physical_memory()), share);
}

void check_footprint(const Footprint& f, const ReplayOptions& options) {
  if (options.memory_limit <= 0 || f.bytes <= options.memory_limit) return;
  const double per_rank =
      kBytesPerRank +
      (f.simulated_ranks > 0 ? kBytesPerInterval * f.intervals / static_cast<double>(f.simulated_ranks) : 0);
  const double ranks_that_fit = std::floor((options.memory_limit - kProcessBytes) / per_rank);
  std::string message =
      fmt::format("the simulation would need about {} of memory, over the limit of {}: {} ranks (cluster.nodes x "
                  "cluster.gpus_per_node) at {:.0f} KiB each, {}",
                  describe_bytes(f.bytes),
                  options.memory_limit_text.empty() ? describe_bytes(options.memory_limit) : options.memory_limit_text,
                  count(static_cast<double>(f.ranks)), kBytesPerRank / 1024,
                  describe_bytes(kBytesPerRank * static_cast<double>(f.ranks)));
  if (f.intervals > 0)
    message += fmt::format(
        "; {} timeline entries ({} op executions per iteration over {} simulated ranks, x {} iterations with the "
        "warm-up: run.iterations + run.warmup_iterations) at {:.0f} B each, {}",
        count(f.intervals), count(f.intervals / std::max(1, f.iterations)), count(double(f.simulated_ranks)),
        f.iterations, kBytesPerInterval, describe_bytes(kBytesPerInterval * f.intervals));
  if (f.group_slots * kBytesPerGroupSlot > 0.1 * f.bytes)
    message += fmt::format("; {} communicator slots (groups x ranks), {}", count(f.group_slots),
                           describe_bytes(kBytesPerGroupSlot * f.group_slots));
  // What would fit: fewer iterations where the timelines dominate, fewer ranks always.
  std::vector<std::string> remedies;
  const double timelines = kBytesPerInterval * f.intervals;
  if (timelines > 0.5 * f.bytes && f.iterations > 1) {
    const double its = std::floor(f.iterations * (options.memory_limit - (f.bytes - timelines)) / timelines);
    if (its >= 1) remedies.push_back(fmt::format("{} iteration(s) with the warm-up", count(its)));
  }
  if (ranks_that_fit >= 1) remedies.push_back(fmt::format("{} ranks at this cost per rank", count(ranks_that_fit)));
  message += remedies.empty() ? ". Neither fewer iterations nor fewer ranks fit the limit"
                              : fmt::format(". About {} would fit", fmt::join(remedies, ", or "));
  message += " (with tensor parallelism, run.fidelity \"coarse\" simulates one rank per tensor-parallel group).";
  throw ResourceError(message);
}

} // namespace dtsim::engine
