// Entry points: reading the file, parsing the JSON, applying overrides and reading each section.
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/reader.hpp"

#include "io/json_text.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dtsim::scenario {
namespace {

using detail::json;

std::string compose(const std::string& file, const std::string& pointer, const std::string& message) {
  std::string out = file.empty() ? std::string("<scenario>") : file;
  out += ": ";
  if (!pointer.empty()) out += pointer + ": ";
  return out + message;
}

void check_version(const std::string& file, const json& document) {
  const auto it = document.find("version");
  const std::string expected = fmt::format("the format version, {}", kFormatVersion);
  if (it == document.end())
    throw ScenarioError(file, "/version", fmt::format("missing; expected {} (docs/scenario-format.md)", expected));
  if (!it->is_number_integer() && !it->is_number_unsigned())
    throw ScenarioError(file, "/version", fmt::format("expected {}, got {}", expected, detail::show(*it)));
  if (it->get<std::int64_t>() != kFormatVersion || (it->is_number_unsigned() && it->get<std::uint64_t>() > 1000))
    throw ScenarioError(
        file, "/version",
        fmt::format("unsupported format version {}; this dtsim reads version {}", detail::show(*it), kFormatVersion));
}

std::string default_name(const std::string& origin) {
  std::string stem = std::filesystem::path(origin).stem().string();
  // A file name need not be UTF-8; the name is written into JSON results, which must be.
  return stem.empty() || !io::is_utf8(stem) ? std::string("scenario") : stem;
}

Scenario read_document(const std::string& origin, const json& document) {
  check_version(origin, document);
  const detail::Object top(origin, &document, "",
                           {"version",  "name",    "description", "model",      "dataset",     "cluster",    "training",
                            "run",      "network", "input",       "stragglers", "parallelism", "checkpoint", "storage",
                            "failures", "restart", "spot",        "energy",     "elastic",     "$schema"});
  // "$schema" names the JSON Schema an editor checks and completes the file with (docs/scenario.schema.json); the
  // simulation takes nothing from it.
  (void)top.string("$schema", std::string(), /*allow_empty=*/true);
  Scenario s;
  s.origin = origin;
  s.name = top.string("name", default_name(origin));
  s.description = top.string("description", std::string(), /*allow_empty=*/true);
  s.model = detail::read_model(top, s.name);
  s.dataset = detail::read_dataset(top);
  detail::read_cluster(top, s);
  s.training = detail::read_training(top);
  s.cluster.nccl_version = detail::read_nccl_release(top); // the collective library: software, named with the training
  detail::check_recompute(top, s);
  detail::check_strategy(top, s);
  s.stragglers = detail::read_stragglers(top, s);
  detail::read_parallelism(top, s);
  detail::check_groups(top, s);
  detail::resolve_framework(top, s);
  detail::resolve_attention(top, s);
  s.run = detail::read_run(top);
  detail::check_fidelity(top, s);
  s.network = detail::read_network(top);
  detail::resolve_fidelity(s);
  s.input = detail::read_input(top, s);
  detail::read_lifecycle(top, s);
  s.energy = detail::read_energy(top, s);
  return s;
}

} // namespace

ScenarioError::ScenarioError(std::string file, std::string pointer, std::string message)
    : InputError(compose(file, pointer, message)), file_(std::move(file)), pointer_(std::move(pointer)),
      detail_(std::move(message)) {}

Scenario parse_scenario(const std::string& json_text, const std::string& origin,
                        const std::vector<Override>& overrides) {
  json document;
  try {
    document = io::parse_json(json_text);
  } catch (const io::JsonTextError& e) {
    throw ScenarioError(origin, e.pointer(), e.what());
  }
  if (!document.is_object())
    throw ScenarioError(origin, "", "expected a JSON object at the top level, got " + detail::show(document));
  detail::apply_overrides(document, overrides, origin);
  try {
    return read_document(origin, document);
  } catch (const ScenarioError& e) {
    // Say so when the offending value came from the command line rather than from the file.
    for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
      const std::string pointer = detail::pointer_of_path(it->path);
      if (e.pointer() == pointer || e.pointer().starts_with(pointer + "/"))
        throw ScenarioError(e.file(), e.pointer(),
                            fmt::format("{} (from --set {}={})", e.detail(), it->path, it->value));
    }
    throw;
  }
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides) {
  std::string text;
  try {
    text = io::read_text_file(path, "file");
  } catch (const io::FileError& e) {
    throw ScenarioError(path, "", e.what());
  }
  return parse_scenario(text, path, overrides);
}

std::string_view to_string(Fidelity f) {
  return detail::fidelity_names().at(static_cast<std::size_t>(f));
}
std::string_view to_string(Optimizer o) {
  return detail::optimizer_names().at(static_cast<std::size_t>(o));
}
std::string_view to_string(Recompute r) {
  return detail::recompute_names().at(static_cast<std::size_t>(r));
}
std::string_view to_string(Offload o) {
  return detail::offload_names().at(static_cast<std::size_t>(o));
}
std::string_view to_string(AttentionKernel a) {
  return detail::attention_names().at(static_cast<std::size_t>(a));
}
std::string_view to_string(NetworkModel m) {
  return detail::network_model_names().at(static_cast<std::size_t>(m));
}
std::string_view to_string(PipelineSchedule p) {
  return detail::pipeline_schedule_name(p);
}
std::string_view to_string(RoutingDistribution d) {
  return detail::routing_name(d);
}

} // namespace dtsim::scenario
