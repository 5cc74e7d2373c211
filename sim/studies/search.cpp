#include "sim/studies/search.hpp"

#include "sim/graph/estimate.hpp"
#include "sim/plan/layout_price.hpp"
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/points.hpp"
#include "sim/studies/resume.hpp"
#include "sim/studies/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

namespace dtsim::studies::search {

using scenario::PipelineSchedule;
using scenario::Recompute;

namespace {

// The model's transformer configuration: model.transformer, or the published one behind a transformer preset.
std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) out.push_back(i);
  return out;
}

double gib(double bytes) {
  return bytes / (1024.0 * 1024.0 * 1024.0);
}

} // namespace

Space space_of(const scenario::Scenario& base, std::vector<int> node_counts) {
  Space space;
  space.gpus_per_node = base.cluster.gpus_per_node;
  space.node_counts = node_counts.empty() ? std::vector<int>{base.cluster.nodes} : std::move(node_counts);
  const auto& workload = base.model.workload;
  space.tensor_splits = workload.tensor_splits();
  if (const auto transformer = scenario::transformer_of(base.model); transformer && space.tensor_splits)
    space.heads = transformer->heads;
  if (space.tensor_splits && base.parallelism.tensor > space.gpus_per_node) space.wide_tensor = base.parallelism.tensor;
  space.blocks = workload.block_count();
  space.experts = workload.expert_count();
  space.global_batch = base.global_batch();
  if (!base.parallelism.model_parallel()) space.global_batch *= base.training.strategy.accumulation;
  if (base.model.trace && base.model.trace->format == "pytorch-profiler")
    space.recorded_batch = base.model.batch_per_gpu;
  return space;
}

