// The "model" section: a preset name, an inline layer table or a transformer spec (transformer_spec.cpp), the
// batch and the precision.
#include "models/zoo.hpp"
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <filesystem>
#include <map>

namespace dtsim::scenario::detail {
namespace {

constexpr int kLayerKinds = static_cast<int>(models::LayerKind::embedding) + 1;

models::LayerKind layer_kind_of(const std::string& name) {
  for (int k = 0; k < kLayerKinds; ++k)
    if (models::to_string(static_cast<models::LayerKind>(k)) == name) return static_cast<models::LayerKind>(k);
  return models::LayerKind::elementwise; // unreachable: `name` was validated against layer_kind_names()
}

models::Workload read_layers(const Object& model, const std::string& scenario_name) {
  const json& layers = *model.get("layers");
  const std::string pointer = model.pointer("layers");
  if (!layers.is_array() || layers.empty())
    model.fail("layers", "expected a non-empty array of layers, got " + show(layers));
  models::Workload w;
  w.name = scenario_name;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Object l(model.file(), &layers[i], fmt::format("{}/{}", pointer, i),
                   {"name", "kind", "forward_flops", "backward_flops", "parameters", "input_elements",
                    "output_elements", "saved_elements"});
    models::Layer layer;
    layer.name = l.string("name", std::nullopt);
    if (const auto [it, fresh] = seen.emplace(layer.name, i); !fresh)
      l.fail("name", fmt::format("duplicate layer name \"{}\" (also layer {})", layer.name, it->second));
    layer.kind = layer_kind_of(l.choice("kind", layer_kind_names(), "layer kind", std::nullopt));
    layer.forward_flops = l.number("forward_flops", 0, std::nullopt, limits::kLayerFlops);
    layer.backward_flops = l.number("backward_flops", 0, models::backward_factor(layer.kind) * layer.forward_flops,
                                    3 * limits::kLayerFlops);
    constexpr auto kMax = limits::kElements;
    layer.parameters = l.integer("parameters", 0, std::nullopt, kMax);
    layer.input_elements = l.integer("input_elements", 0, std::nullopt, kMax);
    layer.output_elements = l.integer("output_elements", 0, std::nullopt, kMax);
    // As the CNN builders: an op keeps its output for backward, elementwise ops keep nothing of their own.
    layer.saved_elements =
        l.integer("saved_elements", 0, layer.kind == models::LayerKind::elementwise ? 0 : layer.output_elements, kMax);
    w.layers.push_back(std::move(layer));
  }
  return w;
}

} // namespace

const std::vector<std::string>& layer_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int k = 0; k < kLayerKinds; ++k)
      out.emplace_back(models::to_string(static_cast<models::LayerKind>(k)));
    return out;
  }();
  return names;
}

// model.trace: {"format": "chakra", "path": "FOLDER or PREFIX"} or {"format": "pytorch-profiler", "path": "FILE",
// "step": N, "model": PRESET}; the path relative to the scenario's folder (or, where nothing is there, the current
// directory), kept absolute.
TraceSpec read_trace_spec(const Object& model) {
  const Object trace = model.object("trace", {"format", "path", "step", "model"});
  TraceSpec spec;
  spec.format = trace.choice("format", {"chakra", "pytorch-profiler"}, "trace format", std::nullopt);
  if (trace.has("step")) {
    if (spec.format != "pytorch-profiler")
      trace.fail("step", "applies to a \"pytorch-profiler\" trace only (a Chakra trace is one iteration)");
    spec.step = trace.integer("step", 0, std::nullopt, std::numeric_limits<std::int32_t>::max());
  }
  if (trace.has("model")) {
    if (spec.format != "pytorch-profiler")
      trace.fail("model", "applies to a \"pytorch-profiler\" trace only (a Chakra trace holds its collectives)");
    spec.model = trace.choice("model", models::preset_names(), "model preset", std::nullopt);
  }
  const auto given = trace.string("path", std::nullopt);
  namespace fs = std::filesystem;
  const auto beside = fs::path(trace.file()).parent_path() / given;
  std::error_code ec;
  const bool here =
      fs::path(given).is_absolute() || !(fs::exists(beside, ec) || fs::exists(beside.string() + ".0.et", ec));
  spec.path = fs::absolute(here ? fs::path(given) : beside, ec).lexically_normal().string();
  return spec;
}

ModelSpec read_model(const Object& top, const std::string& scenario_name) {
  const Object model = top.object(
      "model", {"preset", "layers", "transformer", "trace", "batch_per_gpu", "precision", "attention", "fp8_recipe"});
  const auto presets = models::preset_names();
  if (!model.present())
    top.fail("model",
             "missing; expected an object with \"preset\" (or \"layers\" or \"transformer\") and \"batch_per_gpu\"");
  ModelSpec spec;
  std::vector<std::string> given;
  for (const char* form : {"preset", "layers", "transformer", "trace"})
    if (model.has(form)) given.emplace_back(form);
  if (given.size() > 1)
    model.fail_here(fmt::format("{} given; give exactly one (a preset name, an inline layer table, a transformer "
                                "spec or a trace)",
                                given.size() == 2
                                    ? fmt::format("both \"{}\" and \"{}\"", given[0], given[1])
                                    : "several of \"preset\", \"layers\", \"transformer\" and \"trace\""));
  if (given.empty())
    model.fail_here(fmt::format("missing \"preset\", \"layers\", \"transformer\" or \"trace\"; give a preset (one of "
                                "{}), an inline layer table, a transformer spec or a trace",
                                quoted_list(presets)));
  if (given[0] == "trace") {
    spec.trace = read_trace_spec(model);
  } else if (given[0] == "preset") {
    spec.preset = model.choice("preset", presets, "model preset", std::nullopt);
    auto workload = models::build_preset(spec.preset);
    if (!workload) model.fail("preset", fmt::format("model preset \"{}\" is listed but cannot be built", spec.preset));
    spec.workload = std::move(*workload);
  } else if (given[0] == "layers") {
    spec.workload = read_layers(model, scenario_name);
  } else {
    read_transformer(model, scenario_name, spec);
  }
  spec.batch_per_gpu = static_cast<int>(model.integer("batch_per_gpu", 1, std::nullopt, limits::kBatchPerGpu));
  const auto precision = model.choice("precision", calibration::precision_names(), "precision", "fp32");
  spec.precision = *calibration::parse_precision(precision);
  const auto attention = model.choice("attention", attention_names(), "attention kernel", "auto");
  spec.attention = static_cast<AttentionKernel>(
      std::find(attention_names().begin(), attention_names().end(), attention) - attention_names().begin());
  if (model.has("fp8_recipe") && spec.precision != calibration::Precision::fp8)
    model.fail("fp8_recipe", fmt::format("an fp8 recipe needs \"precision\": \"fp8\" (got \"{}\")", precision));
  if (model.choice("fp8_recipe", {"delayed", "tensorwise"}, "fp8 recipe", "delayed") == "tensorwise")
    spec.fp8_recipe = Fp8Recipe::tensorwise;
  return spec;
}

} // namespace dtsim::scenario::detail

namespace dtsim::scenario {

std::optional<models::TransformerSpec> transformer_of(const ModelSpec& model) {
  if (model.transformer) return model.transformer;
  const auto names = models::transformer_spec_names();
  if (std::find(names.begin(), names.end(), model.preset) == names.end()) return std::nullopt;
  return models::transformer_spec(model.preset);
}

} // namespace dtsim::scenario
