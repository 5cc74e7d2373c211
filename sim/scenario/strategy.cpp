// training.strategy, training.compression and the "stragglers" section: how workers keep their models in agreement,
// what their gradients are sent as, and which of them are slow (sim/strategies/strategy.hpp holds the values).
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace dtsim::scenario::detail {
namespace {

namespace st = strategies;

constexpr std::int64_t kMaxStaleness = 1000;
constexpr std::int64_t kMaxPeriod = 1'000'000; // period and accumulation
constexpr std::int64_t kMaxServers = std::int64_t{1} << 20;
constexpr std::int64_t kMaxRank = 1'000'000; // powersgd

const std::vector<std::string> kStrategyKeys{
    "name",  "kind",        "schedule", "staleness",      "servers",      "preset",   "sparse_embeddings",
    "graph", "probability", "period",   "backup_workers", "accumulation", "algorithm"};

std::string forms_list() {
  const auto forms = st::strategy_forms();
  std::string out;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (i > 0) out += i + 1 == forms.size() ? " or " : ", ";
    out += forms[i];
  }
  return out;
}

// The short names without their parameter ("ssp", "preset"), for a did-you-mean.
std::vector<std::string> base_names() {
  std::vector<std::string> out;
  for (const auto& f : st::strategy_forms())
    out.push_back(f.substr(0, f.find_first_of("[:")));
  return out;
}

// A short name, or the error at `key` saying what was accepted (sim/strategies writes the message).
st::StrategySpec named(const Object& section, std::string_view key, const std::string& name) {
  try {
    return st::parse_strategy_name(name);
  } catch (const std::invalid_argument& e) {
    const std::string base = name.substr(0, name.find(':'));
    const auto bases = base_names();
    if (std::find(bases.begin(), bases.end(), base) == bases.end()) {
      const std::string hint = did_you_mean(base, bases);
      if (!hint.empty())
        section.fail(key, fmt::format("unknown strategy \"{}\"{} Expected {}", name, hint, forms_list()));
    }
    section.fail(key, e.what());
  }
}

// A number in (0, 1]: a probability or a fraction.
double fraction(const Object& section, std::string_view key, double fallback) {
  const std::string expected = "a number in (0, 1]";
  const json* v = section.get(key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || !(v->get<double>() > 0) || v->get<double>() > 1)
    section.fail(key, fmt::format("expected {}, got {}", expected, show(*v)));
  return v->get<double>();
}

template <typename Enum>
Enum enum_choice(const Object& section, std::string_view key, const std::vector<std::string>& names,
                 std::string_view what, Enum fallback, std::optional<Enum> (*parse)(std::string_view),
                 std::string_view (*name_of)(Enum)) {
  return *parse(section.choice(key, names, what, std::string(name_of(fallback))));
}

void read_servers(const Object& strategy, st::ServerLayout& servers) {
  const Object section = strategy.object("servers", {"count", "placement", "tensors", "hierarchical", "sums_only",
                                                     "partition_bytes", "channel_bandwidth"});
  if (!section.present()) return;
  const auto placement =
      enum_choice<st::ServerPlacement>(section, "placement", st::placement_names(), "server placement",
                                       servers.placement, st::parse_placement, st::to_string);
  // A placement given without a count takes that placement's own default: one dedicated node, or one per node.
  if (placement != servers.placement && !section.has("count"))
    servers.count = placement == st::ServerPlacement::colocated ? 0 : 1;
  servers.placement = placement;
  servers.count = static_cast<int>(section.integer("count", 0, servers.count, kMaxServers));
  if (servers.count == 0 && servers.placement == st::ServerPlacement::dedicated)
    section.fail(section.has("count") ? "count" : "placement",
                 "dedicated servers need a count >= 1; a count of 0 means one server on every node and needs "
                 "\"placement\": \"colocated\"");
  servers.hierarchical = section.boolean("hierarchical", servers.hierarchical);
  servers.sums_only = section.boolean("sums_only", servers.sums_only);
  servers.partition_bytes =
      section.quantity("partition_bytes", Dimension::bytes, Bound::non_negative, servers.partition_bytes);
  // BytePS rounds its partitions up to whole pages (local GPUs x 4 KiB), so no partition is smaller than a page.
  if (servers.partition_bytes > 0 && servers.partition_bytes < 4096)
    section.fail("partition_bytes", fmt::format("expected 0 (no partitions) or at least 4096 bytes (a page), got {}",
                                                servers.partition_bytes));
  servers.channel_bandwidth =
      section.quantity("channel_bandwidth", Dimension::bandwidth, Bound::non_negative, servers.channel_bandwidth);
  servers.tensors =
      enum_choice<st::TensorPlacement>(section, "tensors", st::tensor_placement_names(), "tensor placement",
                                       servers.tensors, st::parse_tensor_placement, st::to_string);
  if (servers.tensors != st::TensorPlacement::split && servers.partition_bytes > 0)
    section.fail(section.has("tensors") ? "tensors" : "partition_bytes",
                 fmt::format("partitions spread every tensor over the servers; \"tensors\": \"{}\" keeps each whole "
                             "on one: give one of them (\"tensors\": \"split\" with partitions)",
                             st::to_string(servers.tensors)));
}

st::StrategySpec read_strategy_object(const Object& o) {
  st::StrategySpec s = o.has("name") ? named(o, "name", o.string("name", std::nullopt)) : st::StrategySpec{};
  if (o.has("preset")) {
    const auto from = named(o, "preset", "preset:" + o.string("preset", std::nullopt));
    if (o.has("name") && from.preset != s.preset)
      o.fail("preset", fmt::format("names preset \"{}\", and \"name\" gives {}; give only one of them", from.preset,
                                   s.preset.empty() ? "no preset" : fmt::format("\"{}\"", s.preset)));
    s = from;
  }
  if (o.has("kind")) {
    const auto kind =
        enum_choice<st::Kind>(o, "kind", st::kind_names(), "strategy kind", s.kind, st::parse_kind, st::to_string);
    // The fields the name set belong to another kind: start from the given kind's own defaults instead.
    if (kind != s.kind) s = st::default_strategy(kind);
  }
  const auto schedule = enum_choice<st::Schedule>(o, "schedule", st::schedule_names(), "schedule", s.schedule,
                                                  st::parse_schedule, st::to_string);
  // "bounded" without a staleness bounds it as "ssp" does, rather than at 0 (which would be synchronous).
  if (schedule == st::Schedule::bounded && s.schedule != st::Schedule::bounded)
    s.staleness = st::parse_strategy_name("ssp").staleness;
  s.schedule = schedule;
  s.staleness = static_cast<int>(o.integer("staleness", 0, s.staleness, kMaxStaleness));
  read_servers(o, s.servers);
  s.sparse_embeddings = o.boolean("sparse_embeddings", s.sparse_embeddings);
  s.graph = enum_choice<st::PeerGraph>(o, "graph", st::peer_graph_names(), "peer graph", s.graph, st::parse_peer_graph,
                                       st::to_string);
  s.probability = fraction(o, "probability", s.probability);
  s.period = static_cast<int>(o.integer("period", 1, s.period, kMaxPeriod));
  s.backup_workers = static_cast<int>(o.integer("backup_workers", 0, s.backup_workers)); // < workers: check_strategy
  s.accumulation = static_cast<int>(o.integer("accumulation", 1, s.accumulation, kMaxPeriod));
  if (o.has("algorithm")) {
    const auto a =
        *collectives::parse_algorithm(o.choice("algorithm", algorithm_names(), "all-reduce algorithm", std::nullopt));
    s.algorithm = a == collectives::Algorithm::automatic ? std::nullopt : std::optional(a);
  }
  // A preset changed by explicit fields is no longer that system: it keeps the preset's name only while it is it.
  if (!s.preset.empty()) {
    const st::Preset* p = st::find_preset(s.preset);
    if (p == nullptr || p->strategy != s) s.preset.clear();
  }
  return s;
}

// "8 workers" or "6 workers (8 GPUs less the 2 of the dedicated server nodes)".
std::string describe_workers(const Scenario& s) {
  const int workers = st::worker_count(s.training.strategy, s.cluster.nodes, s.cluster.gpus_per_node);
  if (workers == s.world_size()) return fmt::format("{} workers", workers);
  const int servers = st::dedicated_server_nodes(s.training.strategy);
  return fmt::format("{} workers ({} GPUs less the {} of the {} dedicated server node{})", workers, s.world_size(),
                     s.world_size() - workers, servers, servers == 1 ? "" : "s");
}

} // namespace

