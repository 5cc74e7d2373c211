// Table 1 of Kako et al. 2021, row by row, with the strategy dtsim runs for each system; Horovod and BytePS
// after it, the two designs most clusters run today. The table's text is copied as printed (its "DPS" is the
// distributed parameter server, "SPS" a single one, k the number of server shards for n workers); the notes say
// what dtsim had to choose where the table says nothing.
#include "sim/strategies/strategy.hpp"

namespace dtsim::strategies {
namespace {

StrategySpec allreduce(std::optional<collectives::Algorithm> algorithm = std::nullopt) {
  StrategySpec s;
  s.algorithm = algorithm;
  return s;
}

// Colocated servers with count 0: one shard on every node, the table's "k = n".
StrategySpec parameter_server(Schedule schedule, int staleness, ServerLayout servers) {
  StrategySpec s;
  s.kind = Kind::parameter_server;
  s.schedule = schedule;
  s.staleness = staleness;
  s.servers = servers;
  return s;
}

constexpr ServerLayout dedicated(int count, bool hierarchical = false) {
  return {.count = count, .placement = ServerPlacement::dedicated, .hierarchical = hierarchical};
}
constexpr ServerLayout on_every_node(bool hierarchical = false) {
  return {.count = 0, .placement = ServerPlacement::colocated, .hierarchical = hierarchical};
}

constexpr ServerLayout byteps_servers() {
  ServerLayout servers = on_every_node(/*hierarchical=*/true);
  servers.sums_only = true;
  servers.partition_bytes = 4096000; // BYTEPS_PARTITION_BYTES' default (byteps/common/global.cc)
  return servers;
}

constexpr int kStaleness = 3; // the bound dtsim gives every "bounded asynchronous" system (ssp's default)

std::vector<Preset> build() {
  std::vector<Preset> out{
      {.name = "BigDL",
       .citation = "J. J. Dai et al., 2019",
       .parallelism = "DP",
       .optimization = "central",
       .scheduling = "synchronous",
       .exchange = "scatter-red.",
       .topology = "DPS (always k = n)",
       .strategy = parameter_server(Schedule::synchronous, 0, on_every_node()),
       .note = "Every node holds a server shard of 1/n of the parameters, pushed to and pulled from by every worker."},
      {.name = "CaffeOnSpark",
       .citation = "Feng et al., 2016",
       .parallelism = "DP",
       .optimization = "central",
       .scheduling = "synchronous",
       .exchange = "scatter-red.",
       .topology = "DPS (always k = n)",
       .strategy = parameter_server(Schedule::synchronous, 0, on_every_node()),
       .note = "Every node holds a server shard of 1/n of the parameters; the RDMA exchange runs over the "
               "scenario's network like any other."},
      {.name = "COTS HPC",
       .citation = "Coates et al., 2013",
       .parallelism = "MP",
       .optimization = "central",
       .scheduling = "synchronous",
       .exchange = "-",
       .topology = "Dist. array abstraction",
       .strategy = allreduce(),
       .splits_model = true,
       .note = "One model copy split along tensor dimensions over every GPU of the cluster, synchronous SGD: "
               "Megatron-style tensor parallelism over all the GPUs unless parallelism.tensor says otherwise (data "
               "parallelism 1: no gradient exchange); the model's ops must say how they split (transformers, MLPs). "
               "Coates et al.'s distributed arrays fetch only the neighbouring blocks a locally connected layer "
               "reads; tensor parallelism all-reduces whole activations, so the traffic is an upper estimate."},
      {.name = "D-PSGD",
       .citation = "Lian et al., 2017",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "synchronous",
       .exchange = "2:1 reduce",
       .topology = "closed ring",
       .strategy =
           [] {
             StrategySpec s;
             s.kind = Kind::dpsgd;
             s.graph = PeerGraph::ring;
             return s;
           }(),
       .note = "Every iteration each worker averages its model with its two ring neighbours (the table's 2:1 "
               "reduce)."},
      {.name = "DistBelief",
       .citation = "Dean et al., 2012",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "asynchronous",
       .exchange = "ad hoc",
       .topology = "DPS",
       .strategy = parameter_server(Schedule::asynchronous, 0, dedicated(2)),
       .note = "The table says distributed servers without a count: two dedicated server nodes are dtsim's choice, "
               "and each replica trains whole (no model parallelism inside it)."},
      {.name = "EASGD",
       .citation = "S. Zhang et al., 2014",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "asynchronous",
       .exchange = "ad hoc",
       .topology = "single server",
       .strategy =
           [] {
             StrategySpec s;
             s.kind = Kind::easgd;
             s.schedule = Schedule::asynchronous;
             s.servers = dedicated(1);
             s.period = 4;
             return s;
           }(),
       .note = "The table gives no communication period: each worker meets the centre variable on one dedicated "
               "server node every tau = 4 steps."},
      {.name = "FireCaffe",
       .citation = "Iandola et al., 2016",
       .parallelism = "DP",
       .optimization = "central",
       .scheduling = "synchronous",
       .exchange = "binomial tree",
       .topology = "SPS",
       .strategy = allreduce(collectives::Algorithm::binomial_tree),
       .note = "The gradients go up a binomial reduction tree to one GPU and back down: dtsim's binomial-tree "
               "all-reduce (binomial reduce, then binomial broadcast) with no server node of its own."},
      {.name = "GoSGD",
       .citation = "Blot et al., 2016",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "soft-bounded asynchronous",
       .exchange = "ad hoc",
       .topology = "P2P mesh",
       .strategy =
           [] {
             StrategySpec s;
             s.kind = Kind::gossip;
             s.probability = 0.1;
             return s;
           }(),
       .note = "The table gives no exchange probability: each worker pushes its sum-weighted model to a random "
               "peer with p = 0.1 per iteration, asynchronously (the soft bound is left to p)."},
      {.name = "MPCA-SGD",
       .citation = "Lin et al., 2017",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "soft-bounded asynchronous",
       .exchange = "binomial tree",
       .topology = "dedicated server node",
       .strategy = parameter_server(Schedule::bounded, kStaleness, dedicated(1)),
       .note = "The soft bound runs as SSP with staleness 3 through one dedicated server node; the extrapolation "
               "that compensates staleness changes no traffic and is not modeled."},
      {.name = "MXNet",
       .citation = "Chen et al., 2015",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "bounded asynchronous",
       .exchange = "scatter-reduce, async.: ad hoc",
       .topology = "DPS (default k = n)",
       .strategy = parameter_server(Schedule::bounded, kStaleness, on_every_node()),
       .note = "The table gives no bound: SSP with staleness 3, a server shard on every node (the default k = n)."},
      {.name = "Parameter Server",
       .citation = "W. Dai et al., 2015",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "bounded asynchronous",
       .exchange = "reduce, async.: ad hoc",
       .topology = "DPS",
       .strategy = parameter_server(Schedule::bounded, kStaleness, dedicated(2)),
       .note = "The table gives neither the bound nor the server count: SSP with staleness 3 on two dedicated "
               "server nodes."},
      {.name = "Petuum",
       .citation = "Xing et al., 2015",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "bounded asynchronous",
       .exchange = "ad hoc with eager scatter",
       .topology = "DPS",
       .strategy = parameter_server(Schedule::bounded, kStaleness, dedicated(2)),
       .note = "The table gives neither the bound nor the server count: SSP with staleness 3 on two dedicated "
               "server nodes."},
      {.name = "Project Adam",
       .citation = "Chilimbi et al., 2014",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "asynchronous",
       .exchange = "ad hoc",
       .topology = "DPS",
       .strategy = parameter_server(Schedule::asynchronous, 0, dedicated(2)),
       .note = "The table gives no server count: two dedicated server nodes stand for its PAXOS server group."},
      {.name = "PyTorch",
       .citation = "Paszke et al., 2019",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "synchronous",
       .exchange = "all-reduce",
       .topology = "SPS or replicated PS",
       .strategy = allreduce(),
       .note = "DistributedDataParallel: bucketed gradient all-reduce overlapping backward, its algorithm chosen as "
               "NCCL would (training.algorithm)."},
      {.name = "SparkNet",
       .citation = "Moritz et al., 2015",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "synchronous",
       .exchange = "reduce",
       .topology = "dedicated server node",
       .strategy =
           [] {
             StrategySpec s = parameter_server(Schedule::synchronous, 0, dedicated(1));
             s.period = 8;
             return s;
           }(),
       .note = "The driver averages the models every tau steps; the table gives no tau, dtsim uses 8, through one "
               "dedicated server node."},
      {.name = "TensorFlow",
       .citation = "Abadi et al., 2016",
       .parallelism = "MP and DP",
       .optimization = "central",
       .scheduling = "bounded asynchronous",
       .exchange = "scatter/all-red., async.: ad hoc",
       .topology = "DPS (default k = n)",
       .strategy = parameter_server(Schedule::bounded, kStaleness,
                                    [] {
                                      auto servers = on_every_node();
                                      servers.tensors = TensorPlacement::round_robin;
                                      servers.channel_bandwidth = kGrpcChannelBandwidth;
                                      return servers;
                                    }()),
       .note =
           "The table gives no bound: SSP with staleness 3, a parameter-server task on every node (the default "
           "k = n), each variable whole on one task, round robin (tf.train.replica_device_setter's default), every "
           "message over "
           "a gRPC channel at the 500 MB/s TensorFlow's RecvTensor benchmark measured in 2017 (its 'grpc RecvTensor "
           "is slow' report, after the gRPC upgrade)."},
      {.name = "TreeEASGD",
       .citation = "Langer et al., 2020",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "bounded asynchronous",
       .exchange = "ad hoc",
       .topology = "tree",
       .strategy =
           [] {
             StrategySpec s;
             s.kind = Kind::easgd;
             s.schedule = Schedule::bounded;
             s.staleness = kStaleness;
             s.servers = dedicated(1, /*hierarchical=*/true);
             s.period = 4;
             return s;
           }(),
       .note = "The tree is approximated by two levels, a reduction inside each node and then one server node, "
               "with staleness 3 and tau = 4."},
      {.name = "Horovod",
       .citation = "Sergeev & Del Balso, 2018",
       .parallelism = "DP",
       .optimization = "decentral",
       .scheduling = "synchronous",
       .exchange = "ring all-reduce",
       .topology = "ring",
       .strategy = allreduce(collectives::Algorithm::ring),
       .note =
           "Not in Kako et al. 2021's table: synchronous ring all-reduce of fused gradient buffers, with no servers."},
      {.name = "BytePS",
       .citation = "Jiang et al., 2020",
       .parallelism = "DP",
       .optimization = "central",
       .scheduling = "synchronous",
       .exchange = "push/pull, in-node reduce first",
       .topology = "DPS (server on every node)",
       .strategy = parameter_server(Schedule::synchronous, 0, byteps_servers()),
       .note = "Not in Kako et al. 2021's table: a server on every node, and each node's GPUs reduce among themselves "
               "before one of them pushes and pulls; the servers only sum, and every GPU steps its own optimizer on "
               "the pulled sum (Jiang et al. 2020, section 5, the summation service). Each bucket goes out in "
               "4,096,000-byte partitions spread over the servers, each pulled as soon as it is summed. BytePS's own "
               "advice is servers on machines of their own, as much bandwidth as the workers': "
               "\"servers\": {\"placement\": \"dedicated\", \"count\": N}."},
  };
  for (auto& p : out)
    p.strategy.preset = p.name;
  return out;
}

} // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = build();
  return all;
}

} // namespace dtsim::strategies
