// Names of strategies and of their parts, as scenarios, `dtsim list strategies` and comparisons spell them.
#include "sim/strategies/strategy.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace dtsim::strategies {
namespace {

constexpr std::array<std::string_view, 7> kKindNames{"allreduce", "parameter-server", "dpsgd", "adpsgd", "gossip",
                                                     "easgd",     "local-sgd"};
constexpr std::array<std::string_view, 3> kScheduleNames{"sync", "async", "bounded"};
constexpr std::array<std::string_view, 2> kPlacementNames{"dedicated", "colocated"};
constexpr std::array<std::string_view, 3> kTensorPlacementNames{"split", "least-loaded", "round-robin"};
constexpr std::array<std::string_view, 2> kPeerGraphNames{"ring", "exponential"};
constexpr std::array<std::string_view, 6> kCompressionNames{"none", "fp16", "sign", "topk", "randomk", "powersgd"};
constexpr std::array<std::string_view, 4> kJitterNames{"none", "lognormal", "uniform", "exponential"};

// The defaults a short name's parameter takes when it is left out.
constexpr int kDefaultStaleness = 3;        // Ho et al. 2013 ran SSP with staleness 3 among others
constexpr double kDefaultProbability = 0.1; // GoSGD's exchange probability p
constexpr int kDefaultEasgdPeriod = 4;      // EASGD's communication period tau
constexpr int kDefaultLocalSgdPeriod = 8;   // local SGD's H
constexpr int kMaxStaleness = 1000;
constexpr int kMaxPeriod = 1'000'000;

template <typename Enum, std::size_t N>
std::optional<Enum> lookup(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

template <std::size_t N> std::vector<std::string> all(const std::array<std::string_view, N>& names) {
  return {names.begin(), names.end()};
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s)
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Preset names are matched as people type them: "parameter-server", "project_adam", "pytorch".
std::string preset_key(std::string_view name) {
  std::string out;
  for (char c : name)
    if (c != ' ' && c != '-' && c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string forms_text() {
  std::string out;
  const auto forms = strategy_forms();
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (i > 0) out += i + 1 == forms.size() ? " or " : ", ";
    out += forms[i];
  }
  return out;
}

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(fmt::format("{}; expected {}", message, forms_text()));
}

int integer_parameter(std::string_view name, std::string_view text, std::string_view what, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    fail(fmt::format("strategy \"{}\": {} must be an integer from {} to {}", name, what, min, max));
  return value;
}

double probability_parameter(std::string_view name, std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || !(value > 0) || value > 1)
    fail(fmt::format("strategy \"{}\": the push probability P must be a number in (0, 1]", name));
  return value;
}

StrategySpec from_preset(std::string_view preset_name) {
  const Preset* p = find_preset(preset_name);
  if (p == nullptr) {
    std::string names;
    for (const auto& q : presets())
      names += (names.empty() ? "" : ", ") + q.name;
    throw std::invalid_argument(fmt::format(
        "unknown preset \"{}\"; expected preset:NAME with one of {} (dtsim list strategies)", preset_name, names));
  }
  return p->strategy;
}

} // namespace

std::string_view to_string(Kind k) {
  return kKindNames.at(static_cast<std::size_t>(k));
}
std::string_view to_string(Schedule s) {
  return kScheduleNames.at(static_cast<std::size_t>(s));
}
std::string_view to_string(ServerPlacement p) {
  return kPlacementNames.at(static_cast<std::size_t>(p));
}
std::string_view to_string(TensorPlacement p) {
  return kTensorPlacementNames.at(static_cast<std::size_t>(p));
}
std::string_view to_string(PeerGraph g) {
  return kPeerGraphNames.at(static_cast<std::size_t>(g));
}
std::string_view to_string(CompressionKind c) {
  return kCompressionNames.at(static_cast<std::size_t>(c));
}
std::string_view to_string(Jitter j) {
  return kJitterNames.at(static_cast<std::size_t>(j));
}

std::optional<Kind> parse_kind(std::string_view name) {
  return lookup<Kind>(kKindNames, name);
}
std::optional<Schedule> parse_schedule(std::string_view name) {
  return lookup<Schedule>(kScheduleNames, name);
}
std::optional<ServerPlacement> parse_placement(std::string_view name) {
  return lookup<ServerPlacement>(kPlacementNames, name);
}
std::optional<TensorPlacement> parse_tensor_placement(std::string_view name) {
  return lookup<TensorPlacement>(kTensorPlacementNames, name);
}
std::optional<PeerGraph> parse_peer_graph(std::string_view name) {
  return lookup<PeerGraph>(kPeerGraphNames, name);
}
std::optional<CompressionKind> parse_compression_kind(std::string_view name) {
  return lookup<CompressionKind>(kCompressionNames, name);
}
std::optional<Jitter> parse_jitter(std::string_view name) {
  return lookup<Jitter>(kJitterNames, name);
}

std::vector<std::string> kind_names() {
  return all(kKindNames);
}
std::vector<std::string> schedule_names() {
  return all(kScheduleNames);
}
std::vector<std::string> placement_names() {
  return all(kPlacementNames);
}
std::vector<std::string> tensor_placement_names() {
  return all(kTensorPlacementNames);
}
std::vector<std::string> peer_graph_names() {
  return all(kPeerGraphNames);
}
std::vector<std::string> compression_kind_names() {
  return all(kCompressionNames);
}
std::vector<std::string> jitter_names() {
  return all(kJitterNames);
}

