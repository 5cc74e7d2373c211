// RunResult <-> JSON. Keys carry their units (seconds, bytes, per_second) so the file explains itself.
#include "sim/report/result.hpp"

namespace dtsim::report {

using nlohmann::json;

namespace {

json to_json(const Distribution& d) {
  return {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},        {"p99", d.p99},
          {"min", d.min},   {"max", d.max}, {"samples", d.samples}};
}

Distribution distribution_from_json(const json& j) {
  Distribution d;
  d.mean = j.at("mean");
  d.p50 = j.at("p50");
  d.p90 = j.value("p90", d.p50); // points written before p90 was reported: read, not refused
  d.p99 = j.at("p99");
  d.min = j.at("min");
  d.max = j.at("max");
  d.samples = j.at("samples").get<std::vector<double>>();
  return d;
}

json to_json(const StrategyMetrics& m) {
  return {{"name", m.name},
          {"workers", m.workers},
          {"servers", m.servers},
          {"asynchronous", m.asynchronous},
          {"time_per", m.time_per},
          {"updates_per_second", m.updates_per_second},
          {"staleness_iterations", to_json(m.staleness)},
          {"staleness_histogram", m.staleness_histogram},
          {"mean_update_lag_updates", m.mean_update_lag},
          {"dropped_gradients", m.dropped},
          {"barrier_wait_seconds_per_iteration", m.barrier_wait},
          {"bytes_received_per_worker_per_iteration", m.bytes_received_per_worker},
          {"server_bytes_per_second", m.server_bytes_per_second},
          {"server_nic_utilization", m.server_nic_utilization},
          {"gossip_rounds_per_worker_per_iteration", m.gossip_rounds_per_worker},
          {"spectral_gap", m.spectral_gap},
          {"compression_ratio", m.compression_ratio}};
}

StrategyMetrics strategy_from_json(const json& j) {
  StrategyMetrics m;
  m.name = j.at("name");
  m.workers = j.at("workers");
  m.servers = j.at("servers");
  m.asynchronous = j.at("asynchronous");
  m.time_per = j.at("time_per");
  m.updates_per_second = j.at("updates_per_second");
  m.staleness = distribution_from_json(j.at("staleness_iterations"));
  m.staleness_histogram = j.at("staleness_histogram").get<std::vector<std::uint64_t>>();
  m.mean_update_lag = j.at("mean_update_lag_updates");
  m.dropped = j.at("dropped_gradients");
  m.barrier_wait = j.at("barrier_wait_seconds_per_iteration");
  m.bytes_received_per_worker = j.at("bytes_received_per_worker_per_iteration");
  m.server_bytes_per_second = j.at("server_bytes_per_second");
  m.server_nic_utilization = j.at("server_nic_utilization");
  m.gossip_rounds_per_worker = j.at("gossip_rounds_per_worker_per_iteration");
  m.spectral_gap = j.at("spectral_gap");
  m.compression_ratio = j.at("compression_ratio");
  return m;
}

// Each pipeline stage's memory items, as memory_per_gpu lists one GPU's.
json stage_items_json(const std::vector<std::vector<plan::MemoryItem>>& stages) {
  json out = json::array();
  for (const auto& items : stages) {
    json stage = json::array();
    for (const auto& item : items)
      stage.push_back({{"name", item.name}, {"bytes", item.bytes}, {"detail", item.detail}});
    out.push_back(std::move(stage));
  }
  return out;
}

json to_json(const ParallelMetrics& p) {
  return {{"tensor", p.tensor},
          {"context", p.context},
          {"pipeline", p.pipeline},
          {"data", p.data},
          {"expert", p.expert},
          {"micro_batches", p.micro_batches},
          {"virtual_stages", p.virtual_stages},
          {"schedule", p.schedule},
          {"sequence_parallel", p.sequence_parallel},
          {"chunk_units", p.chunk_units},
          {"bubble_fraction", p.bubble_fraction},
          {"stage_memory_bytes", p.stage_memory},
          {"stage_memory_items", stage_items_json(p.stage_items)},
          {"peak_micro_batches_first_stage", p.peak_micro_batches},
          {"moe_routed_tokens_per_iteration", p.routed_tokens},
          {"moe_dropped_tokens_per_iteration", p.dropped_tokens}};
}

ParallelMetrics parallel_from_json(const json& j) {
  ParallelMetrics p;
  p.enabled = true;
  p.tensor = j.at("tensor");
  p.context = j.value("context", 1);
  p.pipeline = j.at("pipeline");
  p.data = j.at("data");
  p.expert = j.at("expert");
  p.micro_batches = j.at("micro_batches");
  p.virtual_stages = j.at("virtual_stages");
  p.schedule = j.at("schedule");
  p.sequence_parallel = j.at("sequence_parallel");
  p.chunk_units = j.at("chunk_units").get<std::vector<int>>();
  p.bubble_fraction = j.at("bubble_fraction");
  p.stage_memory = j.at("stage_memory_bytes").get<std::vector<double>>();
  for (const auto& stage : j.at("stage_memory_items")) {
    auto& items = p.stage_items.emplace_back();
    for (const auto& item : stage)
      items.push_back({item.at("name"), item.at("bytes"), item.value("detail", "")});
  }
  p.peak_micro_batches = j.at("peak_micro_batches_first_stage");
  p.routed_tokens = j.at("moe_routed_tokens_per_iteration");
  p.dropped_tokens = j.at("moe_dropped_tokens_per_iteration");
  return p;
}

json kernels_json(const std::vector<plan::KernelRow>& rows) {
  json out = json::array();
  for (const auto& k : rows)
    out.push_back({{"name", k.name},
                   {"kind", k.kind},
                   {"shape", k.shape},
                   {"precision", k.precision},
                   {"launches_per_iteration", k.launches},
                   {"seconds_per_iteration", k.seconds},
                   {"host_wait_seconds_per_iteration", k.host_wait},
                   {"flops_per_launch", k.flops},
                   {"bytes_per_launch", k.bytes},
                   {"bound", k.bound},
                   {"efficiency", k.efficiency},
                   {"math_seconds_per_iteration", k.math_seconds},
                   {"sm_clock_mhz", k.sm_clock_mhz}});
  return out;
}

std::vector<plan::KernelRow> kernels_from_json(const json& rows) {
  std::vector<plan::KernelRow> out;
  for (const auto& k : rows)
    out.push_back({k.at("name"), k.at("kind"), k.at("shape"), k.at("precision"), k.at("launches_per_iteration"),
                   k.at("seconds_per_iteration"), k.at("host_wait_seconds_per_iteration"), k.at("flops_per_launch"),
                   k.at("bytes_per_launch"), k.at("bound"), k.at("efficiency"), k.at("math_seconds_per_iteration"),
                   k.at("sm_clock_mhz")});
  return out;
}

} // namespace

