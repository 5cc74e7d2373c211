#pragma once
// How workers keep their models in agreement: the synchronization strategy (Kako et al. 2021's optimization, scheduling
// and parameter exchange), gradient compression around it, and stragglers to compare the schemes where they differ.
// Plain values: parsed by sim/scenario, planned by sim/plan into execution graphs, named for `dtsim compare`.
#include "sim/collectives/schedule.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::strategies {

enum class Kind : std::uint8_t {
  allreduce,        // decentralized synchronous: every gradient all-reduced (PyTorch DDP, Horovod)
  parameter_server, // centralized: workers push gradients to servers and pull parameters back
  dpsgd,            // D-PSGD (Lian et al. 2017): average with graph neighbours every iteration, synchronous
  adpsgd,           // AD-PSGD (Lian et al. 2018): asynchronous pairwise averaging with a random peer
  gossip,           // GoSGD (Blot et al. 2016): sum-weight gossip push to a random peer with probability p
  easgd,            // EASGD (Zhang et al. 2015): elastic averaging with a centre variable every tau steps
  local_sgd,        // local SGD / model averaging (Lin et al. 2020): all-reduce the model every H steps
};

// When a parameter server answers a worker's push (Ho et al. 2013 name the three).
enum class Schedule : std::uint8_t {
  synchronous,  // BSP: after every worker's gradient of the round is in (less the backup workers')
  asynchronous, // ASP: at once, whatever the others do (DistBelief, Hogwild)
  bounded,      // SSP (Petuum): at once, unless the worker is more than `staleness` iterations ahead of the slowest
};

enum class ServerPlacement : std::uint8_t {
  dedicated, // the cluster's last nodes run the servers and train nothing
  colocated, // a server on every worker node (BigDL, BytePS, MXNet's default k = n)
};

// What one gRPC channel between two TensorFlow processes moves: tensorflow/tensorflow#6116 (RecvTensor of a 100 MB
// tensor, worker to worker, TensorFlow after its August 2017 gRPC upgrade) measured 500 MB/s across three machines
// whose GPUDirect RDMA path (grpc+gdr) moved 3,400 MB/s on the same benchmark, so gRPC's serialization and copies set
// the rate, not the network; another run reached 800 MB/s between two machines on 10 GbE. The rate where the
// network was not the limit is taken.
inline constexpr double kGrpcChannelBandwidth = 500e6; // bytes/s

// How the model's parameters are spread over the servers.
enum class TensorPlacement : std::uint8_t {
  split, // every push split evenly over all servers (ps-lite and MXNet's kvstore slice big arrays over the servers)
  // Each layer's parameters whole on one server, the one least loaded so far in elements, layers in the model's order:
  // tf_cnn_benchmarks' ParamServerDeviceSetter ("assign variables on the least loaded ps-device",
  // variable_mgr_util.py), TensorFlow's GreedyLoadBalancingStrategy.
  least_loaded,
  // Layer i's parameters whole on server i mod count: tf.train.replica_device_setter's default round robin.
  round_robin,
};

struct ServerLayout {
  int count = 1; // shards. colocated: one per node when 0
  ServerPlacement placement = ServerPlacement::dedicated;
  bool hierarchical = false; // reduce inside each node first; one GPU per node talks to the servers (BytePS)
  // The servers only sum the pushed gradients and each worker steps its own optimizer on the pulled sum: BytePS's
  // summation service (Jiang et al., OSDI 2020, section 5: the optimizer stays on the GPU, the CPU only adds).
  bool sums_only = false;
  // > 0: a worker pushes each bucket in parts of this many bytes, part g of its iteration to server g mod count, each
  // part a key of its own, so that one part's sum comes back while the next goes out (BytePS's partitions:
  // BYTEPS_PARTITION_BYTES, 4,096,000 by default, byteps/common/global.cc). 0: every push split evenly over all
  // servers and answered whole (MXNet's kvstore for big arrays).
  double partition_bytes = 0;
  TensorPlacement tensors = TensorPlacement::split; // how the parameters are spread over the shards
  // > 0: bytes/s one worker's messages to a server, and its answers, move at most: the RPC library's channel, which
  // serializes and copies every byte on the CPU (TensorFlow's gRPC: kGrpcChannelBandwidth). 0: the links and the
  // network's TCP streams decide.
  double channel_bandwidth = 0;

  bool operator==(const ServerLayout&) const = default;
};

