#pragma once
// A scenario: what to simulate. Parsed from JSON (format version 1, docs/scenario-format.md),
// validated, with defaults applied and references (model preset, GPU profile) resolved.
#include "calibration/framework.hpp"
#include "calibration/profile.hpp"
#include "io/error.hpp"
#include "models/layer.hpp"
#include "models/transformer.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/lifecycle/energy.hpp"
#include "sim/lifecycle/lifecycle.hpp"
#include "sim/strategies/strategy.hpp"
#include "topologies/cluster.hpp"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::scenario {

inline constexpr int kFormatVersion = 1;

// How attention cores run: unfused (a GEMM for Q K^T, softmax and dropout kernels over the s^2 scores, a GEMM for
// P V) or fused (FlashAttention: one kernel, no s^2 tensor in memory). `automatic` resolves, once the GPU is
// known, to flash where the GPU's profile has a fused-attention efficiency for the precision, else plain.
// plain: unfused kernels; flash: FlashAttention-2; cudnn: cuDNN's fused attention (Transformer Engine's on Hopper).
enum class AttentionKernel : std::uint8_t { automatic, plain, flash, cudnn };

// How fp8 training sets each tensor's scale (Megatron-Core's --fp8-recipe; Transformer Engine's recipes): delayed
// (DelayedScaling: from an amax history the cast kernels update in passing) or tensorwise (Float8CurrentScaling: each
// tensor's own amax, read by a kernel of its own before the cast).
enum class Fp8Recipe : std::uint8_t { delayed, tensorwise };

// model.trace: the job's own ops from a recorded trace instead of a model from the zoo.
struct TraceSpec {
  // "chakra": MLCommons Chakra execution traces, one file per rank; "pytorch-profiler": one GPU's step as
  // torch.profiler recorded it (a Kineto Chrome trace), the data-parallel communication added by the planner
  std::string format;
  std::string path; // chakra: the folder or the files' prefix; pytorch-profiler: the file. Absolute (a relative one is
                    // read from the scenario's folder)
  std::optional<std::int64_t> step; // pytorch-profiler: N of the "ProfilerStep#N" to take; unset: sim/kineto's choice
  // pytorch-profiler: a model preset whose layers give the gradients when the trace has neither their shapes nor the
  // job's collectives; empty: none
  std::string model;
};

struct ModelSpec {
  std::optional<TraceSpec> trace; // set: the ops come from it; the workload is empty
  std::string preset;             // empty when the layers were given inline or as a transformer
  models::Workload workload;      // resolved layer table
  // model.transformer, resolved (a base's fields with the given ones over them); to_json writes it back.
  std::optional<models::TransformerSpec> transformer;
  int batch_per_gpu = 32;
  calibration::Precision precision = calibration::Precision::fp32;
  AttentionKernel attention = AttentionKernel::automatic; // resolved by load_scenario: never automatic after it
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;              // under precision fp8
};

// The model's transformer configuration: model.transformer's, or a transformer preset's published one; none for other
// models.
std::optional<models::TransformerSpec> transformer_of(const ModelSpec& model);

struct DatasetSpec {
  std::int64_t samples = 0; // samples per epoch; 0 = not given (no time per epoch)
  int epochs = 1;           // epochs of the whole training run, for its time and cost
};

enum class Optimizer : std::uint8_t { sgd, momentum, adam };

// Activation recomputation (Korthikanti et al. 2022): selective recomputes the attention core's s^2 part in
// backward instead of keeping it; full keeps only each transformer block's input and reruns the block's forward.
enum class Recompute : std::uint8_t { none, selective, full };

// Where the optimizer's fp32 state lives: on the GPU, or in host memory with the step run by the CPU
// (ZeRO-Offload, Ren et al. 2021): gradients go down and updated weights come back over PCIe.
enum class Offload : std::uint8_t { none, optimizer };