namespace {

// The SM clock rank 0 sustained: its MHz (null where the profile has no clock figures), what its kernels would draw
// at burst clocks, and the rate its math ran at (1 unless the power limit capped it).
json clock_to_json(const calibration::ClockState& c) {
  return {{"mhz", c.sm_clock_mhz > 0 ? json(c.sm_clock_mhz) : json(nullptr)},
          {"burst_demand_watts", c.demand_watts > 0 ? json(c.demand_watts) : json(nullptr)},
          {"math_rate", c.rate},
          {"power_capped", c.capped}};
}

calibration::ClockState clock_from_json(const json& j) {
  calibration::ClockState c;
  c.sm_clock_mhz = j.at("mhz").is_null() ? 0.0 : j.at("mhz").get<double>();
  c.demand_watts = j.at("burst_demand_watts").is_null() ? 0.0 : j.at("burst_demand_watts").get<double>();
  c.rate = j.at("math_rate");
  c.capped = j.at("power_capped");
  return c;
}

// A figure that does not apply (no dataset size, no grid intensity) is null, not 0.
json energy_to_json(const IterationEnergy& e) {
  if (!e.known) return nullptr;
  const auto or_null = [](double v) { return v > 0 ? json(v) : json(nullptr); };
  return {{"gpu_watts", e.gpu_watts},
          {"math_share", e.math_share},
          {"memory_share", e.memory_share},
          {"node_watts", e.node_watts},
          {"node_idle_watts", e.node_idle_watts},
          {"gpu_watts_by_group", e.group_gpu_watts},
          {"host_watts", e.host_watts},
          {"cluster_watts", e.cluster_watts},
          {"kwh_per_iteration", e.kwh_per_iteration},
          {"kwh_per_epoch", or_null(e.kwh_per_epoch)},
          {"kwh_of_run", e.kwh_of_run},
          {"co2_kg_of_run", or_null(e.co2_kg_of_run)}};
}

json groups_to_json(const std::vector<GroupMetrics>& groups) {
  json out = json::array();
  for (const auto& g : groups)
    out.push_back({{"name", g.name},
                   {"gpu", g.gpu},
                   {"gpus", g.ranks},
                   {"batch_per_gpu", g.batch_per_gpu},
                   {"kernel_seconds_per_iteration", g.kernel_seconds},
                   {"kernel_seconds_by_bound",
                    {{"math", g.bounds.math}, {"memory", g.bounds.memory}, {"launch", g.bounds.launch}}},
                   {"compute_seconds_per_iteration", g.breakdown.compute},
                   {"exposed_communication_seconds_per_iteration", g.breakdown.exposed_communication},
                   {"idle_seconds_per_iteration", g.breakdown.idle}});
  return out;
}

std::vector<GroupMetrics> groups_from_json(const json& j) {
  std::vector<GroupMetrics> out;
  for (const auto& g : j) {
    GroupMetrics m{g.at("name"), g.at("gpu"), g.at("gpus"), g.at("batch_per_gpu"), g.at("kernel_seconds_per_iteration"),
                   {},           {}};
    const auto& bounds = g.at("kernel_seconds_by_bound");
    m.bounds = {bounds.at("math"), bounds.at("memory"), bounds.at("launch")};
    m.breakdown.compute = g.at("compute_seconds_per_iteration");
    m.breakdown.exposed_communication = g.at("exposed_communication_seconds_per_iteration");
    m.breakdown.idle = g.at("idle_seconds_per_iteration");
    out.push_back(std::move(m));
  }
  return out;
}

IterationEnergy energy_from_json(const json& j) {
  IterationEnergy e;
  if (j.is_null()) return e;
  const auto number = [&](const char* key) { return j.at(key).is_null() ? 0.0 : j.at(key).get<double>(); };
  e.known = true;
  e.gpu_watts = number("gpu_watts");
  e.math_share = number("math_share");
  e.memory_share = number("memory_share");
  e.node_watts = number("node_watts");
  e.node_idle_watts = number("node_idle_watts");
  e.group_gpu_watts = j.at("gpu_watts_by_group").get<std::vector<double>>();
  e.host_watts = number("host_watts");
  e.cluster_watts = number("cluster_watts");
  e.kwh_per_iteration = number("kwh_per_iteration");
  e.kwh_per_epoch = number("kwh_per_epoch");
  e.kwh_of_run = number("kwh_of_run");
  e.co2_kg_of_run = number("co2_kg_of_run");
  return e;
}

} // namespace

