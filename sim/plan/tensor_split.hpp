#pragma once
// One op's share on one GPU of a tensor-parallel group, and the collectives tensor parallelism puts around it.
// Megatron-LM (Shoeybi et al. 2019, section 3, figure 3): a column-parallel linear splits its output features and
// needs its input's gradient all-reduced in backward (the f operator); a row-parallel linear splits its input
// features and all-reduces its output in forward (g); what runs between them (attention heads, the activation) is
// split too; norms, residual adds and dropout run whole on every rank. Two all-reduces per transformer layer in
// forward, two in backward, each of b s h elements. Sequence parallelism (Korthikanti et al. 2022, section 4.2.2)
// splits the replicated ops along the sequence and turns each all-reduce into a reduce-scatter after the row op and
// an all-gather before the column op: the same bytes over the ring, a t-th of the replicated activations.
#include "models/layer.hpp"
#include "sim/collectives/schedule.hpp"

#include <optional>

namespace dtsim::plan {

// The layer as one rank runs it: FLOPs, parameters, activations and GEMM shape divided by `tensor` where Megatron
// splits it; expert layers also hold only 1/`expert` of the experts (their FLOPs depend on routing: the planner sets
// them).
// Context parallelism over `context` ranks gives each rank 1/context of every sequence's tokens (Megatron-Core's
// load-balanced chunks): its share of every op, and of attention the ring's `context` blocks of (s / context)^2 scores
// per head, written as an attention of s / context tokens over context times the heads.
models::Layer shard_layer(const models::Layer& layer, int tensor, bool sequence_parallel, int expert, int context = 1);

struct TensorCollective {
  collectives::Operation op = collectives::Operation::all_reduce;
  double elements = 0;      // per sample, the whole (unsplit) tensor: NCCL's buffer size in elements
  int calls = 1;            // issued as this many collectives of elements / calls each
  double element_bytes = 0; // bytes an element crosses the wire as; 0: the activations' (activation_bytes)
};

// The collectives before and after an op's forward (or backward) over the tensor-parallel group; none when the op
// needs none or tensor = 1. Under sequence parallelism a column-parallel op keeps only its sequence shard of its
// input, so its backward all-gathers the input again for the weight gradient (Korthikanti et al. 2022, section
// 4.2.2). A vocabulary-parallel loss all-reduces each token's logit maximum, then its predicted logit and sum of
// exponentials together, in fp32 (Megatron-Core's tensor_parallel/cross_entropy.py): 3 fp32 per token in 2 calls.
struct TensorComm {
  std::optional<TensorCollective> before, after;
};
TensorComm tensor_comm(const models::Layer& layer, bool forward, int tensor, bool sequence_parallel);

} // namespace dtsim::plan