struct TrainingSpec {
  strategies::StrategySpec strategy;       // how workers keep their models in agreement (all-reduce by default)
  strategies::CompressionSpec compression; // what the gradients are sent as
  collectives::Algorithm algorithm = collectives::Algorithm::automatic; // of the gradient all-reduce
  double bucket_bytes = 25.0 * 1024 * 1024;                             // PyTorch DDP bucket_cap_mb = 25 (MiB)
  double first_bucket_bytes = 1.0 * 1024 * 1024;                        // DDP's first bucket is capped at 1 MiB
  bool overlap = true;               // all-reduce buckets while backward runs (resolved: the framework's default)
  std::optional<bool> overlap_given; // as the file gave it; absent: the framework version's habit
  Optimizer optimizer = Optimizer::momentum;
  Recompute recompute = Recompute::none;
  // ZeRO (Rajbhandari et al. 2020) over the data-parallel ranks: 1 shards the optimizer states, 2 also the
  // gradients, 3 also the weights; 0 = plain data parallelism.
  int zero_stage = 0;
  Offload offload = Offload::none;
  // Offload: the host's memory bandwidth the CPU optimizer step streams its states at, bytes/s.
  double host_memory_bandwidth = 100e9;
  // The training framework (calibration/frameworks/) as given: which kernels it fuses, its optimizer's passes, its host
  // costs. "auto" resolves to "megatron" under tensor, pipeline or expert parallelism (Megatron-style frameworks run
  // those layouts) and to "pytorch-ddp" otherwise; Scenario::framework holds the resolved preset. Both stay as given so
  // that a changed layout (dtsim search) resolves them again.
  std::string framework = "auto";
  std::optional<bool> clip_gradients; // clip by the global gradient norm every iteration; absent: the framework's
  std::int64_t steps = 0;             // iterations of the whole run (dtsim train); 0: from the dataset's epochs
};

// How collectives are replayed: every step's flows, or each phase as one set of flows with the latency
// terms added analytically (faster at scale; collectives::aggregate says what it costs in accuracy).
// coarse (large-model parallelism only): one rank stands for each tensor-parallel group (its collectives priced in
// closed form on the intra-node fabric), a stage's consecutive kernels run as one op, and every other collective is
// aggregated. What it costs in accuracy against `step` is measured in docs/guide.md ("Coarse fidelity").
enum class Fidelity : std::uint8_t { step, aggregate, coarse };

// Large-model parallelism (Megatron-LM: Shoeybi et al. 2019, Narayanan et al. 2021): the GPUs as a grid of
// tensor x pipeline x data-parallel ranks, with the experts of MoE layers sharded over `expert` of the data-parallel
// ranks (Megatron-Core's expert parallelism carves EP out of DP). model.batch_per_gpu is the micro-batch.
enum class PipelineSchedule : std::uint8_t {
  gpipe,       // all forwards, then all backwards (Huang et al. 2019)
  one_f_one_b, // PipeDream-Flush (Narayanan et al. 2021): warm-up forwards, then one forward one backward
  interleaved  // 1F1B over v model chunks per device (Narayanan et al. 2021, section 2.2)
};
// How the tokens of an MoE layer spread over its experts: each expert's share of the tokens is drawn, per layer, from
// the scenario's seed.
enum class RoutingDistribution : std::uint8_t {
  uniform,  // every expert gets k T / E tokens
  zipf,     // the i-th most popular expert (a seeded permutation) gets a share proportional to 1 / i^parameter
  dirichlet // shares drawn from a symmetric Dirichlet(parameter): small parameters skew, large ones flatten
};
struct RoutingSpec {
  RoutingDistribution distribution = RoutingDistribution::uniform;
  double parameter = 1.0;
  // Tokens each expert takes per micro-batch: capacity_factor x k x tokens / experts (Fedus et al. 2021); the rest
  // are dropped. 0: dropless (every token is computed, MegaBlocks). Absent: the model's.
  std::optional<double> capacity_factor;
};
// What Megatron-Core overlaps with compute, each its own switch (Megatron-LM's --tp-comm-overlap,
// --overlap-grad-reduce,
// --overlap-param-gather; all off by default in Megatron-LM, on in NeMo's recipes). ZeRO-3 (FSDP, DeepSpeed) always
// reduces a unit's gradients as its backward ends and prefetches the next unit's weights.
// The overlaps as the file gave them (absent: the default for the layout and the framework version). They are what
// a new layout of the same job takes (`dtsim search`, `dtsim plan`), where each applies.
struct OverlapChoices {
  std::optional<bool> tensor, grad_reduce, param_gather, p2p;
};
struct OverlapSpec {
  bool tensor = false;       // tensor-parallel all-gathers/reduce-scatters pipelined with their GEMMs (userbuffers)
  bool grad_reduce = false;  // data-parallel gradient reduction in buckets while backward runs
  bool param_gather = false; // the distributed optimizer's parameter all-gather under the next forward
  bool p2p = false;          // a pipeline's sends and receives under compute (the framework's default unless given)
  OverlapChoices given;      // what the scenario said; to_json writes these, not the resolved values
};