std::vector<Candidate> enumerate(const Space& space) {
  std::vector<Candidate> out;
  for (int nodes : space.node_counts) {
    const int gpus = nodes * space.gpus_per_node;
    if (space.recorded_batch > 0) {
      out.push_back(
          {nodes, 1, 1, gpus, 1, space.recorded_batch, 1, PipelineSchedule::one_f_one_b, 1, 0, Recompute::none, false});
      continue;
    }
    std::vector<int> tensor_degrees;
    for (int t = 1; t <= space.gpus_per_node; t *= 2)
      if (space.gpus_per_node % t == 0) tensor_degrees.push_back(t);
    if (space.wide_tensor > 0 && gpus % space.wide_tensor == 0) tensor_degrees.push_back(space.wide_tensor);
    for (int t : tensor_degrees) {
      if (t > 1 && (space.heads > 0 ? space.heads % t != 0 : !space.tensor_splits)) continue;
      for (int p : divisors(gpus / t)) {
        if (p > 1 && p > space.blocks) continue;
        const int d = gpus / (t * p);
        for (int e : divisors(d)) {
          if (e > 1 && (space.experts == 0 || space.experts % e != 0)) continue;
          for (int b : {1, 2, 4, 8}) {
            if (space.global_batch % (b * d) != 0) continue;
            // More micro-batches than an int holds: the screen refuses the candidate (the format's bound).
            const int m =
                static_cast<int>(std::min<std::int64_t>(space.global_batch / (b * d), std::numeric_limits<int>::max()));
            std::vector<std::pair<PipelineSchedule, int>> schedules{{PipelineSchedule::one_f_one_b, 1}};
            if (p > 1 && space.blocks % (2 * p) == 0 && m % p == 0)
              schedules.emplace_back(PipelineSchedule::interleaved, 2);
            const std::vector<int> stages = p == 1 ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1};
            for (const auto& [schedule, chunks] : schedules)
              for (int zero : stages)
                for (auto recompute : {Recompute::none, Recompute::selective, Recompute::full})
                  for (bool sp : t > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false})
                    out.push_back({nodes, t, p, d, e, b, m, schedule, chunks, zero, recompute, sp});
          }
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

scenario::Fidelity fidelity_of(const Candidate& c, const Options& options, int gpus_per_node) {
  const bool coarse_allowed = c.model_parallel() && c.tensor <= gpus_per_node;
  if (options.fidelity && (*options.fidelity != scenario::Fidelity::coarse || coarse_allowed)) return *options.fidelity;
  return coarse_allowed ? scenario::Fidelity::coarse : scenario::Fidelity::aggregate;
}

scenario::Scenario candidate_scenario(const scenario::Scenario& base, const Candidate& c, const Options& options) {
  auto document = scenario::to_json(base);
  document["cluster"]["nodes"] = c.nodes;
  document["model"]["batch_per_gpu"] = c.micro_batch;
  auto& training = document["training"];
  training["zero_stage"] = c.zero_stage;
  training["recompute"] = std::string(scenario::to_string(c.recompute));
  training["strategy"]["accumulation"] = c.model_parallel() ? 1 : c.micro_batches;
  if (c.model_parallel()) {
    // The base's own section (order, routing) where it has one; the layout is the candidate's.
    auto section = document.contains("parallelism") ? document["parallelism"] : nlohmann::json::object();
    for (const char* derived : {"data", "stages", "global_batch"})
      section.erase(derived);
    section["tensor"] = c.tensor;
    section["pipeline"] = c.pipeline;
    section["expert"] = c.expert;
    section["micro_batches"] = c.micro_batches;
    section["schedule"] = std::string(scenario::to_string(c.schedule));
    section["virtual_stages"] = c.virtual_stages;
    section["sequence_parallel"] = c.sequence_parallel;
    document["parallelism"] = std::move(section);
  } else {
    document.erase("parallelism");
  }
  scenario::keep_applicable_overlaps(document, c.sequence_parallel,
                                     c.schedule == scenario::PipelineSchedule::interleaved && c.virtual_stages > 1);
  auto& run = document["run"];
  run["fidelity"] = std::string(scenario::to_string(fidelity_of(c, options, base.cluster.gpus_per_node)));
  if (options.iterations) run["iterations"] = *options.iterations;
  if (options.warmup_iterations) run["warmup_iterations"] = *options.warmup_iterations;
  return scenario::parse_scenario(document.dump(), base.origin);
}

namespace {

// One candidate screened: whether its scenario validates and fits; `built` gets the scenario when it validates, for
// the estimate to price without building it again.
Screened screen_one(const scenario::Scenario& base, const Candidate& c, const Options& options,
                    std::optional<scenario::Scenario>& built) {
  Screened s;
  s.candidate = c;
  try {
    built = candidate_scenario(base, c, options);
  } catch (const scenario::ScenarioError& e) {
    s.verdict = Verdict::invalid;
    s.reason = e.pointer().empty() ? e.detail() : fmt::format("{}: {}", e.pointer(), e.detail());
    return s;
  }
  try {
    const auto memory = plan::estimate_memory(*built);
    s.memory_bytes = memory.total();
    s.capacity_bytes = memory.capacity;
    if (!memory.fits()) {
      s.verdict = Verdict::does_not_fit;
      s.reason = fmt::format("needs {:.2f} GiB per GPU of {:.2f} GiB", gib(s.memory_bytes), gib(s.capacity_bytes));
    }
  } catch (const std::exception&) {
    // No estimate (a layout the memory model does not know): the simulation's plan says whether it fits.
  }
  return s;
}

} // namespace

std::vector<Screened> screen(const scenario::Scenario& base, const std::vector<Candidate>& candidates,
                             const Options& options) {
  std::vector<Screened> out;
  out.reserve(candidates.size());
  std::optional<scenario::Scenario> built;
  for (const auto& c : candidates)
    out.push_back(screen_one(base, c, options, built));
  return out;
}

Unit unit_of(const scenario::Scenario& base) {
  const auto transformer = scenario::transformer_of(base.model);
  if (transformer && base.model.workload.sample_unit == "sequences" && transformer->sequence > 0)
    return {"tokens", static_cast<double>(transformer->sequence)};
  return {base.model.workload.sample_unit, 1};
}

double estimate_seconds(const scenario::Scenario& candidate) {
  // Past its warm-up a schedule repeats with each micro-batch (a pipeline's 1F1B or interleaved steady state, or
  // gradient accumulation's forward and backward), so the iteration grows by the same time with every `step`
  // micro-batches more: priced at `from` and `from + step` micro-batches and extended linearly, the plan need not be
  // built with all of them. `from` is twice what the interleaved schedule's warm-up holds (2 x virtual stages x p), and
  // the step p keeps the count a multiple of p, as that schedule needs. Both short plans run at the clock the whole
  // job's kernels sustain: each program's kernels at burst clocks grow by the same stretch per step too.
  const bool model_parallel = candidate.parallelism.model_parallel();
  const int m = model_parallel ? candidate.parallelism.micro_batches : candidate.training.strategy.accumulation;
  const int step = model_parallel ? candidate.parallelism.pipeline : 1;
  const int from = 2 * step * (model_parallel ? candidate.parallelism.virtual_stages : 1);
  const auto priced = [](const scenario::Scenario& s, plan::Plan& p) {
    return graph::estimate(s.cluster, p.graph, 2).iteration_seconds;
  };
  if (m <= from + step) {
    auto whole = plan::make_first_replica_plan(candidate);
    return priced(candidate, whole);
  }
  auto with = [&](int micro_batches) {
    auto s = candidate;
    (model_parallel ? s.parallelism.micro_batches : s.training.strategy.accumulation) = micro_batches;
    return s;
  };
  const auto short_scenario = with(from), longer_scenario = with(from + step);
  auto short_plan = plan::make_first_replica_plan(short_scenario);
  auto longer_plan = plan::make_first_replica_plan(longer_scenario);
  const double steps = static_cast<double>(m - from) / step;
  std::vector<calibration::Stretch> whole(short_plan.burst_stretches.size());
  for (std::size_t p = 0; p < whole.size() && p < longer_plan.burst_stretches.size(); ++p) {
    const auto &a = short_plan.burst_stretches[p], &b = longer_plan.burst_stretches[p];
    whole[p] = {a.seconds + (b.seconds - a.seconds) * steps, a.math_seconds + (b.math_seconds - a.math_seconds) * steps,
                a.joules + (b.joules - a.joules) * steps};
  }
  plan::retime_sustained_clocks(short_plan, short_scenario, whole);
  plan::retime_sustained_clocks(longer_plan, longer_scenario, whole);
  const double first = priced(short_scenario, short_plan);
  return first + (priced(longer_scenario, longer_plan) - first) * steps;
}

namespace {

// A candidate screened and, when it can run, estimated, from one build of its scenario.
struct Assessed {
  Screened screened;
  std::optional<double> estimate; // seconds; empty: none (estimate_error says why), or it cannot run
  std::string estimate_error;
  double closed_form = 0; // the closed-form screen's iteration, seconds; 0: not priced by it
};

Assessed assess(const scenario::Scenario& base, const Candidate& c, const Options& options) {
  Assessed a;
  std::optional<scenario::Scenario> built;
  a.screened = screen_one(base, c, options, built);
  if (a.screened.verdict != Verdict::simulate) return a;
  try {
    a.estimate = estimate_seconds(*built);
  } catch (const std::exception& e) {
    a.estimate_error = e.what();
  }
  return a;
}

// What a child process sends back for one candidate: its assessment as one line of JSON (doubles round-trip).
std::string to_line(const Assessed& a) {
  const auto& s = a.screened;
  return nlohmann::json{{"verdict", static_cast<int>(s.verdict)},
                        {"reason", s.reason},
                        {"memory", s.memory_bytes},
                        {"capacity", s.capacity_bytes},
                        {"estimate", a.estimate ? nlohmann::json(*a.estimate) : nlohmann::json()},
                        {"error", a.estimate_error}}
      .dump();
}

Assessed from_line(const std::string& line, const Candidate& c) {
  const auto j = nlohmann::json::parse(line);
  Assessed a;
  a.screened.candidate = c;
  a.screened.verdict = static_cast<Verdict>(j.at("verdict").get<int>());
  a.screened.reason = j.at("reason").get<std::string>();
  a.screened.memory_bytes = j.at("memory").get<double>();
  a.screened.capacity_bytes = j.at("capacity").get<double>();
  if (!j.at("estimate").is_null()) a.estimate = j.at("estimate").get<double>();
  a.estimate_error = j.at("error").get<std::string>();
  return a;
}

// Every candidate assessed, in candidate order: here with one job, else in `jobs` child processes, each a strided
// share of the candidates (neighbours in Candidate order cost alike).
std::vector<Assessed> assess_all(const scenario::Scenario& base, const std::vector<Candidate>& candidates,
                                 const Options& options) {
  std::vector<Assessed> out(candidates.size());
  const std::size_t shares = std::min<std::size_t>(static_cast<std::size_t>(options.jobs), candidates.size());
  if (shares <= 1) {
    for (std::size_t i = 0; i < candidates.size(); ++i)
      out[i] = assess(base, candidates[i], options);
    return out;
  }
  std::vector<engine::ChildJob> jobs;
  for (std::size_t share = 0; share < shares; ++share)
    jobs.push_back([&, share] {
      std::string text;
      for (std::size_t i = share; i < candidates.size(); i += shares)
        text += to_line(assess(base, candidates[i], options)) + "\n";
      return text;
    });
  auto outcomes = engine::run_in_children(jobs, options.jobs, {}, {}, options.limit);
  for (std::size_t share = 0; share < shares; ++share) {
    const auto& outcome = outcomes[share];
    std::size_t at = 0;
    for (std::size_t i = share; i < candidates.size(); i += shares) {
      if (!outcome.ok) {
        // The process died: its candidates are screened here and left without an estimate.
        std::optional<scenario::Scenario> built;
        out[i].screened = screen_one(base, candidates[i], options, built);
        out[i].estimate_error = "the estimate's process failed: " + outcome.output.substr(0, outcome.output.find('\n'));
        continue;
      }
      const auto end = outcome.output.find('\n', at);
      out[i] = from_line(outcome.output.substr(at, end - at), candidates[i]);
      at = end + 1;
    }
  }
  return out;
}

// The estimated candidates ranked (1-based, ties by Candidate order): those estimated from their plans first, by that
// estimate, then those priced in closed form alone; the best `simulate` of the first kind are chosen. Those without an
// estimate are simulated whatever their rank.
void rank_by_estimate(std::vector<Point>& points, const Options& options) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (points[i].estimate_error.empty()) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (points[a].closed_form_only != points[b].closed_form_only) return points[b].closed_form_only;
    return points[a].estimate_seconds < points[b].estimate_seconds;
  });
  for (std::size_t i = 0; i < order.size(); ++i) {
    auto& p = points[order[i]];
    p.estimate_rank = static_cast<int>(i + 1);
    p.simulated = !p.closed_form_only && (options.simulate <= 0 || static_cast<int>(i) < options.simulate);
  }
}

// The closed-form screen of the model-parallel candidates (plan/layout_price.hpp), priced on a reference: the first
// such candidate's scenario that builds, so that what the layout resolves (the framework, its habits) is a
// model-parallel layout's.
class ClosedFormScreen {
public:
  static std::unique_ptr<ClosedFormScreen> make(const scenario::Scenario& base,
                                                const std::vector<Candidate>& candidates, const Options& options) {
    for (const auto& c : candidates) {
      if (!covered(c)) continue;
      try {
        auto screen = std::unique_ptr<ClosedFormScreen>(new ClosedFormScreen(candidate_scenario(base, c, options)));
        if (!screen->pricer_.unsupported().empty()) return nullptr;
        return screen;
      } catch (const scenario::ScenarioError&) {
      }
    }
    return nullptr;
  }
  static bool covered(const Candidate& c) { return (c.tensor > 1 || c.pipeline > 1) && c.expert == 1; }

  plan::LayoutPrice price(const Candidate& c) {
    auto cluster = clusters_.find(c.nodes);
    if (cluster == clusters_.end()) cluster = clusters_.emplace(c.nodes, with_nodes(reference_, c.nodes).cluster).first;
    return pricer_.price({c.nodes, c.tensor, c.pipeline, c.data, c.micro_batch, c.micro_batches, c.schedule,
                          c.virtual_stages, c.zero_stage, c.recompute, c.sequence_parallel},
                         cluster->second);
  }

private:
  explicit ClosedFormScreen(scenario::Scenario reference) : reference_(std::move(reference)), pricer_(reference_) {}
  scenario::Scenario reference_;
  plan::LayoutPricer pricer_;
  std::map<int, topologies::ClusterSpec> clusters_; // node count -> the reference's cluster at that count
};

} // namespace

