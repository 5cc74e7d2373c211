#pragma once
// Internal to sim/scenario: reading a JSON document field by field with precise error messages.
// Every failure throws ScenarioError(file, JSON pointer, message).
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/units.hpp"

#include "io/suggest.hpp"
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::scenario::detail {

using nlohmann::json;

// A JSON value as it appears in a message, cut short if long.
std::string show(const json& value);
using io::close_matches; // io/suggest.hpp
using io::did_you_mean;
using io::quoted_list;
// One JSON pointer token, escaped (~ -> ~0, / -> ~1).
std::string escape_pointer_token(std::string_view token);

enum class Bound { positive, non_negative };

// An object in the document at a JSON pointer, with the keys it may hold. Constructing one checks that
// the value is an object and that every key is known (with a did-you-mean for the unknown ones).
// An absent optional section is read as an empty object: every field takes its default.
class Object {
public:
  Object(const std::string& file, const json* value, std::string pointer, std::vector<std::string> known);

  bool present() const { return value_ != nullptr; }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  const json* get(std::string_view key) const;
  const std::string& pointer() const { return pointer_; }
  std::string pointer(std::string_view key) const { return pointer_ + "/" + escape_pointer_token(key); }
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;

  // A sub-section (absent -> empty, present() false).
  Object object(std::string_view key, std::vector<std::string> known) const;

  std::int64_t integer(std::string_view key, std::int64_t min, std::optional<std::int64_t> fallback,
                       std::int64_t max = std::numeric_limits<int>::max()) const;
  std::uint64_t unsigned_integer(std::string_view key, std::optional<std::uint64_t> fallback) const;
  // A number in [min, max] (every JSON number dtsim reads is finite: the parser refuses the others).
  double number(std::string_view key, double min, std::optional<double> fallback,
                double max = std::numeric_limits<double>::max()) const;
  // A quantity of `dim` (a unit string or a number in base units), inside the format's range for that dimension
  // (limits.hpp: bandwidths from 1 kB/s to 1 PB/s, latencies up to 1 s, sizes up to 1 PiB); 0 where `bound` allows.
  double quantity(std::string_view key, Dimension dim, Bound bound, std::optional<double> fallback) const;
  bool boolean(std::string_view key, std::optional<bool> fallback) const;
  std::string string(std::string_view key, std::optional<std::string> fallback, bool allow_empty = false) const;
  // A name from `allowed`; `what` names the kind of thing in messages ("GPU profile").
  std::string choice(std::string_view key, const std::vector<std::string>& allowed, std::string_view what,
                     std::optional<std::string> fallback) const;

private:
  const json& required(std::string_view key, const std::string& expected) const;

  std::string file_;
  const json* value_;
  std::string pointer_;
};

// Applies `--set` overrides to the document in place (creating intermediate objects).
void apply_overrides(json& document, const std::vector<Override>& overrides, const std::string& file);
// "/a/b/0" for "a.b.0".
std::string pointer_of_path(const std::string& dotted_path);

// Sections of the document, one reader per file.
ModelSpec read_model(const Object& top, const std::string& scenario_name);
// model.transformer (transformer_spec.cpp): sets spec.transformer, resolved (a base's fields with the given ones
// over them), and spec.workload, its layer table.
void read_transformer(const Object& model, const std::string& scenario_name, ModelSpec& spec);
// The resolved spec as model.transformer: every field, no base.
json transformer_json(const models::TransformerSpec& spec);
DatasetSpec read_dataset(const Object& top);
// Fills cluster's network from "cluster.topology" (`instance_nics`: the instance's NIC count, 0 without one).
void read_topology(const Object& cluster_section, int instance_nics, topologies::ClusterSpec& cluster);
const std::vector<std::string>& topology_kind_names();
// Fills scenario.cluster and scenario.gpu; checks that the GPU supports the model's precision.
void read_cluster(const Object& top, Scenario& scenario);
// What a cluster of mixed GPUs (cluster.groups) can train (after read_parallelism): data parallelism, all-reduce.
void check_groups(const Object& top, const Scenario& scenario);
TrainingSpec read_training(const Object& top);
// training.nccl as NCCL_VERSION_CODE (collectives/nccl_release.hpp); absent: the tuning constants' release.
int read_nccl_release(const Object& top);
// training.strategy and training.compression (strategy.cpp): each a name or an object.
strategies::StrategySpec read_strategy(const Object& training);
strategies::CompressionSpec read_compression(const Object& training);
// The pointer of training.strategy's `path` as far as the document spells it out: a check that fails on a value
// the name gave ("preset:Petuum" sets two servers) points at the name.
std::string strategy_pointer(const Object& top, std::initializer_list<std::string_view> path);
// What the strategy asks of the cluster (after read_cluster and read_training): dedicated server nodes leave a
// node to train, backup workers are fewer than the workers.
void check_strategy(const Object& top, const Scenario& scenario);
// The optional "stragglers" section (after check_strategy: its ranks are the strategy's workers).
strategies::StragglerSpec read_stragglers(const Object& top, const Scenario& scenario);
// The resolved values, every field written out, as read_strategy, read_compression and read_stragglers take them.
json strategy_json(const strategies::StrategySpec& spec);
json compression_json(const strategies::CompressionSpec& spec);
json stragglers_json(const strategies::StragglerSpec& spec);
// Resolves model.attention "auto" for the scenario's GPU and checks that "flash" can run on it (after read_cluster).
void resolve_attention(const Object& top, Scenario& scenario);
// training.framework ("auto": megatron under tensor, pipeline or expert parallelism, else pytorch-ddp) into
// Scenario::framework, and training.clip_gradients when given; after read_parallelism.
void resolve_framework(const Object& top, Scenario& scenario);
// Full recomputation needs transformer blocks to recompute (after read_model and read_training).
void check_recompute(const Object& top, const Scenario& scenario);
RunSpec read_run(const Object& top);
// The whole run's sections (lifecycle.cpp): "checkpoint", "storage", "failures", "restart", "spot", and
// training.steps (after read_cluster and read_training); lifecycle_json adds them to a canonical scenario.
void read_lifecycle(const Object& top, Scenario& scenario);
json lifecycle_json(const Scenario& scenario, json out);
// The "energy" section (energy.cpp), after read_cluster: the host's draw defaults to the instance preset's.
lifecycle::EnergySpec read_energy(const Object& top, const Scenario& scenario);
json energy_json(const lifecycle::EnergySpec& energy);
// The optional "parallelism" section (parallelism.cpp; after read_model, read_cluster and read_training).
void read_parallelism(const Object& top, Scenario& scenario);
// run.fidelity "coarse" needs tensor, pipeline or expert parallelism (after read_parallelism and read_run).
void check_fidelity(const Object& top, const Scenario& scenario);
// run.fidelity "auto": the fidelity dtsim chooses for the scenario (RunSpec::fidelity_reason says why).
void resolve_fidelity(Scenario& scenario);
json parallelism_json(const ParallelismSpec& spec);
std::string_view pipeline_schedule_name(PipelineSchedule p);
std::string_view routing_name(RoutingDistribution d);
NetworkSpec read_network(const Object& top);
// The optional "input" section (call after read_cluster: the cores default to the instance's vCPUs).
std::optional<InputSpec> read_input(const Object& top, const Scenario& scenario);

// The enum value whose name is `name` in `names` (declaration order); `name` was validated against `names`.
template <typename Enum> Enum enum_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<Enum>(std::find(names.begin(), names.end(), name) - names.begin());
}

// Enum names, in declaration order.
const std::vector<std::string>& algorithm_names();
const std::vector<std::string>& fidelity_names();
const std::vector<std::string>& optimizer_names();
const std::vector<std::string>& recompute_names();
const std::vector<std::string>& offload_names();
const std::vector<std::string>& attention_names();
const std::vector<std::string>& network_model_names();
const std::vector<std::string>& layer_kind_names();
const std::vector<std::string>& fabric_names();

} // namespace dtsim::scenario::detail