// How context parallelism moves attention's keys and values (Megatron-Core's --cp-comm-type): p2p, ring attention
// (Liu et al. 2023; Megatron-Core/Transformer Engine's load-balanced ring), K and V passed around the group under the
// attention blocks; a2a, DeepSpeed-Ulysses (Jacobs et al. 2023), all-to-alls that trade the sequence split for a head
// split around the attention core.
enum class ContextComm : std::uint8_t { p2p, a2a };

struct ParallelismSpec {
  int tensor = 1;
  int pipeline = 1;
  int context = 1; // ranks a sequence is split over (context parallelism)
  ContextComm context_comm = ContextComm::p2p;
  int data = 1; // resolved: GPUs / (tensor x context x pipeline)
  int expert = 1;
  bool sequence_parallel = false; // Korthikanti et al. 2022: norms and dropout split along the sequence
  int micro_batches = 1;          // per pipeline per iteration (from global_batch when given)
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1; // model chunks per device (interleaved)
  // Transformer blocks (or layers) per model chunk, in order; empty: the framework's split (Megatron-LM's even one), or
  // balanced by time where `balance_stages` ("stages": "balanced") or the framework has no split of its own.
  std::vector<int> stage_blocks;
  bool balance_stages = false;
  std::vector<std::string> order{"tp", "ep", "dp", "pp"}; // rank placement, innermost first; "cp" after "tp" if absent
  RoutingSpec routing;
  OverlapSpec overlap;
  // Megatron-LM reduces bf16 training's gradients in fp32 (its --bf16 sets accumulate_allreduce_grads_in_fp32)
  // unless --grad-reduce-in-bf16.
  bool grad_reduce_in_bf16 = false;
  bool model_parallel() const { return tensor > 1 || pipeline > 1 || expert > 1 || context > 1; }
  // Megatron-LM overlaps pipeline sends only under the interleaved schedule with virtual stages (validate_args).
  bool interleaved() const { return schedule == PipelineSchedule::interleaved && virtual_stages > 1; }
};

// Whether a pipeline's sends run under compute: as the scenario says, else the framework version's habit (Megatron-LM
// overlaps them only under the interleaved schedule with virtual stages, validate_args).
bool overlaps_p2p(const calibration::Framework& framework, const ParallelismSpec& spec);

struct RunSpec {
  int iterations = 10;       // measured iterations
  int warmup_iterations = 1; // simulated first, left out of the statistics
  std::uint64_t seed = 1;
  // Stop replaying once iterations repeat exactly and take the rest as repeats (a deterministic scenario only).
  bool skip_repeats = true;
  Fidelity fidelity = Fidelity::step;
  // "auto" (a scenario file's default): `fidelity` is the one dtsim chose for the scenario, and why.
  bool fidelity_auto = false;
  std::string fidelity_reason;
};

// The input pipeline of each node (PyTorch DataLoader workers: read, decode, augment), a stage that can bound the
// iteration when the GPUs train faster than the CPUs prepare batches. Absent: the GPUs never wait for data.
struct InputSpec {
  int cpu_cores = 0;                      // per node; the instance's vCPUs by default
  double samples_per_core_per_second = 0; // decode + augmentation rate of one core
  double sample_bytes = 0;                // bytes read per sample; 0 = not given
  double storage_bandwidth = 0;           // bytes/s each node reads its samples at; 0 = no storage bound
};

enum class NetworkModel : std::uint8_t { lv08, cm02 };

struct NetworkSpec {
  // CM02 (plain max-min sharing) by default: LV08's factors were fitted to TCP over Ethernet and charge
  // 13x the link latency, far from NVLink or RDMA. Scenarios of TCP clusters choose "lv08".
  NetworkModel model = NetworkModel::cm02;
  bool cross_traffic = false; // SimGrid's reverse-direction TCP ACK traffic (network/crosstraffic); lv08: true
};