std::vector<std::optional<plan::LayoutPrice>>
closed_form_prices(const scenario::Scenario& base, const std::vector<Candidate>& candidates, const Options& options) {
  auto screen = ClosedFormScreen::make(base, candidates, options);
  if (!screen) return {};
  std::vector<std::optional<plan::LayoutPrice>> out(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (ClosedFormScreen::covered(candidates[i])) out[i] = screen->price(candidates[i]);
  return out;
}

namespace {

// Every candidate assessed, in candidate order. With the closed-form screen, the model-parallel candidates are priced
// by it, and only the best `built` that fit (more where some of those turn out invalid) are assessed from their plans;
// `closed_form_only` marks the others.
std::vector<Assessed> assess_in_stages(const scenario::Scenario& base, const std::vector<Candidate>& candidates,
                                       const Options& options, std::vector<bool>& closed_form_only) {
  closed_form_only.assign(candidates.size(), false);
  const int built = options.simulate <= 0 ? std::numeric_limits<int>::max()
                    : options.built > 0   ? options.built
                                          : std::max(64, 4 * options.simulate);
  const auto prices = closed_form_prices(base, candidates, options);
  if (prices.empty()) return assess_all(base, candidates, options);
  std::vector<Assessed> out(candidates.size());
  std::vector<std::size_t> assess, priced;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& price = prices[i];
    if (!price) {
      assess.push_back(i);
      continue;
    }
    auto& a = out[i];
    a.screened.candidate = candidates[i];
    a.screened.memory_bytes = price->memory_bytes;
    a.screened.capacity_bytes = price->capacity_bytes;
    if (!price->fits()) {
      a.screened.verdict = Verdict::does_not_fit;
      a.screened.reason =
          fmt::format("needs {:.2f} GiB per GPU of {:.2f} GiB", gib(price->memory_bytes), gib(price->capacity_bytes));
      continue;
    }
    a.estimate = a.closed_form = price->iteration_seconds;
    closed_form_only[i] = true;
    priced.push_back(i);
  }
  std::stable_sort(priced.begin(), priced.end(),
                   [&](std::size_t a, std::size_t b) { return *out[a].estimate < *out[b].estimate; });
  // The best by the closed form are built, a batch at a time, until `built` of them have estimates from their plans.
  std::size_t next = 0;
  int estimated = 0;
  while (true) {
    const std::size_t take = std::min(priced.size() - next, static_cast<std::size_t>(std::max(0, built - estimated)));
    assess.insert(assess.end(), priced.begin() + static_cast<std::ptrdiff_t>(next),
                  priced.begin() + static_cast<std::ptrdiff_t>(next + take));
    next += take;
    std::vector<Candidate> batch;
    for (auto i : assess)
      batch.push_back(candidates[i]);
    const auto assessed = assess_all(base, batch, options);
    for (std::size_t k = 0; k < assess.size(); ++k) {
      const auto i = assess[k];
      estimated += closed_form_only[i] && assessed[k].estimate ? 1 : 0;
      closed_form_only[i] = false;
      const double closed_form = out[i].closed_form;
      out[i] = assessed[k];
      out[i].closed_form = closed_form;
    }
    assess.clear();
    if (estimated >= built || next >= priced.size()) break;
  }
  return out;
}

} // namespace

