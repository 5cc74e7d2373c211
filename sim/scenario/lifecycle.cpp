// The sections of a whole training run (dtsim train): "checkpoint", "storage", "failures", "restart" and "spot".
// Failure presets (sim/lifecycle/failures/*.json) hold a field study's published counts; the rates come from them here.
#include "sim/lifecycle/embedded.hpp"
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include "io/json_text.hpp"
#include "topologies/instance.hpp"

#include <fmt/format.h>

namespace dtsim::scenario::detail {
namespace {

using lifecycle::Distribution;

const std::vector<std::string>& distribution_names() {
  static const std::vector<std::string> names{"exponential", "weibull"};
  return names;
}

constexpr double kDay = 86400;

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& f : lifecycle::embedded_failure_presets())
    names.push_back(f.stem);
  return names;
}

lifecycle::FailureSource read_source(const Object& s, double mtbf_fallback_units) {
  lifecycle::FailureSource f;
  f.component = s.string("component", std::nullopt);
  f.units_per_node = s.number("units_per_node", 1e-6, 1.0, 1e6);
  if (mtbf_fallback_units > 0) { // a preset: the per-unit MTBF from the study's counts
    const double observed = s.number("interruptions", 1e-9, std::nullopt);
    f.mtbf = mtbf_fallback_units * f.units_per_node / observed;
  } else {
    f.mtbf = s.quantity("mtbf", Dimension::duration, Bound::positive, std::nullopt);
  }
  f.distribution = enum_of<Distribution>(distribution_names(),
                                         s.choice("distribution", distribution_names(), "distribution", "exponential"));
  f.weibull_shape = s.number("weibull_shape", 0.05, 1.0, 20.0);
  if (s.has("weibull_shape") && f.distribution != Distribution::weibull)
    s.fail("weibull_shape", "a shape applies to \"distribution\": \"weibull\" only");
  f.detection = s.quantity("detection", Dimension::duration, Bound::non_negative, 0.0);
  f.source = s.string("source", std::string(), /*allow_empty=*/true);
  f.nodes = static_cast<int>(s.integer("nodes", 1, 1, limits::kNodes));
  return f;
}

const std::vector<std::string> kSourceKeys{"component",     "units_per_node", "mtbf",   "distribution",
                                           "weibull_shape", "detection",      "source", "nodes"};

// A preset's sources, their rates from what the study observed: units x days / interruptions per unit.
std::vector<lifecycle::FailureSource> read_preset(const std::string& name) {
  for (const auto& file : lifecycle::embedded_failure_presets()) {
    if (file.stem != name) continue;
    const std::string origin = fmt::format("sim/lifecycle/failures/{}.json", name);
    json document;
    try {
      document = io::parse_json(file.text);
    } catch (const io::JsonTextError& e) {
      throw ScenarioError(origin, e.pointer(), e.what());
    }
    const Object top(origin, &document, "", {"name", "description", "source", "observed", "sources"});
    const std::string study = top.string("source", std::nullopt);
    const Object observed = top.object("observed", {"days", "nodes"});
    const double node_seconds = observed.number("days", 1e-3, std::nullopt) * kDay *
                                static_cast<double>(observed.integer("nodes", 1, std::nullopt));
    std::vector<lifecycle::FailureSource> sources;
    const json* list = top.get("sources");
    if (list == nullptr || !list->is_array()) top.fail("sources", "expected an array of failure sources");
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto keys = kSourceKeys;
      keys.push_back("interruptions");
      keys.push_back("detail");
      const Object s(origin, &(*list)[i], top.pointer("sources") + "/" + std::to_string(i), keys);
      auto f = read_source(s, node_seconds);
      f.source = fmt::format("{}: {}", study, s.string("detail", std::nullopt));
      sources.push_back(std::move(f));
    }
    return sources;
  }
  return {};
}