std::string strategy_pointer(const Object& top, std::initializer_list<std::string_view> path) {
  std::string pointer = top.pointer("training") + "/strategy";
  const json* at = top.get("training");
  at = at != nullptr && at->is_object() && at->contains("strategy") ? &at->at("strategy") : nullptr;
  for (const auto key : path) {
    if (at == nullptr || !at->is_object() || !at->contains(key)) break;
    at = &at->at(std::string(key));
    // Appended in two steps: "/" + token as one expression trips GCC 12's -Wrestrict false positive (GCC bug 105651).
    pointer += '/';
    pointer += escape_pointer_token(key);
  }
  return pointer;
}

st::StrategySpec read_strategy(const Object& training) {
  const json* v = training.get("strategy");
  if (v == nullptr) return {};
  if (v->is_string()) return named(training, "strategy", v->get<std::string>());
  if (!v->is_object())
    training.fail("strategy", fmt::format("expected a short name ({}) or an object, got {}", forms_list(), show(*v)));
  return read_strategy_object(Object(training.file(), v, training.pointer("strategy"), kStrategyKeys));
}

st::CompressionSpec read_compression(const Object& training) {
  st::CompressionSpec c;
  const json* v = training.get("compression");
  if (v == nullptr) return c;
  const auto names = st::compression_kind_names();
  if (v->is_string()) {
    c.kind = *st::parse_compression_kind(training.choice("compression", names, "compression", std::nullopt));
    return c;
  }
  if (!v->is_object())
    training.fail("compression", fmt::format("expected one of {} or an object {{\"kind\", \"ratio\", \"rank\", "
                                             "\"error_feedback\", \"warmup_steps\"}}, got {}",
                                             quoted_list(names), show(*v)));
  const Object o(training.file(), v, training.pointer("compression"),
                 {"kind", "ratio", "rank", "error_feedback", "warmup_steps"});
  c.kind = *st::parse_compression_kind(o.choice("kind", names, "compression", std::nullopt));
  c.ratio = fraction(o, "ratio", c.ratio);
  c.rank = static_cast<int>(o.integer("rank", 1, c.rank, kMaxRank));
  c.error_feedback = o.boolean("error_feedback", c.error_feedback);
  c.warmup_steps = o.integer("warmup_steps", 0, 0, limits::kSteps);
  if (c.warmup_steps > 0 && c.kind == st::CompressionKind::none)
    o.fail("warmup_steps", "dense steps before compression need a compression kind other than \"none\"");
  return c;
}