Result prepare(const scenario::Scenario& base, const Options& options) {
  if (options.iterations && *options.iterations < 1)
    throw std::invalid_argument(fmt::format("iterations must be >= 1, got {}", *options.iterations));
  if (options.warmup_iterations && *options.warmup_iterations < 0)
    throw std::invalid_argument(fmt::format("warm-up iterations must be >= 0, got {}", *options.warmup_iterations));
  if (options.jobs < 1) throw std::invalid_argument(fmt::format("jobs must be >= 1, got {}", options.jobs));
  // A node count the scenario cannot have (beyond the format's limits or the topology's) stops the search before
  // anything runs, as in a sweep.
  // Its ranks alone past the memory limit, whatever the layout, stop it too.
  for (int nodes : options.node_counts)
    check_scenario_size(with_nodes(base, nodes), options.limit, /*with_timelines=*/false);
  Result result;
  result.space = space_of(base, options.node_counts);
  if (options.global_batch) result.space.global_batch = *options.global_batch;
  result.unit = unit_of(base);
  const auto candidates = enumerate(result.space);
  result.counts.enumerated = static_cast<int>(candidates.size());

  std::vector<Point> runnable;
  std::vector<bool> closed_form_only;
  auto assessed = assess_in_stages(base, candidates, options, closed_form_only);
  for (std::size_t i = 0; i < assessed.size(); ++i) {
    auto& a = assessed[i];
    if (a.screened.verdict != Verdict::simulate) {
      ++(a.screened.verdict == Verdict::invalid ? result.counts.invalid : result.counts.do_not_fit);
      result.rejected.push_back(std::move(a.screened));
      continue;
    }
    Point p;
    p.candidate = a.screened.candidate;
    p.closed_form_only = closed_form_only[i];
    p.closed_form_seconds = a.closed_form;
    if (a.estimate) {
      p.estimate_seconds = *a.estimate;
    } else {
      p.estimate_error = a.estimate_error.empty() ? "no estimate" : a.estimate_error;
      p.simulated = true; // simulated whatever its rank
    }
    runnable.push_back(std::move(p));
  }
  rank_by_estimate(runnable, options);
  for (auto& p : runnable) {
    if (p.estimate_rank > 0) ++result.counts.estimated;
    if (p.closed_form_only) ++result.counts.closed_form_only;
    if (p.simulated)
      result.points.push_back(std::move(p));
    else
      result.screened.push_back(std::move(p));
  }
  std::stable_sort(result.screened.begin(), result.screened.end(),
                   [](const Point& a, const Point& b) { return a.estimate_rank < b.estimate_rank; });
  result.counts.simulated = static_cast<int>(result.points.size());
  result.counts.not_simulated = static_cast<int>(result.screened.size());
  return result;
}

