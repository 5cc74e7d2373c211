#pragma once
// Where an MoE layer's tokens go (Shazeer et al. 2017; Lepikhin et al. 2020; Fedus et al. 2021): each of the T tokens
// of each of the ep ranks of an expert group picks top_k experts; each expert takes at most
//   C = capacity_factor x k x T x ep / E
// of them per micro-batch and drops the rest (they skip the expert through the residual). The experts sit
// E / ep to a rank; tokens cross the group by an all-to-all (dispatch) and come back by another (combine). The
// experts' popularity is drawn per layer from the scenario's seed; every rank routes with the same shares.
#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <vector>

namespace dtsim::plan {

// Each expert's share of the routed tokens of one MoE layer (they add up to 1).
std::vector<double> expert_shares(const scenario::RoutingSpec& routing, int experts, std::uint64_t seed, int layer);

struct ExpertRouting {
  std::vector<double> kept;        // per expert: tokens it computes per micro-batch, over the expert group
  std::vector<double> rank_tokens; // per position in the expert group: tokens its experts compute
  double assignments = 0;          // token-expert pairs routed per micro-batch, over the group (k T ep)
  double dropped = 0;              // ... of which over capacity
  std::vector<double> matrix;      // dispatch: tokens from position i to position j at [i * ep + j]
};

// capacity_factor 0: dropless.
ExpertRouting route_tokens(const std::vector<double>& shares, double tokens_per_rank, int top_k, int ep,
                           double capacity_factor);

} // namespace dtsim::plan