json to_json(const RunResult& r) {
  const auto links_json = [](const std::vector<LinkUsage>& list) {
    json out = json::array();
    for (const auto& l : list)
      out.push_back({{"link", l.name},
                     {"kind", l.kind},
                     {"bandwidth_bytes_per_second", l.bandwidth},
                     {"bytes", l.bytes},
                     {"utilization", l.utilization}});
    return out;
  };
  const json links = links_json(r.busiest_links);
  json memory = {{"items", json::array()}};
  for (const auto& item : r.memory.items)
    memory["items"].push_back({{"name", item.name}, {"bytes", item.bytes}, {"detail", item.detail}});
  if (!r.memory.host_items.empty()) {
    memory["host_items"] = json::array();
    for (const auto& item : r.memory.host_items)
      memory["host_items"].push_back({{"name", item.name}, {"bytes", item.bytes}, {"detail", item.detail}});
  }
  memory["total_bytes"] = r.memory.total();
  memory["capacity_bytes"] = r.memory.capacity;
  const bool priced = r.price_per_hour > 0; // without a price the costs do not apply: null, not 0
  json out = {
      {"dtsim_result_version", 1},
      {"name", r.name},
      {"nodes", r.nodes},
      {"gpus", r.gpus},
      {"global_batch", r.global_batch},
      {"sample_unit", r.sample_unit},
      {"framework", r.framework},
      {"fidelity",
       {{"mode", r.fidelity}, {"auto", r.fidelity_reason.empty() ? json(nullptr) : json(r.fidelity_reason)}}},
      {"iteration_seconds", to_json(r.iteration)},
      {"throughput_samples_per_second", r.throughput},
      {"compression_stages", r.stages.warmup_steps > 0 ? json{{"warmup_steps", r.stages.warmup_steps},
                                                              {"run_steps", r.stages.run_steps},
                                                              {"warmup_iteration_seconds", r.stages.warmup_iteration},
                                                              {"run_iteration_seconds", r.stages.run_iteration}}
                                                       : json(nullptr)},
      {"epoch_seconds", r.epoch_seconds},
      {"epochs", r.epochs},
      // None without a price; per epoch and for the run none without a dataset to give the run's length (not 0 USD,
      // and not the price of the few iterations simulated, which the text report names as such).
      {"cost_usd", priced ? json{{"per_hour", r.price_per_hour},
                                 {"per_epoch", r.epoch_seconds > 0 ? json(r.cost_per_epoch) : json(nullptr)},
                                 {"run", r.epoch_seconds > 0 ? json(r.cost_of_run) : json(nullptr)}}
                          : json{{"per_hour", nullptr}, {"per_epoch", nullptr}, {"run", nullptr}}},
      {"energy", energy_to_json(r.energy)},
      {"gpu_groups", groups_to_json(r.groups)},
      {"breakdown_seconds_per_iteration",
       {{"compute", r.breakdown.compute},
        {"exposed_communication", r.breakdown.exposed_communication},
        {"idle", r.breakdown.idle},
        {"exposed_by_dimension",
         {{"data", r.breakdown.exposed_data},
          {"tensor", r.breakdown.exposed_tensor},
          {"pipeline", r.breakdown.exposed_pipeline},
          {"expert", r.breakdown.exposed_expert}}}}},
      {"model_flops",
       {{"tokens_per_second", r.utilization.tokens_per_second},
        {"per_iteration", r.utilization.model_flops_per_iteration},
        {"tflops_per_gpu", r.utilization.tflops_per_gpu},
        {"mfu", r.utilization.mfu}}},
      {"communication_seconds_per_iteration", r.communication_seconds},
      {"bytes_sent_per_gpu_per_iteration", r.bytes_sent_per_gpu},
      {"gradient_bytes", r.gradient_bytes},
      {"allreduce_buckets", r.buckets},
      {"allreduce_algorithms", r.allreduce_algorithms},
      {"nccl", r.nccl},
      {"busiest_links", links},
      {"busiest_links_by_kind", links_json(r.busiest_links_by_kind)},
      {"memory_per_gpu", memory},
      {"strategy", to_json(r.strategy)},
      {"kernels", kernels_json(r.kernels)},
      {"host_wait_seconds_per_iteration", r.host_wait_seconds},
      {"sm_clock", clock_to_json(r.clock)},
      {"gpu_speed", {{"sigma", r.gpu_speed_sigma}, {"slowest_time_factor", r.slowest_gpu}}},
      {"kernel_noise", {{"sigma", r.kernel_noise_sigma}, {"synchronization_wait", r.synchronization_wait}}},
      {"simulated_seconds", r.simulated_seconds},
      {"transfers", r.transfers},
      {"iterations",
       {{"total", r.total_iterations},
        {"replayed", r.replayed_iterations},
        {"repeat_period", r.repeat_period > 0 ? json(r.repeat_period) : json(nullptr)}}},
      {"scenario", r.scenario},
  };
  // Only with tensor, pipeline or expert parallelism (the scenario's "parallelism" section).
  if (r.parallel.enabled) out["parallelism"] = to_json(r.parallel);
  // Only when the scenario models the input pipeline (its "input" section).
  if (r.input.modeled)
    out["input_pipeline"] = {{"input_samples_per_second", r.input.samples_per_second},
                             {"cpu_samples_per_second", r.input.cpu_samples_per_second},
                             {"storage_samples_per_second", r.input.storage_samples_per_second},
                             {"loader_seconds_per_iteration", r.input.loader_seconds},
                             {"gpu_seconds_per_iteration", r.input.gpu_seconds},
                             {"bounds_iteration", r.input.bounds_iteration()}};
  if (!r.warnings.empty()) out["warnings"] = r.warnings;
  return out;
}