void simulate_chosen(const std::vector<Chosen>& searches, const Options& options, const SweepProgress& progress) {
  // One batch of every search's chosen points: a shard (--shard) runs its share of all of them, then stops.
  std::vector<std::vector<Point>> chosen;
  std::vector<engine::ChildJob> work;
  PointBook book{{}, options.resume, {}, options.limit};
  for (const auto& [base, result] : searches) {
    chosen.push_back(std::move(result->points));
    result->points.clear();
    for (const auto& point : chosen.back()) {
      const auto& c = point.candidate;
      // The scenario is built again in the child: thousands of resolved scenarios need not sit in the parent.
      work.push_back(
          point_job([base, &options, c] { return run_here(candidate_scenario(*base, c, options), options.limit); }));
      book.labels.push_back(fmt::format("the candidate at {} node(s), tensor {}{}, pipeline {}, data {}, expert {}, "
                                        "micro-batch {} x {}",
                                        c.nodes, c.tensor, c.sequence_parallel ? " (sequence parallel)" : "",
                                        c.pipeline, c.data, c.expert, c.micro_batch, c.micro_batches));
      // The candidate's own scenario, canonical, decides its outcome (the screen above has read each one already).
      if (options.resume)
        book.keys.push_back(
            options.resume->key("search", scenario::to_json(candidate_scenario(*base, c, options)).dump()));
    }
  }
  auto outcomes = run_points(work, options.jobs, progress, book);
  std::size_t next = 0;
  for (std::size_t k = 0; k < searches.size(); ++k) {
    auto& result = *searches[k].result;
    for (auto& point : chosen[k]) {
      Point p = std::move(point);
      take_outcome(p, outcomes[next++]);
      if (p.ok) {
        p.throughput = p.result.throughput * result.unit.per_sample;
        if (p.result.price_per_hour > 0 && p.throughput > 0)
          p.cost_per_million = p.result.price_per_hour / 3600.0 / p.throughput * 1e6;
      } else {
        ++result.counts.failed;
      }
      result.points.push_back(std::move(p));
    }
    std::stable_sort(result.points.begin(), result.points.end(), [](const Point& a, const Point& b) {
      if (a.ok != b.ok) return a.ok;
      if (a.ok && a.throughput != b.throughput) return a.throughput > b.throughput;
      return a.candidate < b.candidate;
    });
  }
}

void simulate_chosen(const scenario::Scenario& base, const Options& options, Result& result,
                     const SweepProgress& progress) {
  simulate_chosen(std::vector<Chosen>{{&base, &result}}, options, progress);
}

Result search(const scenario::Scenario& base, const Options& options, const SweepProgress& progress) {
  auto result = prepare(base, options);
  simulate_chosen(base, options, result, progress);
  return result;
}

std::vector<const Point*> by_throughput(const Result& result) {
  std::vector<const Point*> out;
  for (const auto& p : result.points)
    if (p.ok) out.push_back(&p);
  return out; // result.points are in this order already
}

std::vector<const Point*> by_cost(const Result& result) {
  std::vector<const Point*> out;
  for (const auto& p : result.points)
    if (p.ok && p.cost_per_million > 0) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const Point* a, const Point* b) {
    if (a->cost_per_million != b->cost_per_million) return a->cost_per_million < b->cost_per_million;
    return a->candidate < b->candidate;
  });
  return out;
}

} // namespace dtsim::studies::search
