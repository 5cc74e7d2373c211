#pragma once
// Design-space search for large-model parallelism (`dtsim search`): every way to lay a scenario's training job over
// its cluster as tensor x pipeline x data parallel ranks (experts sharded over the data-parallel ranks), with the
// micro-batch, the pipeline schedule, the ZeRO stage and activation recomputation; the candidates that validate and
// fit in GPU memory are priced by the closed-form estimate of their plan (graph/estimate.hpp, no SimGrid), and the
// best `simulate` of them by that estimate are simulated side by side and ranked by throughput and by cost. The model,
// the cluster and the global batch are the base scenario's; with several node counts each count is a cluster of its
// own.
#include "sim/engine/child_process.hpp"
#include "sim/plan/layout_price.hpp"
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/points.hpp"

#include <compare>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::studies {
class ResumeStore; // sim/studies/resume.hpp
}

namespace dtsim::studies::search {

// What bounds the candidates, read from the base scenario by space_of.
struct Space {
  int gpus_per_node = 1;
  std::vector<int> node_counts;  // each its own cluster
  int heads = 0;                 // attention heads tensor parallelism splits (0: not a transformer)
  int blocks = 0;                // transformer blocks pipeline stages split; 0: no pipeline parallelism
  int experts = 0;               // experts of the MoE layers; 0: no expert parallelism
  std::int64_t global_batch = 0; // samples per iteration, the same for every candidate
  // A PyTorch profiler trace is one GPU's recorded step: its batch is the only micro-batch, run data parallel without
  // accumulation, ZeRO or recomputation, so the global batch follows the GPUs. 0: any micro-batch.
  int recorded_batch = 0;
  // A model without heads whose ops say how tensor parallelism splits them (MLPs, COTS HPC's network): tensor degrees
  // need not divide heads.
  bool tensor_splits = false;
  int wide_tensor = 0; // the base's tensor degree where it spans nodes (COTS HPC's whole cluster); else 0
};

// The base scenario's bounds: heads from the model's transformer (model.transformer, or the published
// configuration of a transformer preset) when its ops say how tensor parallelism splits them (tensor degrees up to
// a node's GPUs, and the base's own where it is wider); blocks the distinct
// models::Layer::block >= 0; experts the largest models::Layer::moe.experts; the global batch the samples one
// iteration trains (Scenario::global_batch(), times the strategy's gradient accumulation for data parallelism).
// `node_counts` empty: the base's node count.
Space space_of(const scenario::Scenario& base, std::vector<int> node_counts = {});

struct Candidate {
  int nodes = 1;
  int tensor = 1;
  int pipeline = 1;
  int data = 1;
  int expert = 1;
  int micro_batch = 1;   // samples per GPU per micro-batch (model.batch_per_gpu)
  int micro_batches = 1; // per pipeline per iteration; gradient accumulation steps without model parallelism
  scenario::PipelineSchedule schedule = scenario::PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;
  int zero_stage = 0;
  scenario::Recompute recompute = scenario::Recompute::none;
  bool sequence_parallel = false; // Megatron-LM's sequence parallelism (tensor > 1 only)