std::vector<std::string> strategy_forms() {
  return {"allreduce", "ps-sync",    "ps-async",    "ssp[:S]",       "dpsgd",
          "adpsgd",    "gossip[:P]", "easgd[:TAU]", "local-sgd[:H]", "preset:NAME"};
}

StrategySpec parse_strategy_name(std::string_view name) {
  const auto colon = name.find(':');
  const std::string base = lower(name.substr(0, colon));
  const std::optional<std::string_view> parameter =
      colon == std::string_view::npos ? std::nullopt : std::optional(name.substr(colon + 1));
  StrategySpec s;
  // The kinds without a parameter.
  const auto plain = [&](Kind kind, Schedule schedule = Schedule::synchronous) {
    if (parameter) fail(fmt::format("strategy \"{}\" takes no parameter, got \"{}\"", base, name));
    s.kind = kind;
    s.schedule = schedule;
    return s;
  };
  if (base == "allreduce") return plain(Kind::allreduce);
  if (base == "ps-sync") return plain(Kind::parameter_server, Schedule::synchronous);
  if (base == "ps-async") return plain(Kind::parameter_server, Schedule::asynchronous);
  if (base == "dpsgd") return plain(Kind::dpsgd);
  if (base == "adpsgd") return plain(Kind::adpsgd);
  if (base == "ssp") {
    s.kind = Kind::parameter_server;
    s.schedule = Schedule::bounded;
    s.staleness =
        parameter ? integer_parameter(base, *parameter, "the staleness S", 0, kMaxStaleness) : kDefaultStaleness;
    return s;
  }
  if (base == "gossip") {
    s.kind = Kind::gossip;
    s.probability = parameter ? probability_parameter(base, *parameter) : kDefaultProbability;
    return s;
  }
  if (base == "easgd") {
    // Zhang et al. 2015's asynchronous EASGD: workers meet one centre variable on a server of its own.
    s.kind = Kind::easgd;
    s.schedule = Schedule::asynchronous;
    s.servers = {.count = 1, .placement = ServerPlacement::dedicated, .hierarchical = false};
    s.period = parameter ? integer_parameter(base, *parameter, "the period TAU", 1, kMaxPeriod) : kDefaultEasgdPeriod;
    return s;
  }
  if (base == "local-sgd") {
    s.kind = Kind::local_sgd;
    s.period = parameter ? integer_parameter(base, *parameter, "the period H", 1, kMaxPeriod) : kDefaultLocalSgdPeriod;
    return s;
  }
  if (base == "preset") {
    if (!parameter || parameter->empty()) fail("\"preset\" needs a system's name, as in preset:Petuum");
    return from_preset(*parameter);
  }
  fail(fmt::format("unknown strategy \"{}\"", name));
}

std::string strategy_name(const StrategySpec& s) {
  if (!s.preset.empty()) return "preset:" + s.preset;
  switch (s.kind) {
  case Kind::allreduce:
    return "allreduce";
  case Kind::parameter_server:
    if (s.schedule == Schedule::synchronous) return "ps-sync";
    if (s.schedule == Schedule::asynchronous) return "ps-async";
    return fmt::format("ssp:{}", s.staleness);
  case Kind::dpsgd:
    return "dpsgd";
  case Kind::adpsgd:
    return "adpsgd";
  case Kind::gossip:
    return fmt::format("gossip:{}", s.probability); // shortest form that reads back to the same double
  case Kind::easgd:
    return fmt::format("easgd:{}", s.period);
  case Kind::local_sgd:
    return fmt::format("local-sgd:{}", s.period);
  }
  return std::string(to_string(s.kind));
}

StrategySpec default_strategy(Kind k) {
  // Indexed by Kind: each kind's short name.
  constexpr std::array<std::string_view, 7> kBaseNames{"allreduce", "ps-sync", "dpsgd",    "adpsgd",
                                                       "gossip",    "easgd",   "local-sgd"};
  return parse_strategy_name(kBaseNames.at(static_cast<std::size_t>(k)));
}

bool uses_servers(const StrategySpec& s) {
  return s.kind == Kind::parameter_server || s.kind == Kind::easgd;
}

bool servers_step(const StrategySpec& s) {
  return s.kind == Kind::parameter_server && s.period == 1 && !s.servers.sums_only;
}

int dedicated_server_nodes(const StrategySpec& s) {
  return uses_servers(s) && s.servers.placement == ServerPlacement::dedicated ? s.servers.count : 0;
}

int worker_count(const StrategySpec& s, int nodes, int gpus_per_node) {
  return (nodes - dedicated_server_nodes(s)) * gpus_per_node;
}

bool is_asynchronous(const StrategySpec& s) {
  switch (s.kind) {
  case Kind::allreduce:
  case Kind::dpsgd:
  case Kind::local_sgd:
    return false;
  case Kind::parameter_server:
  case Kind::easgd:
    return s.schedule != Schedule::synchronous;
  case Kind::adpsgd:
  case Kind::gossip:
    return true;
  }
  return false;
}

const Preset* find_preset(std::string_view name) {
  const std::string key = preset_key(name);
  for (const auto& p : presets())
    if (preset_key(p.name) == key) return &p;
  return nullptr;
}

} // namespace dtsim::strategies
