// The optional "parallelism" section: tensor, pipeline, data and expert parallel degrees, the micro-batches, the
// pipeline schedule and stage split, the rank placement order and the MoE routing. Everything that makes a grid
// impossible is reported here, with the field at fault, before anything is planned.
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace dtsim::scenario::detail {
namespace {

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"gpipe", "1f1b", "interleaved"};
  return names;
}
const std::vector<std::string>& routing_names() {
  static const std::vector<std::string> names{"uniform", "zipf", "dirichlet"};
  return names;
}

// Units a pipeline splits the model into: transformer blocks, else layers.
int pipeline_units(const models::Workload& w) {
  return w.block_count() > 0 ? w.block_count() : static_cast<int>(w.layers.size());
}

std::vector<std::string> read_order(const Object& section) {
  const std::string text = section.string("order", std::string("tp-ep-dp-pp"));
  std::vector<std::string> order;
  for (std::size_t start = 0;;) {
    const auto dash = text.find('-', start);
    order.push_back(text.substr(start, dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  const std::set<std::string> names(order.begin(), order.end());
  std::set<std::string> expected{"tp", "ep", "dp", "pp"};
  if (names.count("cp")) expected.insert("cp");
  if (order.size() != expected.size() || names != expected)
    section.fail("order", fmt::format("expected tp, ep, dp and pp (and cp, else placed after tp), each once, joined "
                                      "by '-' innermost first (as Megatron-LM's \"tp-cp-ep-dp-pp\"), got \"{}\"",
                                      text));
  return order;
}

RoutingSpec read_routing(const Object& section) {
  const Object r = section.object("routing", {"distribution", "parameter", "capacity_factor"});
  RoutingSpec spec;
  spec.distribution = enum_of<RoutingDistribution>(
      routing_names(), r.choice("distribution", routing_names(), "routing distribution", std::string("uniform")));
  if (r.has("parameter") && spec.distribution == RoutingDistribution::uniform)
    r.fail("parameter", "uniform routing takes no parameter (zipf: the exponent; dirichlet: the concentration)");
  spec.parameter = r.number("parameter", 0, 1.0, 1e3); // Zipf exponents and Dirichlet concentrations
  if (spec.distribution == RoutingDistribution::dirichlet && spec.parameter <= 0)
    r.fail("parameter", "a Dirichlet concentration must be > 0");
  if (r.has("capacity_factor")) spec.capacity_factor = r.number("capacity_factor", 0, std::nullopt, 1e3);
  return spec;
}

// Megatron-LM's defaults (every overlap off) unless ZeRO-3, whose units always overlap; `training.overlap` given in
// the file says whether gradients are reduced under backward, as it does for data parallelism.
OverlapSpec read_overlap(const Object& top, const Object& section, const Scenario& s) {
  const Object o = section.object("overlap", {"tensor", "grad_reduce", "param_gather", "p2p"});
  const auto* training = top.get("training");
  const bool overlap_given = training && training->is_object() && training->contains("overlap");
  OverlapSpec spec;
  const bool fsdp = s.training.zero_stage >= 3;
  spec.grad_reduce = o.boolean("grad_reduce", overlap_given ? s.training.overlap : fsdp);
  if (overlap_given && !s.training.overlap && spec.grad_reduce)
    o.fail("grad_reduce", "training.overlap is false: gradients cannot be reduced under backward");
  if (fsdp && !spec.grad_reduce)
    o.fail("grad_reduce", "ZeRO-3 reduce-scatters each unit's gradients as its backward ends (FSDP, DeepSpeed)");
  spec.param_gather = o.boolean("param_gather", false);
  if (spec.param_gather && s.training.zero_stage != 1 && s.training.zero_stage != 2)
    o.fail("param_gather", "needs the distributed optimizer (training.zero_stage 1 or 2) to have parameters to gather");
  if (spec.param_gather && !spec.grad_reduce)
    o.fail("param_gather", "Megatron-LM overlaps the parameter all-gather only with grad_reduce overlapped too");
  spec.tensor = o.boolean("tensor", false);
  spec.p2p = o.boolean("p2p", false);
  const auto given = [&](const char* key, bool value) {
    return o.has(key) ? std::optional<bool>(value) : std::nullopt;
  };
  spec.given = {given("tensor", spec.tensor), given("grad_reduce", spec.grad_reduce),
                given("param_gather", spec.param_gather), given("p2p", spec.p2p)};
  return spec;
}

// Context parallelism splits each sequence into 2 x context chunks, two per rank (the first and the last of the
// causal mask's load, as Megatron-Core balances them); Ulysses' all-to-alls hand each rank whole heads.
void check_context(const Object& p, const Scenario& s) {
  const auto& spec = s.parallelism;
  if (spec.context == 1) {
    if (p.has("context_comm")) p.fail("context_comm", "needs context > 1");
    return;
  }
  const auto transformer = transformer_of(s.model);
  if (!transformer)
    p.fail("context", fmt::format("model \"{}\" is not a transformer: context parallelism splits attention's sequence",
                                  s.model.workload.name));
  if (transformer->sequence % (2 * spec.context) != 0)
    p.fail("context", fmt::format("2 x context = {} must divide the sequence of {} tokens (each rank takes two chunks)",
                                  2 * spec.context, transformer->sequence));
  if (spec.context_comm == ContextComm::a2a && transformer->heads % (spec.tensor * spec.context) != 0)
    p.fail("context_comm", fmt::format("a2a (DeepSpeed-Ulysses) gives each rank whole heads: tensor x context = {} "
                                       "must divide the {} attention heads",
                                       spec.tensor * spec.context, transformer->heads));
  if (spec.expert > 1) p.fail("context", "context parallelism with expert parallelism is not modeled");
}

} // namespace

void read_parallelism(const Object& top, Scenario& s) {
  const Object p =
      top.object("parallelism", {"tensor", "pipeline", "data", "expert", "sequence_parallel", "micro_batches",
                                 "global_batch", "schedule", "virtual_stages", "stages", "order", "routing", "overlap",
                                 "grad_reduce_in_bf16", "context", "context_comm"});
  auto& spec = s.parallelism;
  const int gpus = s.world_size();
  spec.pipeline = static_cast<int>(p.integer("pipeline", 1, 1));
  spec.context = static_cast<int>(p.integer("context", 1, 1));
  spec.context_comm =
      p.choice("context_comm", {"p2p", "a2a"}, "context-parallel communication", std::string("p2p")) == "a2a"
          ? ContextComm::a2a
          : ContextComm::p2p;
  // A preset that splits one model copy over the cluster (COTS HPC) makes the GPUs left by the pipeline stages and
  // the context ranks one tensor-parallel group (the whole cluster without them), unless the scenario gives the degree.
  const auto* preset = strategies::find_preset(s.training.strategy.preset);
  const bool from_preset = preset != nullptr && preset->splits_model && !p.has("tensor");
  if (from_preset && gpus % (spec.pipeline * spec.context) != 0)
    p.fail(p.has("context") ? "context" : "pipeline",
           fmt::format("pipeline x context = {} x {} must divide the cluster's {} GPUs: preset \"{}\" splits the "
                       "model over the GPUs / (pipeline x context) left",
                       spec.pipeline, spec.context, gpus, preset->name));
  spec.tensor = from_preset ? gpus / (spec.pipeline * spec.context) : static_cast<int>(p.integer("tensor", 1, 1));
  spec.expert = static_cast<int>(p.integer("expert", 1, 1));
  // A tensor degree the preset set is reported where the document names the preset.
  const auto fail_tensor = [&](const std::string& message, std::string_view remedy) {
    if (!from_preset) p.fail("tensor", message);
    const std::string named = strategy_pointer(top, {"preset"});
    throw ScenarioError(top.file(), named.ends_with("/preset") ? named : strategy_pointer(top, {"name"}),
                        fmt::format("preset \"{}\" splits the model over {} GPUs (tensor parallelism {}), but {}; {}",
                                    preset->name, spec.tensor, spec.tensor, message, remedy));
  };
  if (gpus % (spec.tensor * spec.pipeline) != 0)
    p.fail("tensor", fmt::format("tensor x pipeline = {} x {} must divide the cluster's {} GPUs", spec.tensor,
                                 spec.pipeline, gpus));
  if (gpus % (spec.tensor * spec.pipeline * spec.context) != 0)
    p.fail("context", fmt::format("tensor x context x pipeline = {} x {} x {} must divide the cluster's {} GPUs",
                                  spec.tensor, spec.context, spec.pipeline, gpus));
  spec.data = gpus / (spec.tensor * spec.pipeline * spec.context);
  if (p.has("data") && p.integer("data", 1, std::nullopt) != spec.data)
    p.fail("data", fmt::format("the cluster's {} GPUs over tensor {} x pipeline {}{} leave {} data-parallel replicas",
                               gpus, spec.tensor, spec.pipeline,
                               spec.context > 1 ? fmt::format(" x context {}", spec.context) : "", spec.data));
  spec.sequence_parallel = p.boolean("sequence_parallel", false);
  spec.schedule = enum_of<PipelineSchedule>(
      schedule_names(), p.choice("schedule", schedule_names(), "pipeline schedule", std::string("1f1b")));
  spec.virtual_stages = static_cast<int>(p.integer("virtual_stages", 1, 1));
  spec.order = read_order(p);
  spec.routing = read_routing(p);
  spec.overlap = read_overlap(top, p, s);
  spec.grad_reduce_in_bf16 = p.boolean("grad_reduce_in_bf16", false);
  if (!p.present() && !from_preset) return;

  const auto& w = s.model.workload;
  const int batch = s.model.batch_per_gpu;
  if (p.has("global_batch") && p.has("micro_batches"))
    p.fail("micro_batches", "give global_batch or micro_batches, not both");
  if (p.has("global_batch")) {
    const auto global = p.integer("global_batch", 1, std::nullopt, limits::kGlobalBatch);
    if (global % (static_cast<std::int64_t>(batch) * spec.data) != 0)
      p.fail("global_batch", fmt::format("must be a multiple of the micro-batch (model.batch_per_gpu {}) x {} "
                                         "data-parallel replicas = {}",
                                         batch, spec.data, static_cast<std::int64_t>(batch) * spec.data));
    const auto micro_batches = global / (static_cast<std::int64_t>(batch) * spec.data);
    if (micro_batches > limits::kMicroBatches)
      p.fail("global_batch", fmt::format("makes {} micro-batches per pipeline; the format takes at most {}",
                                         micro_batches, limits::kMicroBatches));
    spec.micro_batches = static_cast<int>(micro_batches);
  } else {
    spec.micro_batches = static_cast<int>(p.integer("micro_batches", 1, 1, limits::kMicroBatches));
  }

  if (spec.tensor > 1 && !w.tensor_splits())
    fail_tensor(fmt::format("model \"{}\" has no op tensor parallelism splits (transformer and MLP models say how "
                            "Megatron-LM splits each op)",
                            w.name),
                "use such a model, or another strategy");
  const auto transformer = transformer_of(s.model);
  if (spec.tensor > 1 && transformer && transformer->heads % spec.tensor != 0)
    fail_tensor(
        fmt::format("{} must divide the model's {} attention heads", from_preset ? "it" : "tensor", transformer->heads),
        "give parallelism.tensor, or another strategy");
  if (spec.sequence_parallel && spec.tensor == 1) p.fail("sequence_parallel", "needs tensor > 1");
  check_context(p, s);
  if (spec.overlap.tensor && !spec.sequence_parallel)
    p.fail("overlap", "tensor: Megatron-Core overlaps tensor-parallel communication with its GEMMs only under "
                      "sequence parallelism (\"sequence_parallel\": true)");

  const int experts = w.expert_count();
  if (spec.expert > 1 && experts == 0) p.fail("expert", fmt::format("model \"{}\" has no expert layers", w.name));
  if (spec.expert > 1 && experts % spec.expert != 0)
    p.fail("expert", fmt::format("must divide the model's {} experts", experts));
  if (spec.data % spec.expert != 0)
    p.fail("expert", fmt::format("expert parallelism shards the experts over data-parallel replicas: {} must divide "
                                 "the {} replicas",
                                 spec.expert, spec.data));

  const bool interleaved = spec.schedule == PipelineSchedule::interleaved;
  if (spec.virtual_stages > 1 && !interleaved)
    p.fail("virtual_stages", "model chunks per device need \"schedule\": \"interleaved\"");
  if (interleaved && spec.micro_batches % spec.pipeline != 0)
    p.fail("schedule", fmt::format("the interleaved schedule needs the micro-batches ({}) to be a multiple of the "
                                   "pipeline stages ({}), as Megatron-LM requires",
                                   spec.micro_batches, spec.pipeline));
  const int units = pipeline_units(w);
  const int chunks = spec.pipeline * spec.virtual_stages;
  if (units < chunks)
    p.fail("pipeline", fmt::format("{} stages x {} model chunks need at least {} blocks; model \"{}\" has {}",
                                   spec.pipeline, spec.virtual_stages, chunks, w.name, units));
  const auto* stages = p.has("stages") ? p.get("stages") : nullptr;
  const auto named = [&](const char* name) { return stages->is_string() && stages->get<std::string>() == name; };
  if (stages && named("balanced")) spec.balance_stages = true;
  if (stages && !named("balanced") && !named("auto")) {
    const auto& list = *stages;
    if (!list.is_array() || static_cast<int>(list.size()) != chunks)
      p.fail("stages", fmt::format("expected \"auto\", \"balanced\" or a list of {} block counts (one per stage and "
                                   "model chunk, in model order)",
                                   chunks));
    for (std::size_t i = 0; i < list.size(); ++i) {
      // At most the model's blocks each, so the sum below cannot overflow and nothing is truncated.
      const bool in_range =
          list[i].is_number_integer() && list[i].get<std::int64_t>() >= 1 && list[i].get<std::int64_t>() <= units;
      if (!in_range)
        throw ScenarioError(
            p.file(), p.pointer("stages") + fmt::format("/{}", i),
            fmt::format("expected a block count from 1 to the model's {} blocks, got {}", units, show(list[i])));
      spec.stage_blocks.push_back(static_cast<int>(list[i].get<std::int64_t>()));
    }
    const std::int64_t total = std::accumulate(spec.stage_blocks.begin(), spec.stage_blocks.end(), std::int64_t{0});
    if (total != units)
      p.fail("stages", fmt::format("the counts add up to {}; model \"{}\" has {} blocks", total, w.name, units));
  }

  if (!spec.model_parallel()) {
    if (spec.micro_batches > 1)
      p.fail(p.has("global_batch") ? "global_batch" : "micro_batches",
             "micro-batches pipeline through stages; without tensor, pipeline or expert parallelism accumulate "
             "gradients with training.strategy.accumulation");
    return;
  }
  const auto& t = s.training;
  if (t.strategy.kind != strategies::Kind::allreduce || t.strategy.accumulation > 1)
    top.fail("training", "tensor, pipeline and expert parallelism run with the all-reduce strategy (micro-batches "
                         "replace gradient accumulation: parallelism.micro_batches)");
  if (t.compression.kind != strategies::CompressionKind::none)
    top.fail("training", "gradient compression is not modeled with tensor, pipeline or expert parallelism");
  if (t.zero_stage == 3 && spec.pipeline > 1)
    top.fail("training", "zero_stage 3 shards the weights layer by layer, which pipeline parallelism cannot use "
                         "(DeepSpeed refuses the combination); use zero_stage 1 (Megatron's distributed optimizer)");
  if (t.zero_stage == 3 && spec.expert > 1)
    top.fail("training", "zero_stage 3 with expert parallelism is not modeled (the experts' weights would be gathered "
                         "over the expert-data ranks, not the data-parallel ones); use zero_stage 1 or 2");
  if (t.offload != Offload::none) top.fail("training", "offload is modeled for data parallelism only");
}

// "auto": aggregate where no flow of one collective step can meet another's, so that replaying steps one by one
// changes nothing: a data-parallel all-reduce (one collective at a time on each rank, every rank in it) without
// stragglers, of one-GPU nodes (each flow of a step on its own NIC) on one switch, one NIC a node, no cross traffic.
// On the shipped scenarios of that kind aggregate and step agree to 1e-12 of the iteration with identical GPUs, and
// within 0.2% where GPUs differ in speed (the default: a step's flows from the ranks that arrive first start before
// the slowest's, which aggregate starts together); where a condition fails
// they were measured 0.2% to 9.8% apart (a tiered or oversubscribed network; 4 NICs a node; stragglers with jitter;
// 4 GPUs a node sharing a 10 Gbps NIC): there it is step. Model parallelism stays step.
constexpr int kCoarseFromGpus = 64; // run.fidelity "auto": model-parallel jobs this large run coarse

void resolve_fidelity(Scenario& s) {
  auto& run = s.run;
  if (!run.fidelity_auto) return;
  const auto& c = s.cluster;
  // Large model-parallel jobs: one rank per tensor-parallel group (the tensor groups inside a node, one kind of GPU).
  // Against step it was measured -0.3% to +0.8% on GPT-3 1.3B to 175B (8 to 64 A100), Megatron-Core's 7.1B GPT on 96
  // H100, Llama-3 8B with context parallelism, Llama-3 70B at TP 8 behind p5's one link a node and Mixtral 8x7B with
  // expert parallelism, and -0.1% to +1.7% over 28 generated layouts, with identical GPUs; with GPUs that differ (the
  // default) -1.2% (Mixtral) to +0.5% on the shipped ones and -0.2% to +2.2% over the layouts
  // (tests/sim/model_parallel_test.cpp; docs/guide.md, "Coarse fidelity"), at a tenth of the wall time or less; below
  // 64 GPUs step stays affordable.
  if (s.parallelism.model_parallel() && s.world_size() >= kCoarseFromGpus && s.parallelism.tensor <= c.gpus_per_node &&
      s.groups.empty()) {
    run.fidelity = Fidelity::coarse;
    run.fidelity_reason = fmt::format("coarse (tensor, pipeline, expert or context parallelism on {} GPUs, at least "
                                      "{}: one rank per tensor-parallel group, measured -1.2% to +2.2% from step)",
                                      s.world_size(), kCoarseFromGpus);
    return;
  }
  const char* why = nullptr;
  if (s.parallelism.model_parallel())
    why = "tensor, pipeline, expert or context parallelism: several collectives at once";
  else if (s.training.strategy.kind != strategies::Kind::allreduce)
    why = "a strategy other than all-reduce: pushes, pulls or exchanges that meet";
  else if (s.stragglers.any())
    why = "stragglers: ranks enter each collective at different times";
  else if (!c.tiers.empty() || c.routed_by_graph() || !c.torus.empty())
    why = "a network of several switches, where one collective's flows share links";
  else if (c.gpus_per_node > 1 && c.nodes > 1)
    why = "nodes of several GPUs, whose flows of one step share the node's NIC";
  else if (c.nic_ports > 1 || !c.node_nics.empty())
    why = "nodes with several NICs, or NICs of different speeds";
  else if (s.network.cross_traffic)
    why = "cross traffic";
  run.fidelity = why ? Fidelity::step : Fidelity::aggregate;
  run.fidelity_reason =
      why ? fmt::format("step ({})", why)
          : "aggregate (a data-parallel all-reduce of one-GPU nodes on one switch: no flow of one step meets "
            "another's)";
}

void check_fidelity(const Object& top, const Scenario& s) {
  if (s.run.fidelity != Fidelity::coarse) return;
  const std::string pointer = top.pointer("run") + "/fidelity";
  if (!s.parallelism.model_parallel())
    throw ScenarioError(top.file(), pointer,
                        "\"coarse\" collapses tensor-parallel groups and pipeline stages; this scenario has neither "
                        "(use \"aggregate\")");
  // Coarse prices a tensor-parallel collective in closed form on the fabric inside a node.
  const int tensor = s.parallelism.tensor, per_node = s.cluster.gpus_per_node;
  if (tensor > per_node)
    throw ScenarioError(top.file(), pointer,
                        fmt::format("\"coarse\" prices tensor-parallel collectives on the fabric inside a node, and "
                                    "the tensor-parallel groups of {} GPUs span nodes of {} (use \"aggregate\")",
                                    tensor, per_node));
}

std::string_view pipeline_schedule_name(PipelineSchedule p) {
  return schedule_names().at(static_cast<std::size_t>(p));
}
std::string_view routing_name(RoutingDistribution d) {
  return routing_names().at(static_cast<std::size_t>(d));
}

// Only what the file gave: a default follows the layout and the framework version, so a copy of the scenario laid out
// otherwise (search, plan) gets its own layout's defaults.
static json overlap_json(const OverlapChoices& given) {
  json out = json::object();
  const std::pair<const char*, const std::optional<bool>*> choices[] = {{"tensor", &given.tensor},
                                                                        {"grad_reduce", &given.grad_reduce},
                                                                        {"param_gather", &given.param_gather},
                                                                        {"p2p", &given.p2p}};
  for (const auto& [key, value] : choices)
    if (value->has_value()) out[key] = **value;
  return out;
}

json parallelism_json(const ParallelismSpec& p) {
  std::string order;
  for (const auto& name : p.order)
    order += (order.empty() ? "" : "-") + name;
  json routing = {{"distribution", routing_name(p.routing.distribution)}};
  if (p.routing.distribution != RoutingDistribution::uniform) routing["parameter"] = p.routing.parameter;
  if (p.routing.capacity_factor) routing["capacity_factor"] = *p.routing.capacity_factor;
  json out = {{"tensor", p.tensor},
              {"pipeline", p.pipeline},
              {"data", p.data},
              {"expert", p.expert},
              {"sequence_parallel", p.sequence_parallel},
              {"micro_batches", p.micro_batches},
              {"schedule", pipeline_schedule_name(p.schedule)},
              {"virtual_stages", p.virtual_stages},
              {"order", order},
              {"context", p.context},
              {"routing", routing},
              {"overlap", overlap_json(p.overlap.given)},
              {"grad_reduce_in_bf16", p.grad_reduce_in_bf16}};
  if (p.context > 1) out["context_comm"] = p.context_comm == ContextComm::a2a ? "a2a" : "p2p";
  if (p.stage_blocks.empty())
    out["stages"] = p.balance_stages ? "balanced" : "auto";
  else
    out["stages"] = p.stage_blocks;
  return out;
}

} // namespace dtsim::scenario::detail

namespace dtsim::scenario {

void keep_applicable_overlaps(nlohmann::json& document, bool sequence_parallel, bool interleaved) {
  auto& training = document["training"];
  const int zero_stage = training.value("zero_stage", 0);
  // ZeRO-3 (FSDP, DeepSpeed) reduces each unit's gradients as its backward ends, whatever the scenario asked of
  // bucketed data parallelism.
  if (zero_stage >= 3 && training.value("overlap", true) == false) training.erase("overlap");
  if (!document.contains("parallelism") || !document["parallelism"].contains("overlap")) return;
  auto& overlap = document["parallelism"]["overlap"];
  const auto drop_when = [&](const char* key, bool value, bool inapplicable) {
    if (inapplicable && overlap.contains(key) && overlap[key] == value) overlap.erase(key);
  };
  // The reader's own rules: read_overlap's (param_gather, grad_reduce under ZeRO-3), read_parallelism's (tensor under
  // sequence parallelism) and resolve_framework's (p2p under the interleaved schedule).
  drop_when("tensor", true, !sequence_parallel);
  drop_when("p2p", true, !interleaved);
  drop_when("param_gather", true, zero_stage != 1 && zero_stage != 2);
  drop_when("grad_reduce", false, zero_stage >= 3);
}

} // namespace dtsim::scenario
