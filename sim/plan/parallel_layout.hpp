#pragma once
// Where each rank of a tensor x expert x data x pipeline grid sits, as Megatron-Core's RankGenerator places them:
// the order string names the dimensions innermost first ("tp-ep-dp-pp": consecutive ranks are one tensor-parallel
// group, so TP stays inside a node; pipeline stages are the outermost). Expert parallelism is carved out of data
// parallelism: the data-parallel replicas of the dense weights are ep x (data / ep) ranks, the experts of an MoE
// layer are sharded over the ep ranks of an expert group and replicated over the data / ep ranks of an expert-data
// group.
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

#include <array>
#include <string>
#include <vector>

namespace dtsim::topologies {
struct NetworkModel;
}

namespace dtsim::plan {

// dp: the replicas of one expert shard (data / expert); cp: the ranks one sequence is split over (context parallelism)
enum class Dim : std::uint8_t { tp, ep, dp, pp, cp };

struct GridCoord {
  int tp = 0, ep = 0, dp = 0, pp = 0, cp = 0;
  int& operator[](Dim d);
  int operator[](Dim d) const;
};

class ParallelLayout {
public:
  explicit ParallelLayout(const scenario::ParallelismSpec& spec);

  int tensor() const { return sizes_[0]; }
  int expert() const { return sizes_[1]; }
  int data() const { return sizes_[1] * sizes_[2]; } // dense data-parallel replicas
  int pipeline() const { return sizes_[3]; }
  int context() const { return sizes_[4]; }
  int world() const { return tensor() * context() * data() * pipeline(); }
  // The ranks that hold the same weights: data-parallel replicas times the context-parallel ranks of each, over
  // which Megatron-Core reduces the gradients and shards the distributed optimizer.
  int gradient_replicas() const { return data() * context(); }
  int size(Dim d) const { return sizes_[static_cast<int>(d)]; }

  GridCoord coord(int rank) const;
  int rank(const GridCoord& c) const;

  // Every group of ranks that differ only along `varying`, each listed in ascending rank order (rings follow the
  // placement), the groups in order of their first rank.
  std::vector<std::vector<int>> groups(std::vector<Dim> varying) const;
  std::vector<std::vector<int>> tensor_groups() const { return groups({Dim::tp}); }
  std::vector<std::vector<int>> pipeline_groups() const { return groups({Dim::pp}); }
  std::vector<std::vector<int>> data_groups() const { return groups({Dim::cp, Dim::ep, Dim::dp}); }
  std::vector<std::vector<int>> context_groups() const { return groups({Dim::cp}); }
  std::vector<std::vector<int>> expert_groups() const { return groups({Dim::ep}); }
  std::vector<std::vector<int>> expert_data_groups() const { return groups({Dim::dp}); }

private:
  std::array<int, 5> sizes_{1, 1, 1, 1, 1};   // by Dim
  std::array<int, 5> strides_{1, 1, 1, 1, 1}; // by Dim
};

std::string_view to_string(Dim d);

// One kind of group of a model-parallel scenario, as `dtsim explain` shows it.
struct GroupSummary {
  std::string kind;           // "tensor", "pipeline", "data", "expert" or "expert-data"
  int size = 0;               // ranks per group (>= 2: kinds of one rank are left out)
  int count = 0;              // groups of this kind
  std::vector<int> first;     // the first group's ranks, in ring order (ascending)
  bool crosses_nodes = false; // some group has members on two nodes (node = rank / gpus_per_node)
  double ring_bandwidth = 0;  // bytes/s: the narrowest a member's ring step gets (see describe_groups)
};

// Every kind of group with two or more ranks, in the order tensor, pipeline, data, expert, expert-data (expert and
// expert-data only with expert parallelism).
//
// ring_bandwidth: each group is a ring in rank order (closed: the last member sends to the first), and every group
// of the kind runs the same ring step at once. The bandwidth of a step from member a to member b is the narrowest
// link of the route the engine takes between their GPUs (topologies::Router: the fabric inside a node, or PCIe where
// the fabric does not join them; across nodes PCIe to the NIC, the network, PCIe from the NIC), where a NIC's link
// into the network is shared equally by the members on that NIC whose ring step leaves the node (and the link into
// the receiving NIC by those whose step enters it). So an NVSwitch group gets intra_node.bandwidth; a group that
// crosses nodes with every GPU of a node sending gets nic.bandwidth / gpus_per_node per GPU, rails or not (a rail
// NIC has nic.bandwidth / rails for the gpus_per_node / rails GPUs on it), unless PCIe is narrower. Links past the
// NICs are taken at their own bandwidth: contention inside the network (oversubscription, ECMP collisions) is left
// to the simulation. The minimum over every group of the kind.
std::vector<GroupSummary> describe_groups(const scenario::Scenario& s);
std::vector<GroupSummary> describe_groups(const scenario::Scenario& s, const topologies::NetworkModel& network);

} // namespace dtsim::plan