// The neighbours a D-PSGD worker averages with.
enum class PeerGraph : std::uint8_t {
  ring,        // left and right (Lian et al. 2017)
  exponential, // peers at distance 1, 2, 4, ... (Assran et al. 2019, SGP)
};

struct StrategySpec {
  Kind kind = Kind::allreduce;
  Schedule schedule = Schedule::synchronous;       // parameter_server, easgd
  int staleness = 0;                               // bounded: how many iterations a worker may lead the slowest
  ServerLayout servers;                            // parameter_server, easgd
  bool sparse_embeddings = false;                  // push only the embedding rows a batch touched (parameter_server)
  PeerGraph graph = PeerGraph::ring;               // dpsgd
  double probability = 0.1;                        // gossip: chance to push each iteration
  int period = 1;                                  // local_sgd: H; easgd: tau; parameter_server: push every `period`
  int backup_workers = 0;                          // synchronous parameter_server: proceed with the first n - b
  int accumulation = 1;                            // micro-batches accumulated per update (gradient accumulation)
  std::optional<collectives::Algorithm> algorithm; // allreduce: a preset's exchange (FireCaffe: binomial tree)
  std::string preset;                              // the seed-001 system it came from, if any

  bool operator==(const StrategySpec&) const = default;
};

// Gradient compression (what is sent instead of dense fp32 or fp16 gradients).
enum class CompressionKind : std::uint8_t {
  none,
  fp16,     // cast to 16 bits
  sign,     // 1-bit / signSGD with error feedback (Seide et al. 2014; Karimireddy et al. 2019): 32x, plus scales
  topk,     // the k% largest magnitudes, as (value, index) pairs (Lin et al. 2018, DGC); all-gathered
  randomk,  // k% of the values at seeded random positions (Stich et al. 2018); indices from the shared seed
  powersgd, // rank-r low-rank factors P and Q of each matrix (Vogels et al. 2019), all-reduced
};

struct CompressionSpec {
  CompressionKind kind = CompressionKind::none;
  double ratio = 0.01;        // topk, randomk: fraction of the values sent
  int rank = 4;               // powersgd
  bool error_feedback = true; // sign, topk, randomk: keep the residual and add it next time (one more buffer)
  // Steps of dense gradients before compression starts: DeepSpeed 1-bit Adam's freeze_step (its uncompressed Adam
  // warm-up, deepspeed/runtime/fp16/onebit/adam.py), PyTorch PowerSGD's start_powerSGD_iter. 0: compressed from the
  // first step.
  std::int64_t warmup_steps = 0;

  bool operator==(const CompressionSpec&) const = default;
};

// Per-worker slowdown of compute: a fixed factor on chosen ranks, and seeded per-iteration jitter on every rank.
enum class Jitter : std::uint8_t {
  none,
  lognormal,   // factor exp(N(0, scale^2))
  uniform,     // factor 1 + U(0, scale)
  exponential, // factor 1 + Exp(mean scale)
};

// How far apart GPUs of one model run: sigma of ln(a GPU's compute time over the median GPU's). Sinha et al. (SC'22,
// "Not All GPUs Are Created Equal") measured a kernel 8% apart on average across the GPUs of five production
// clusters, their "variation" being a box plot's whisker span (the fastest to the slowest GPU that is not an
// outlier); a normal population's whiskers lie 2.70 standard deviations either side of its median, so sigma =
// 0.08 / 5.40 = 0.0148 (derived). Their outliers, up to 1.5x slower than the median, are left to `ranks`: a fleet's
// health checks take such GPUs out of service. plan/gpu_speed.hpp places the speeds on ranks.
inline constexpr double kMeasuredGpuSpeedSigma = 0.0148;
// How far apart one kernel's times run on one GPU: the median coefficient of variation (standard deviation over mean)
// of the 237 kernels of 100 us or longer (GEMMs, attention, streaming and elementwise kernels) that dtsim-probe timed
// 50 or 100 times back to back on one H100 SXM (0.84%) and one H200 (0.91%), 2026-11-26 (calibration/measurements).
// plan/kernel_noise.hpp prices what synchronous groups wait for it.
inline constexpr double kMeasuredKernelNoiseSigma = 0.0087;

