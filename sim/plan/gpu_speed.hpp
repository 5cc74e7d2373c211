#pragma once
// GPUs of one model do not run at one speed. Sinha et al. (SC'22, "Not All GPUs Are Created Equal") measured every
// GPU of five production clusters (Summit, Vortex, Frontera, Longhorn, Corona; NVIDIA and AMD GPUs): the same
// kernel ran 8% apart on average across a cluster's GPUs (at most 22%), from manufacturing variability and each
// chip's power management, whatever the cooling. A synchronous job waits for its slowest member at every
// synchronization: a tensor-parallel group at each layer's collectives, a pipeline at its slowest stage, the
// replicas at the gradient reduction. So a job on n GPUs computes at about the pace of the slowest of n draws, and
// the loss grows with n.
//
// Each GPU's compute time is the median GPU's times exp(sigma z). The n GPUs of a run take the expected order
// statistics of n standard normal draws (Blom 1958: z_k = Phi^-1((k - 3/8) / (n + 1/4))), placed on ranks in an order
// drawn from the run's seed: the set of speeds is what n GPUs drawn from the population hold on average (one GPU is
// the median GPU the profiles measure; the slowest of n is the expected maximum), and where the slow ones sit is
// random. Stratified this way, a run's answer does not depend on one lucky draw of its slowest GPU.
#include "sim/plan/parallel_layout.hpp"

#include <cstdint>
#include <vector>

namespace dtsim::plan {

// Expected z of the k-th smallest of n standard normal draws (Blom's approximation; k from 1 to n).
double expected_normal_order_statistic(int k, int n);

// Per rank 0 .. gpus-1, its compute time over the median GPU's: exp(sigma z) with the z of the n order statistics
// in a permutation drawn from `seed` (sigma: strategies::kMeasuredGpuSpeedSigma unless a scenario says otherwise). All
// 1 when sigma is 0.
std::vector<double> gpu_time_factors(int gpus, double sigma, std::uint64_t seed);

// Each rank of a model-parallel layout at the pace of the slowest GPU it stands for: in coarse fidelity
// (`fold_tensor`) its tensor-parallel group, whose collectives wait for their slowest member at every layer; in
// coarse fidelity and where only the first replica is simulated (`fold_replicas`), its position in every replica,
// since the gradient reduction waits for the slowest replica and a replica for its slowest stage (an upper bound on
// the replicas' own: each position at its slowest replica's pace, measured 0.1% to 0.4% slower). Replicas at one pace
// also keep their events together, where replicas at distinct speeds cost a frontier job's replay twice the time.
std::vector<double> paced_by_stand_ins(const ParallelLayout& layout, const std::vector<double>& factors,
                                       bool fold_tensor, bool fold_replicas);

// graph::ExecutionGraph::compute_slowdown rows for factors that hold every iteration: one factor a rank, none at all
// when every factor is 1.
std::vector<std::vector<double>> constant_slowdown(const std::vector<double>& factors);

} // namespace dtsim::plan