  bool model_parallel() const { return tensor > 1 || pipeline > 1 || expert > 1; }
  auto operator<=>(const Candidate&) const = default; // the tie-break of every ranking
};

// Every candidate of the space, in Candidate order (a pure function):
//   tensor t: powers of two dividing gpus_per_node (tensor parallelism stays inside a node) and the heads where the
//   model has them, and the base's own degree where it is wider than a node (Space::wide_tensor);
//   pipeline p: divisors of GPUs / t, at most the blocks (1 without blocks); data d = GPUs / (t p);
//   expert e: divisors of d that divide the experts (1 without experts);
//   micro-batch b in {1, 2, 4, 8} with global batch % (b d) == 0; micro-batches global / (b d);
//   schedule: 1f1b, and interleaved with 2 model chunks per device when blocks % 2p == 0 and the micro-batches are a
//   multiple of p (Megatron-LM's condition); with p == 1 the schedule does not matter and is 1f1b;
//   ZeRO stage 0 or 1, and 3 when p == 1 (ZeRO-3 shards weights layer by layer, which pipelines cannot use);
//   recompute none, selective or full; with t > 1 sequence parallelism off and on.
// A recorded step (Space::recorded_batch) has one candidate per node count: data parallel over every GPU.
std::vector<Candidate> enumerate(const Space& space);

struct Options {
  std::vector<int> node_counts;               // empty: the base's node count
  std::optional<scenario::Fidelity> fidelity; // empty: coarse with model parallelism, aggregate without
  // run.iterations and run.warmup_iterations of every candidate; empty: the base's.
  std::optional<int> iterations = 1;
  std::optional<int> warmup_iterations = 1;
  std::optional<std::int64_t> global_batch; // samples per iteration of every candidate; empty: the base's
  int simulate = 20;                        // the best this many by the estimate are simulated; 0: every candidate
  // The closed-form screen passes on this many of its best for their plans to be built and estimated (0: the larger
  // of 64 and 4 x simulate); with simulate 0 every candidate is built.
  int built = 0;
  int jobs = 1;                  // simulations run in parallel processes
  ResumeStore* resume = nullptr; // --resume: simulated points kept, and read back on the next run
  engine::ChildLimits limit;     // each simulation's memory (simulate.hpp's MemoryLimit); default none
};

// The fidelity a candidate runs at: the requested one, except that "coarse" needs model parallelism with its tensor
// groups inside a node (the others run at "aggregate"); without a request coarse there and aggregate elsewhere.
scenario::Fidelity fidelity_of(const Candidate& candidate, const Options& options, int gpus_per_node);

// The base scenario laid out as the candidate says: its "parallelism" section (tensor, pipeline, expert,
// micro_batches, schedule, virtual_stages, sequence_parallel; the base's order and routing kept; none without model
// parallelism), model.batch_per_gpu, training.zero_stage, training.recompute,
// cluster.nodes, run.fidelity and the options' iterations; the base's overlap choices where they apply
// (scenario::keep_applicable_overlaps). Without model parallelism the micro-batches become
// the strategy's gradient accumulation (the same global batch); with it accumulation is 1. Built by editing
// scenario::to_json(base) and parsing it again: throws scenario::ScenarioError when the combination is invalid.
scenario::Scenario candidate_scenario(const scenario::Scenario& base, const Candidate& candidate,
                                      const Options& options);

enum class Verdict { invalid, does_not_fit, simulate };

// A candidate before simulation: whether its scenario validates and fits in GPU memory (plan::estimate_memory).
struct Screened {
  Candidate candidate;
  Verdict verdict = Verdict::simulate;
  std::string reason;      // invalid: what the scenario reader said; does not fit: the memory against capacity
  double memory_bytes = 0; // per GPU, estimated (0 when invalid, or when the estimate failed)
  double capacity_bytes = 0;
};

// Screens each candidate, in the order given (no simulation runs).
std::vector<Screened> screen(const scenario::Scenario& base, const std::vector<Candidate>& candidates,
                             const Options& options);

// What throughput is counted in: tokens for transformers whose samples are sequences (samples/s x sequence),
// else the workload's samples ("images", "samples").
struct Unit {
  std::string name = "samples";
  double per_sample = 1; // units per sample: the sequence length for tokens
};
Unit unit_of(const scenario::Scenario& base);

struct Point {
  Candidate candidate;
  // The closed-form iteration of its plan (graph::estimate); 0 when it has none (estimate_error says why): such a
  // candidate is simulated whatever its rank.
  double estimate_seconds = 0;
  std::string estimate_error;
  int estimate_rank = 0; // 1-based, among the estimated candidates (ties by Candidate order); 0: none
  // Priced by the closed-form screen alone (plan/layout_price.hpp): its scenario was not built, so it is not
  // validated either. Such points rank after every one estimated from its plan.
  bool closed_form_only = false;
  double closed_form_seconds = 0; // the closed-form screen's iteration; 0: not priced by it
  bool simulated = false;
  bool ok = false;
  std::string error;      // why the simulation failed
  bool bad_input = false; // failed because of its input (it does not fit in memory at run time, ...)
  report::RunResult result;
  double throughput = 0;       // units (Unit) per second
  double cost_per_million = 0; // USD per million units; 0 when the cluster has no price
};

struct Counts {
  int enumerated = 0;
  int invalid = 0;
  int do_not_fit = 0;
  int estimated = 0;        // enumerated - invalid - do_not_fit, less those without an estimate
  int closed_form_only = 0; // of the estimated, priced by the closed-form screen alone
  int simulated = 0;        // the best `simulate` estimated ones, and those without an estimate
  int not_simulated = 0;    // estimated, ranked below the ones simulated
  int failed = 0;           // of the simulated
};

struct Result {
  Space space;
  Unit unit;
  Counts counts;
  std::vector<Point> points;      // the simulated: successful ones by throughput (best first), then the failed ones
  std::vector<Point> screened;    // estimated and not simulated, by the estimate (best first)
  std::vector<Screened> rejected; // the invalid and the ones that do not fit, in Candidate order
};

// The closed-form screen's price of each candidate (plan::LayoutPricer, on the first model-parallel candidate's
// scenario that builds): empty where it does not cover the base scenario, else one per candidate, none for the
// candidates it does not cover (no tensor or pipeline parallelism, experts). The candidates' scenarios are not built.
std::vector<std::optional<plan::LayoutPrice>>
closed_form_prices(const scenario::Scenario& base, const std::vector<Candidate>& candidates, const Options& options);

// The closed-form iteration of the candidate's plan: graph::estimate over two iterations (the second's time).
// Throws when there is none (a plan that cannot be built, parameter servers, gossip).
double estimate_seconds(const scenario::Scenario& candidate);

// Candidates are screened in two stages. Where the closed form covers the scenario (plan::LayoutPricer), every
// model-parallel candidate is priced by it first (memory and iteration, without building its scenario); the best
// `built` of those that fit then have their scenarios built, validated, screened and estimated from their plans, as
// every other candidate is. Those estimated from their plans rank first, by that estimate; the rest follow by the
// closed form's.
// Enumerates, screens, estimates and simulates the best by the estimate (options.jobs at a time, in child
// processes); `progress` counts simulations.
// Throws std::invalid_argument for bad options (iterations < 1, warm-up < 0, jobs < 1).
Result search(const scenario::Scenario& base, const Options& options, const SweepProgress& progress = {});

// search() in its two halves. prepare: enumerates, screens and estimates; `points` holds the candidates chosen for
// simulation, not yet simulated (in candidate order), `screened` the rest. simulate_chosen: simulates those and ranks
// them as search() does.
Result prepare(const scenario::Scenario& base, const Options& options);
void simulate_chosen(const scenario::Scenario& base, const Options& options, Result& result,
                     const SweepProgress& progress = {});
// Several prepared searches' chosen points simulated as one batch (`dtsim plan`'s clusters): under a sharded
// options.resume the shard runs its share of all of them and records its end in the store.
struct Chosen {
  const scenario::Scenario* base = nullptr;
  Result* result = nullptr;
};
void simulate_chosen(const std::vector<Chosen>& searches, const Options& options, const SweepProgress& progress = {});

// The successful points from the highest throughput down, and from the lowest cost per million units up (only where
// the cluster has a price); ties go by Candidate order.
std::vector<const Point*> by_throughput(const Result& result);
std::vector<const Point*> by_cost(const Result& result);

} // namespace dtsim::studies::search