// Bamboo's redundant computation needs a pipeline whose stages each fill whole nodes: a lost node is then one stage
// (of the replicas it holds), whose predecessor's node holds its state.
void check_redundancy(const Object& spot, const Scenario& s) {
  const auto& p = s.parallelism;
  const auto refuse = [&](const std::string& why) {
    spot.fail("policy", "\"redundancy\" (Bamboo's redundant computation: each pipeline stage also runs its successor's "
                        "forward, and takes its stage over when its node is preempted) " +
                            why);
  };
  if (p.pipeline < 2) refuse("needs pipeline parallelism: parallelism.pipeline of 2 or more");
  if (p.virtual_stages > 1) refuse("runs one model chunk per stage: not the interleaved schedule");
  if (!s.groups.empty()) refuse("is not modeled on a cluster of mixed GPUs");
  if (s.lifecycle.elastic.shrink) refuse("replaces shrinking: give one of the two policies");
  if (p.order.back() != "pp" || s.cluster.nodes % p.pipeline != 0)
    refuse(fmt::format("needs each stage on whole nodes of its own: \"pp\" outermost in parallelism.order and the {} "
                       "nodes a multiple of the {} stages",
                       s.cluster.nodes, p.pipeline));
}

} // namespace

void read_lifecycle(const Object& top, Scenario& s) {
  auto& run = s.lifecycle;
  run.steps = s.training.steps;

  const Object storage = top.object("storage", {"tier", "write_bandwidth", "read_bandwidth", "aggregate_write",
                                                "aggregate_read", "latency", "shares_nic"});
  if (storage.present()) {
    auto& st = run.storage;
    st.tier = storage.string("tier", std::string("storage"));
    // Without a figure of its own, a node writes at its NICs' rate.
    st.write_bandwidth =
        storage.quantity("write_bandwidth", Dimension::bandwidth, Bound::positive, s.cluster.nic.bandwidth);
    st.read_bandwidth = storage.quantity("read_bandwidth", Dimension::bandwidth, Bound::positive, st.write_bandwidth);
    st.aggregate_write = storage.quantity("aggregate_write", Dimension::bandwidth, Bound::positive, 0.0);
    st.aggregate_read = storage.quantity("aggregate_read", Dimension::bandwidth, Bound::positive, st.aggregate_write);
    st.latency = storage.quantity("latency", Dimension::duration, Bound::non_negative, 0.0);
    st.shares_nic = storage.boolean("shares_nic", true);
  }

  const Object checkpoint = top.object("checkpoint", {"interval", "mode", "snapshot_bandwidth"});
  if (checkpoint.present()) {
    if (!storage.present())
      checkpoint.fail_here("checkpoints need a \"storage\" section (where they are written: its bandwidths)");
    auto& c = run.checkpoint;
    c.enabled = true;
    const json* interval = checkpoint.get("interval");
    if (interval != nullptr && !(interval->is_string() && interval->get<std::string>() == "young"))
      c.interval = checkpoint.quantity("interval", Dimension::duration, Bound::positive, std::nullopt);
    const std::vector<std::string> modes{"sync", "async"};
    c.mode = checkpoint.choice("mode", modes, "checkpoint mode", "sync") == "async" ? lifecycle::CheckpointMode::async
                                                                                    : lifecycle::CheckpointMode::sync;
    c.snapshot_bandwidth =
        checkpoint.quantity("snapshot_bandwidth", Dimension::bandwidth, Bound::positive, s.cluster.pcie.bandwidth);
  }

  const Object failures = top.object("failures", {"preset", "sources"});
  if (failures.present()) {
    if (failures.has("preset")) {
      const auto names = preset_names();
      run.failures = read_preset(failures.choice("preset", names, "failure preset", std::nullopt));
    }
    if (const json* list = failures.get("sources")) {
      if (!list->is_array()) failures.fail("sources", "expected an array of failure sources");
      for (std::size_t i = 0; i < list->size(); ++i)
        run.failures.push_back(read_source(
            Object(top.file(), &(*list)[i], failures.pointer("sources") + "/" + std::to_string(i), kSourceKeys), 0));
    }
  }

  const Object restart = top.object("restart", {"reschedule", "startup", "startup_per_gpu", "warmup_iterations"});
  run.restart.reschedule = restart.quantity("reschedule", Dimension::duration, Bound::non_negative, 0.0);
  run.restart.startup = restart.quantity("startup", Dimension::duration, Bound::non_negative, 0.0);
  run.restart.startup_per_gpu = restart.quantity("startup_per_gpu", Dimension::duration, Bound::non_negative, 0.0);
  run.restart.warmup_iterations = static_cast<int>(restart.integer("warmup_iterations", 0, 0, limits::kIterations));

  const Object spot = top.object("spot", {"interruptions_per_month", "trace", "notice", "replacement", "price_per_hour",
                                          "checkpoint_on_notice", "policy"});
  if (spot.present()) {
    auto& sp = run.spot;
    sp.enabled = true;
    if (const json* trace = spot.get("trace")) {
      if (spot.has("interruptions_per_month"))
        spot.fail("trace", "give interruptions_per_month or a trace of interruptions, not both");
      if (!trace->is_array() || trace->empty() || trace->size() > 1000000)
        spot.fail("trace", fmt::format("expected an array of 1 to 1,000,000 durations from the run's start, such as "
                                       "[\"3.5h\", \"2d\"], got {}",
                                       show(*trace)));
      for (std::size_t i = 0; i < trace->size(); ++i) {
        const json& v = (*trace)[i];
        std::optional<double> at;
        if (v.is_number()) at = v.get<double>();
        if (v.is_string()) at = parse_quantity(v.get<std::string>(), Dimension::duration);
        if (!at || *at < 0 || *at > limits::kMaxDuration)
          throw ScenarioError(top.file(), spot.pointer("trace") + "/" + std::to_string(i),
                              fmt::format("expected {} from the run's start, at most 10,000 years, got {}",
                                          describe(Dimension::duration), show(v)));
        sp.trace.push_back(*at);
      }
      std::sort(sp.trace.begin(), sp.trace.end());
    } else {
      sp.interruptions_per_month = spot.number("interruptions_per_month", 0, std::nullopt, 1e6);
    }
    sp.notice = spot.quantity("notice", Dimension::duration, Bound::non_negative, std::nullopt);
    sp.replacement = spot.quantity("replacement", Dimension::duration, Bound::non_negative, std::nullopt);
    // Without a price of its own, the instance preset's published spot price where it has one.
    std::optional<double> listed;
    if (!s.cluster.instance.empty())
      if (const auto instance = topologies::find_instance(s.cluster.instance)) listed = instance->price.spot_per_hour;
    sp.price_per_hour = spot.number("price_per_hour", 0, listed.value_or(0.0), limits::kPricePerHour);
    sp.checkpoint_on_notice = spot.boolean("checkpoint_on_notice", true);
    sp.policy = spot.choice("policy", {"wait", "redundancy"}, "spot policy", "wait") == "redundancy"
                    ? lifecycle::SpotPolicy::redundancy
                    : lifecycle::SpotPolicy::wait;
  }

  const Object elastic = top.object("elastic", {"policy", "reconfigure", "global_batch", "max_lost_replicas"});
  if (elastic.present()) {
    auto& e = run.elastic;
    e.shrink = elastic.choice("policy", {"wait", "shrink"}, "elastic policy", "shrink") == "shrink";
    e.reconfigure = elastic.quantity("reconfigure", Dimension::duration, Bound::non_negative, 0.0);
    e.global_batch = elastic.choice("global_batch", {"keep", "scale"}, "global batch policy", "keep") == "keep"
                         ? lifecycle::GlobalBatch::keep
                         : lifecycle::GlobalBatch::scale;
    e.max_lost_replicas = static_cast<int>(elastic.integer("max_lost_replicas", 1, 4, 64));
  }
  if (run.spot.enabled && run.spot.policy == lifecycle::SpotPolicy::redundancy) check_redundancy(spot, s);
  for (std::size_t i = 0; i < run.failures.size(); ++i)
    if (run.failures[i].nodes > s.cluster.nodes)
      throw ScenarioError(top.file(), "/failures",
                          fmt::format("failure source \"{}\" takes {} nodes at a time; the cluster has {}",
                                      run.failures[i].component, run.failures[i].nodes, s.cluster.nodes));
}