void check_strategy(const Object& top, const Scenario& s) {
  const auto& spec = s.training.strategy;
  const int servers = st::dedicated_server_nodes(spec);
  if (servers >= s.cluster.nodes)
    throw ScenarioError(
        top.file(), strategy_pointer(top, {"servers", "count"}),
        fmt::format("{} dedicated server node{} need at least {} nodes, one left to train, and the cluster has {}; "
                    "add nodes, or put the servers on the workers' nodes with \"servers\": {{\"placement\": "
                    "\"colocated\"}}",
                    servers, servers == 1 ? "" : "s", servers + 1, s.cluster.nodes));
  const int workers = st::worker_count(spec, s.cluster.nodes, s.cluster.gpus_per_node);
  if (spec.backup_workers >= workers)
    throw ScenarioError(top.file(), strategy_pointer(top, {"backup_workers"}),
                        fmt::format("expected fewer backup workers than workers, {}, got {}: a round needs at least "
                                    "one worker's gradient",
                                    describe_workers(s), spec.backup_workers));
}

st::StragglerSpec read_stragglers(const Object& top, const Scenario& s) {
  const Object section =
      top.object("stragglers", {"ranks", "slowdown", "jitter", "gpu_speed_sigma", "kernel_noise_sigma"});
  st::StragglerSpec out;
  if (!section.present()) return out;
  const int workers = st::worker_count(s.training.strategy, s.cluster.nodes, s.cluster.gpus_per_node);
  if (const json* ranks = section.get("ranks")) {
    if (!ranks->is_array()) section.fail("ranks", "expected an array of worker ranks, got " + show(*ranks));
    std::set<int> seen;
    for (std::size_t i = 0; i < ranks->size(); ++i) {
      const json& r = (*ranks)[i];
      const std::string pointer = section.pointer("ranks") + "/" + std::to_string(i);
      const bool in_range = r.is_number_integer() && r.get<std::int64_t>() >= 0 && r.get<std::int64_t>() < workers;
      if (!in_range)
        throw ScenarioError(
            top.file(), pointer,
            fmt::format("expected a worker rank from 0 to {} ({}), got {}", workers - 1, describe_workers(s), show(r)));
      const int rank = r.get<int>();
      if (!seen.insert(rank).second)
        throw ScenarioError(top.file(), pointer, fmt::format("rank {} is listed twice", rank));
      out.ranks.push_back(rank);
    }
  }
  // Slow ranks without a factor would be silently as fast as the others.
  if (!out.ranks.empty() && !section.has("slowdown"))
    section.fail("slowdown", "missing; expected a number >= 1, the listed ranks' compute time factor (2: twice "
                             "as slow)");
  out.slowdown = section.number("slowdown", 1, out.slowdown, 1e6);
  const Object jitter = section.object("jitter", {"distribution", "scale"});
  if (jitter.present()) {
    out.jitter =
        *st::parse_jitter(jitter.choice("distribution", st::jitter_names(), "jitter distribution", std::nullopt));
    // A lognormal's factor is exp(scale z): at scale 1.5 a draw 8 deviations out (the generator's reach) is 1.6e5 times
    // the compute, within the slowdown's bound; at 300 it overflows, and the simulation with it.
    const double most = out.jitter == st::Jitter::lognormal ? 1.5 : 1e3;
    out.scale = jitter.number("scale", 0, out.jitter == st::Jitter::none ? std::optional(0.0) : std::nullopt, most);
  }
  // At 0.5 the slowest of 100,000 GPUs computes exp(0.5 x 4.4) = 9 times as long as the median: far past any
  // measured fleet (Sinha et al.'s widest cluster spans 22%, sigma 0.04).
  out.gpu_speed_sigma = section.number("gpu_speed_sigma", 0, out.gpu_speed_sigma, 0.5);
  // At 0.2 a kernel's time spreads 20%: twenty times the measured spread, past any GPU not failing.
  out.kernel_noise_sigma = section.number("kernel_noise_sigma", 0, out.kernel_noise_sigma, 0.2);
  return out;
}