// One group of a cluster that mixes GPU types (cluster.groups): consecutive nodes of one GPU. The groups share the
// cluster's node shape (GPUs per node, intra-node fabric, NIC) and its topology; each has its own GPU and price.
struct GpuGroup {
  std::string name;            // the group's label ("v100", or the scenario's)
  std::string gpu_name;        // as written: a shipped profile or a profile file
  calibration::GpuProfile gpu; // resolved
  int nodes = 0;
  int first_rank = 0; // its GPUs are ranks first_rank .. first_rank + ranks - 1
  int ranks = 0;
  double price_per_node_hour = 0;
  std::optional<topologies::LinkSpec> nic; // its nodes' network link; absent: the cluster's
};

// How a mixed cluster's data-parallel ranks split the global batch: the same micro-batch everywhere (the slowest
// group gates every iteration), or in proportion to each GPU's speed (load-balanced, as LB-BSP and HetPipe's data
// parallelism do), the global batch kept.
enum class BatchSplit : std::uint8_t { equal, proportional };

struct Scenario {
  std::string name;
  std::string origin;      // the file it came from (for messages)
  std::string description; // optional free-text notes (sources, assumptions); empty if not given
  ModelSpec model;
  DatasetSpec dataset;
  topologies::ClusterSpec cluster;
  calibration::GpuProfile gpu;  // resolved from cluster.gpu (with cluster.groups: the first group's)
  std::vector<GpuGroup> groups; // empty: every GPU is `gpu`
  BatchSplit batch_split = BatchSplit::equal;
  TrainingSpec training;
  calibration::Framework framework; // resolved from training.framework
  RunSpec run;
  NetworkSpec network;
  ParallelismSpec parallelism;
  std::optional<InputSpec> input;       // absent: no input stage
  strategies::StragglerSpec stragglers; // slower workers; none by default
  // The whole run (dtsim train): its length, checkpoints, storage, failures, restarts, spot capacity. Empty sections
  // by default: one run with no failures and no checkpoints.
  lifecycle::RunPlan lifecycle;
  lifecycle::EnergySpec energy; // electricity: the host's draw, the facility's PUE, the grid's CO2 per kWh

  int world_size() const { return cluster.gpu_count(); }
  bool clips_gradients() const { return training.clip_gradients.value_or(framework.clip_gradients); }
  // Samples per iteration: micro-batch x data-parallel replicas x micro-batches per pipeline.
  std::int64_t global_batch() const {
    const std::int64_t batch = model.batch_per_gpu;
    return parallelism.model_parallel() ? batch * parallelism.data * parallelism.micro_batches : batch * world_size();
  }
};

// Bad input: names the file, the JSON pointer of the offending field and what was expected.
class ScenarioError : public InputError {
public:
  ScenarioError(std::string file, std::string pointer, std::string message);
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& detail() const { return detail_; }

private:
  std::string file_, pointer_, detail_;
};

// One `--set path=value` override: a dotted path (cluster.nodes) and a value written as JSON
// (8, "10Gbps", true) or, if it is not valid JSON, as a plain string (10Gbps).
struct Override {
  std::string path;
  std::string value;
};
Override parse_override(const std::string& assignment); // "a.b=c"; throws ScenarioError on a bad form

// Reads, overrides, validates and resolves. Throws ScenarioError on any problem.
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});
Scenario parse_scenario(const std::string& json_text, const std::string& origin,
                        const std::vector<Override>& overrides = {});

// The resolved scenario in canonical form (every default spelled out, base units), echoed in results.
nlohmann::json to_json(const Scenario& scenario);

// A scenario document's overlap choices (parallelism.overlap, training.overlap) kept where they apply to a layout with
// this sequence parallelism, schedule and training.zero_stage, by the rules the reader refuses them with; the others
// are removed, so that the layout takes the defaults of its own framework version (`dtsim search`'s candidates,
// `dtsim plan`'s clusters). A choice that can apply anywhere (an overlap turned off) stays.
void keep_applicable_overlaps(nlohmann::json& document, bool sequence_parallel, bool interleaved);

// The failure presets (sim/lifecycle/failures/*.json) by name, and one's sources with each unit's MTBF derived from
// the study's counts (empty for an unknown name).
std::vector<std::string> failure_preset_names();
std::vector<lifecycle::FailureSource> failure_preset(const std::string& name);

std::string_view to_string(Fidelity f);
std::string_view to_string(Optimizer o);
std::string_view to_string(Recompute r);
std::string_view to_string(Offload o);
std::string_view to_string(AttentionKernel a);
std::string_view to_string(NetworkModel m);
std::string_view to_string(PipelineSchedule p);
std::string_view to_string(RoutingDistribution d);

} // namespace dtsim::scenario