json lifecycle_json(const Scenario& s, json out) {
  const auto& run = s.lifecycle;
  if (run.steps > 0) out["training"]["steps"] = run.steps;
  if (run.checkpoint.enabled) {
    const auto& c = run.checkpoint;
    out["checkpoint"] = {{"mode", c.mode == lifecycle::CheckpointMode::async ? "async" : "sync"},
                         {"snapshot_bandwidth", c.snapshot_bandwidth}};
    out["checkpoint"]["interval"] = c.interval ? json(*c.interval) : json("young");
  }
  if (run.storage.write_bandwidth > 0) {
    const auto& st = run.storage;
    out["storage"] = {{"tier", st.tier},
                      {"write_bandwidth", st.write_bandwidth},
                      {"read_bandwidth", st.read_bandwidth},
                      {"latency", st.latency},
                      {"shares_nic", st.shares_nic}};
    if (st.aggregate_write > 0) out["storage"]["aggregate_write"] = st.aggregate_write;
    if (st.aggregate_read > 0) out["storage"]["aggregate_read"] = st.aggregate_read;
  }
  if (!run.failures.empty()) {
    json sources = json::array();
    for (const auto& f : run.failures) {
      json one = {
          {"component", f.component}, {"units_per_node", f.units_per_node},
          {"mtbf", f.mtbf},           {"distribution", distribution_names()[static_cast<std::size_t>(f.distribution)]},
          {"detection", f.detection}, {"source", f.source}};
      if (f.distribution == Distribution::weibull) one["weibull_shape"] = f.weibull_shape;
      if (f.nodes > 1) one["nodes"] = f.nodes;
      sources.push_back(std::move(one));
    }
    out["failures"] = {{"sources", std::move(sources)}};
  }
  const auto& r = run.restart;
  if (r.reschedule > 0 || r.startup > 0 || r.startup_per_gpu > 0 || r.warmup_iterations > 0)
    out["restart"] = {{"reschedule", r.reschedule},
                      {"startup", r.startup},
                      {"startup_per_gpu", r.startup_per_gpu},
                      {"warmup_iterations", r.warmup_iterations}};
  if (run.spot.enabled) {
    const auto& sp = run.spot;
    out["spot"] = {{"interruptions_per_month", sp.interruptions_per_month},
                   {"notice", sp.notice},
                   {"replacement", sp.replacement},
                   {"price_per_hour", sp.price_per_hour},
                   {"checkpoint_on_notice", sp.checkpoint_on_notice},
                   {"policy", sp.policy == lifecycle::SpotPolicy::redundancy ? "redundancy" : "wait"}};
    if (!sp.trace.empty()) {
      out["spot"].erase("interruptions_per_month");
      out["spot"]["trace"] = sp.trace;
    }
  }
  if (run.elastic.shrink) {
    const auto& e = run.elastic;
    out["elastic"] = {{"policy", "shrink"},
                      {"reconfigure", e.reconfigure},
                      {"global_batch", e.global_batch == lifecycle::GlobalBatch::keep ? "keep" : "scale"},
                      {"max_lost_replicas", e.max_lost_replicas}};
  }
  return out;
}

} // namespace dtsim::scenario::detail

namespace dtsim::scenario {

std::vector<std::string> failure_preset_names() {
  return detail::preset_names();
}

std::vector<lifecycle::FailureSource> failure_preset(const std::string& name) {
  return detail::read_preset(name);
}

} // namespace dtsim::scenario