json strategy_json(const st::StrategySpec& s) {
  json out = {{"name", st::strategy_name(s)},
              {"kind", st::to_string(s.kind)},
              {"schedule", st::to_string(s.schedule)},
              {"staleness", s.staleness},
              {"servers",
               {{"count", s.servers.count},
                {"placement", st::to_string(s.servers.placement)},
                {"tensors", st::to_string(s.servers.tensors)},
                {"channel_bandwidth", s.servers.channel_bandwidth},
                {"hierarchical", s.servers.hierarchical},
                {"sums_only", s.servers.sums_only},
                {"partition_bytes", s.servers.partition_bytes}}},
              {"sparse_embeddings", s.sparse_embeddings},
              {"graph", st::to_string(s.graph)},
              {"probability", s.probability},
              {"period", s.period},
              {"backup_workers", s.backup_workers},
              {"accumulation", s.accumulation}};
  if (s.algorithm) out["algorithm"] = collectives::to_string(*s.algorithm);
  if (!s.preset.empty()) out["preset"] = s.preset;
  return out;
}

json compression_json(const st::CompressionSpec& c) {
  return {{"kind", st::to_string(c.kind)},
          {"ratio", c.ratio},
          {"rank", c.rank},
          {"error_feedback", c.error_feedback},
          {"warmup_steps", c.warmup_steps}};
}

json stragglers_json(const st::StragglerSpec& s) {
  return {{"ranks", s.ranks},
          {"slowdown", s.slowdown},
          {"jitter", {{"distribution", st::to_string(s.jitter)}, {"scale", s.scale}}},
          {"gpu_speed_sigma", s.gpu_speed_sigma},
          {"kernel_noise_sigma", s.kernel_noise_sigma}};
}

} // namespace dtsim::scenario::detail
