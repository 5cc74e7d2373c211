// Entry points: reading the file, parsing the JSON, applying overrides and reading each section.
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/reader.hpp"

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

// nlohmann reports the byte after the last one it read; count lines and columns (1-based) from there,
// pointing at the end of the offending token rather than at the whitespace the lexer read past it.
std::string describe_parse_error(const std::string& text, const json::parse_error& e) {
  std::size_t end = std::min<std::size_t>(e.byte, text.size());
  while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  std::size_t index = end > 0 ? end - 1 : 0;
  if (e.byte > text.size()) index = end; // unexpected end of input: just after the last character
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + index, '\n'));
  const auto line_start = text.rfind('\n', index == 0 ? std::string::npos : index - 1);
  const std::size_t column = index - (line_start == std::string::npos || index == 0 ? 0 : line_start + 1) + 1;
  std::string reason = e.what();
  if (const auto colon = reason.find(": "); colon != std::string::npos)
    reason = reason.substr(colon + 2); // drop "[json.exception.parse_error.101] parse error at ...: "
  return fmt::format("malformed JSON at line {}, column {}: {}", line, column, reason);
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
  return stem.empty() ? std::string("scenario") : stem;
}

Scenario read_document(const std::string& origin, const json& document) {
  check_version(origin, document);
  const detail::Object top(origin, &document, "",
                           {"version", "name", "description", "model", "dataset", "cluster", "training", "run",
                            "network", "input", "stragglers", "parallelism"});
  Scenario s;
  s.origin = origin;
  s.name = top.string("name", default_name(origin));
  s.description = top.string("description", std::string(), /*allow_empty=*/true);
  s.model = detail::read_model(top, s.name);
  s.dataset = detail::read_dataset(top);
  detail::read_cluster(top, s);
  s.training = detail::read_training(top);
  detail::resolve_attention(top, s);
  detail::check_recompute(top, s);
  detail::check_strategy(top, s);
  s.stragglers = detail::read_stragglers(top, s);
  detail::read_parallelism(top, s);
  detail::resolve_framework(top, s);
  s.run = detail::read_run(top);
  detail::check_fidelity(top, s);
  s.network = detail::read_network(top);
  s.input = detail::read_input(top, s);
  return s;
}

} // namespace

ScenarioError::ScenarioError(std::string file, std::string pointer, std::string message)
    : std::runtime_error(compose(file, pointer, message)), file_(std::move(file)), pointer_(std::move(pointer)),
      detail_(std::move(message)) {}

Scenario parse_scenario(const std::string& json_text, const std::string& origin,
                        const std::vector<Override>& overrides) {
  json document;
  // No scenario nests deeper than a few levels; a document nested thousands deep would overflow the stack of
  // everything that walks it (the error messages that quote a value included), so it stops here.
  constexpr int kMaxDepth = 64;
  const auto shallow = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) throw std::length_error("nested");
    return true;
  };
  try {
    document = json::parse(json_text, shallow);
  } catch (const json::parse_error& e) {
    throw ScenarioError(origin, "", describe_parse_error(json_text, e));
  } catch (const json::out_of_range& e) { // 406: a number literal beyond the range of a double (1e400)
    const std::string what = e.what();
    const auto quote = what.find('\'');
    throw ScenarioError(origin, "",
                        fmt::format("a number beyond the range of a double (about 1.8e308){}",
                                    quote == std::string::npos ? "" : ": " + what.substr(quote)));
  } catch (const std::length_error&) {
    throw ScenarioError(origin, "",
                        fmt::format("arrays and objects nested more than {} deep; a scenario needs a few", kMaxDepth));
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ScenarioError(path, "", "cannot read file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(path, "", fmt::format("cannot read file: {}", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ScenarioError(path, "", fmt::format("cannot read file: {}", std::strerror(errno)));
  return parse_scenario(text.str(), path, overrides);
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