struct StragglerSpec {
  std::vector<int> ranks; // workers that are always slower
  double slowdown = 1;    // their compute time factor (>= 1)
  Jitter jitter = Jitter::none;
  double scale = 0;                                      // jitter parameter (see Jitter)
  double gpu_speed_sigma = kMeasuredGpuSpeedSigma;       // 0: every GPU at its profile's (the median GPU's) speed
  double kernel_noise_sigma = kMeasuredKernelNoiseSigma; // 0: every kernel takes its priced time exactly
  // Stragglers beyond the GPUs' own spread: ranks enter collectives at times that differ from iteration to iteration
  // (or by far more than the spread), which the auto fidelity replays step by step.
  bool any() const { return (!ranks.empty() && slowdown != 1) || (jitter != Jitter::none && scale > 0); }

  bool operator==(const StragglerSpec&) const = default;
};

// Short names, as `dtsim compare --strategies` and `"strategy": "ssp:3"` take them:
//   allreduce, ps-sync, ps-async, ssp[:s], dpsgd, adpsgd, gossip[:p], easgd[:tau], local-sgd[:H], preset:NAME
// Throws std::invalid_argument saying what was expected.
StrategySpec parse_strategy_name(std::string_view name);
std::string strategy_name(const StrategySpec& s); // the short name back ("ssp:3")
// What a kind's short name without a parameter gives (parameter_server: "ps-sync"; easgd: "easgd", tau 4).
StrategySpec default_strategy(Kind k);

std::string_view to_string(Kind k);
std::string_view to_string(Schedule s);
std::string_view to_string(ServerPlacement p);
std::string_view to_string(TensorPlacement p);
std::string_view to_string(PeerGraph g);
std::string_view to_string(CompressionKind c);
std::string_view to_string(Jitter j);

// The inverses of to_string: exactly the names it writes; nullopt for any other.
std::optional<Kind> parse_kind(std::string_view name);
std::optional<Schedule> parse_schedule(std::string_view name);
std::optional<ServerPlacement> parse_placement(std::string_view name);
std::optional<TensorPlacement> parse_tensor_placement(std::string_view name);
std::optional<PeerGraph> parse_peer_graph(std::string_view name);
std::optional<CompressionKind> parse_compression_kind(std::string_view name);
std::optional<Jitter> parse_jitter(std::string_view name);
// Every name to_string writes, in declaration order (for "expected one of" messages).
std::vector<std::string> kind_names();
std::vector<std::string> schedule_names();
std::vector<std::string> placement_names();
std::vector<std::string> tensor_placement_names();
std::vector<std::string> peer_graph_names();
std::vector<std::string> compression_kind_names();
std::vector<std::string> jitter_names();

// The short-name forms parse_strategy_name takes, as messages and `dtsim list strategies` show them:
// "allreduce", "ps-sync", ..., "ssp[:S]", ..., "preset:NAME".
std::vector<std::string> strategy_forms();

// Parameter servers (and EASGD's centre variable) run on server nodes only when the kind has servers and they are
// dedicated; those nodes (the cluster's last ones) train nothing.
bool uses_servers(const StrategySpec& s); // parameter_server, easgd
// Whether the servers apply the optimizer (a parameter server every iteration, unless it only sums): the workers then
// keep no optimizer state and take no step.
bool servers_step(const StrategySpec& s);
int dedicated_server_nodes(const StrategySpec& s);
// The GPUs that train: every GPU but those of dedicated server nodes.
int worker_count(const StrategySpec& s, int nodes, int gpus_per_node);
// Workers that do not wait for each other every iteration: asynchronous and bounded servers, AD-PSGD, gossip.
bool is_asynchronous(const StrategySpec& s);

// Table 1 of Kako et al. 2021 (and Horovod, BytePS): each system's scheduling, exchange and topology as the table gives
// them, and the strategy dtsim runs for it.
struct Preset {
  std::string name;        // "Petuum"
  std::string citation;    // "Xing et al., 2015"
  std::string parallelism; // "DP", "MP and DP"
  std::string optimization;
  std::string scheduling;
  std::string exchange;
  std::string topology;
  StrategySpec strategy;
  // One model copy split over the cluster (COTS HPC): a scenario without parallelism.tensor gets tensor parallelism
  // over the GPUs that pipeline and context parallelism leave (sim/scenario/parallelism.cpp).
  bool splits_model = false;
  std::string note; // what dtsim's mapping chooses where the table is silent
};
const std::vector<Preset>& presets();
// Case, spaces, '-' and '_' ignored ("parameter-server" finds "Parameter Server"); nullptr if unknown.
const Preset* find_preset(std::string_view name);

} // namespace dtsim::strategies