RunResult run_result_from_json(const json& j) {
  RunResult r;
  r.name = j.at("name");
  r.nodes = j.at("nodes");
  r.gpus = j.at("gpus");
  r.global_batch = j.at("global_batch");
  r.sample_unit = j.at("sample_unit");
  r.framework = j.at("framework");
  r.fidelity = j.at("fidelity").at("mode");
  if (!j.at("fidelity").at("auto").is_null()) r.fidelity_reason = j.at("fidelity").at("auto");
  if (const auto w = j.find("warnings"); w != j.end()) r.warnings = w->get<std::vector<std::string>>();
  r.iteration = distribution_from_json(j.at("iteration_seconds"));
  r.throughput = j.at("throughput_samples_per_second");
  if (const auto& st = j.at("compression_stages"); !st.is_null())
    r.stages = {st.at("warmup_steps"), st.at("run_steps"), st.at("warmup_iteration_seconds"),
                st.at("run_iteration_seconds")};
  r.epoch_seconds = j.at("epoch_seconds");
  r.epochs = j.at("epochs");
  const auto cost = [&](const char* key) {
    const auto& v = j.at("cost_usd").at(key);
    return v.is_null() ? 0.0 : v.get<double>();
  };
  r.price_per_hour = cost("per_hour");
  r.cost_per_epoch = cost("per_epoch");
  r.cost_of_run = cost("run");
  r.energy = energy_from_json(j.at("energy"));
  r.groups = groups_from_json(j.at("gpu_groups"));
  const auto& b = j.at("breakdown_seconds_per_iteration");
  r.breakdown = {b.at("compute"), b.at("exposed_communication"), b.at("idle")};
  const auto& by = b.at("exposed_by_dimension");
  r.breakdown.exposed_data = by.at("data");
  r.breakdown.exposed_tensor = by.at("tensor");
  r.breakdown.exposed_pipeline = by.at("pipeline");
  r.breakdown.exposed_expert = by.at("expert");
  if (const auto it = j.find("parallelism"); it != j.end()) r.parallel = parallel_from_json(*it);
  r.communication_seconds = j.at("communication_seconds_per_iteration");
  const auto& u = j.at("model_flops");
  r.utilization = {u.at("tokens_per_second"), u.at("per_iteration"), u.at("tflops_per_gpu"), u.at("mfu")};
  r.bytes_sent_per_gpu = j.at("bytes_sent_per_gpu_per_iteration");
  r.gradient_bytes = j.at("gradient_bytes");
  r.buckets = j.at("allreduce_buckets");
  r.allreduce_algorithms = j.at("allreduce_algorithms").get<std::vector<std::string>>();
  r.nccl = j.value("nccl", std::string());
  const auto read_links = [](const json& list, std::vector<LinkUsage>& into) {
    for (const auto& l : list)
      into.push_back(
          {l.at("link"), l.at("kind"), l.at("bandwidth_bytes_per_second"), l.at("bytes"), l.at("utilization")});
  };
  read_links(j.at("busiest_links"), r.busiest_links);
  read_links(j.at("busiest_links_by_kind"), r.busiest_links_by_kind);
  const auto& m = j.at("memory_per_gpu");
  r.memory.capacity = m.at("capacity_bytes");
  for (const auto& item : m.at("items"))
    r.memory.items.push_back({item.at("name"), item.at("bytes"), item.value("detail", "")});
  if (const auto host = m.find("host_items"); host != m.end())
    for (const auto& item : *host)
      r.memory.host_items.push_back({item.at("name"), item.at("bytes"), item.value("detail", "")});
  r.strategy = strategy_from_json(j.at("strategy"));
  r.kernels = kernels_from_json(j.at("kernels"));
  r.host_wait_seconds = j.at("host_wait_seconds_per_iteration");
  r.clock = clock_from_json(j.at("sm_clock"));
  if (const auto speed = j.find("gpu_speed"); speed != j.end()) { // absent from points written before it was reported
    r.gpu_speed_sigma = speed->at("sigma");
    r.slowest_gpu = speed->at("slowest_time_factor");
  }
  if (const auto noise = j.find("kernel_noise"); noise != j.end()) { // absent from points written before it was priced
    r.kernel_noise_sigma = noise->at("sigma");
    r.synchronization_wait = noise->at("synchronization_wait");
  }
  r.simulated_seconds = j.at("simulated_seconds");
  r.transfers = j.at("transfers");
  const auto& iterations = j.at("iterations");
  r.total_iterations = iterations.at("total");
  r.replayed_iterations = iterations.at("replayed");
  if (!iterations.at("repeat_period").is_null()) r.repeat_period = iterations.at("repeat_period");
  r.scenario = j.at("scenario");
  if (const auto it = j.find("input_pipeline"); it != j.end()) {
    r.input.modeled = true;
    r.input.samples_per_second = it->at("input_samples_per_second");
    r.input.cpu_samples_per_second = it->at("cpu_samples_per_second");
    r.input.storage_samples_per_second = it->at("storage_samples_per_second");
    r.input.loader_seconds = it->at("loader_seconds_per_iteration");
    r.input.gpu_seconds = it->at("gpu_seconds_per_iteration");
  }
  return r;
}

} // namespace dtsim::report
