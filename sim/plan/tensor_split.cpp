#include "sim/plan/tensor_split.hpp"

#include <cmath>

namespace dtsim::plan {

using models::TensorSplit;
using Op = collectives::Operation;

namespace {

std::int64_t split(std::int64_t n, int t) {
  return (n + t - 1) / t; // Megatron pads what does not divide (the vocabulary to a multiple of 128 t)
}

void split_activations(models::Layer& l, int t, bool input, bool output) {
  if (input) l.input_elements = split(l.input_elements, t);
  if (output) l.output_elements = split(l.output_elements, t);
  l.saved_elements = split(l.saved_elements, t);
  l.saved_fixed_bytes = split(l.saved_fixed_bytes, t);
}

void split_work(models::Layer& l, int t) {
  l.forward_flops /= t;
  l.backward_flops /= t;
}

// The activations an op reads: a MoE layer's experts read each token once per expert it visits; the tensor
// parallelism around them moves the tokens once.
double token_elements(const models::Layer& l, bool input) {
  const double elements = static_cast<double>(input ? l.input_elements : l.output_elements);
  return l.moe.top_k > 0 ? elements / l.moe.top_k : elements;
}

void split_sequence(models::Layer& l, int cp) {
  split_work(l, cp);
  split_activations(l, cp, true, true);
  if (l.gemm.m > 0) l.gemm.m = split(l.gemm.m, cp);
  if (l.attention.sequence > 0) {
    l.attention.sequence = split(l.attention.sequence, cp);
    l.attention.heads *= cp;
  }
}

} // namespace

models::Layer shard_layer(const models::Layer& layer, int t, bool sp, int expert, int context) {
  models::Layer l = layer;
  if (context > 1) split_sequence(l, context);
  if (l.moe.experts > 0 && expert > 1) l.parameters /= expert;
  if (t <= 1) return l;
  switch (l.tensor_split) {
  case TensorSplit::replicated:
    if (!sp) break;
    split_work(l, t);
    split_activations(l, t, true, true);
    break;
  case TensorSplit::column:
  case TensorSplit::column_shared:
    split_work(l, t);
    l.parameters = split(l.parameters, t);
    l.gemm.n = split(l.gemm.n, t);
    l.output_elements = split(l.output_elements, t);
    if (sp) split_activations(l, t, false, false); // it keeps its sequence-split input
    break;
  case TensorSplit::column_row:
    split_work(l, t);
    l.parameters = split(l.parameters, t);
    l.gemm.n = split(l.gemm.n, t);
    if (sp) split_activations(l, t, false, false);
    break;
  case TensorSplit::inner:
    split_work(l, t);
    l.parameters = split(l.parameters, t);
    split_activations(l, t, true, true);
    if (l.attention.heads > 0) l.attention.heads = split(l.attention.heads, t);
    if (l.gemm.count >= t)
      l.gemm.count = split(l.gemm.count, t);
    else
      l.gemm.n = split(l.gemm.n, t);
    break;
  case TensorSplit::row:
    split_work(l, t);
    l.parameters = split(l.parameters, t);
    l.gemm.k = split(l.gemm.k, t);
    split_activations(l, t, true, false);
    break;
  case TensorSplit::vocabulary:
    l.parameters = split(l.parameters, t);
    break;
  }
  return l;
}

TensorComm tensor_comm(const models::Layer& l, bool forward, int t, bool sp) {
  TensorComm c;
  if (t <= 1) return c;
  const TensorCollective gather_in{Op::all_gather, token_elements(l, true)};
  const TensorCollective gather_out{Op::all_gather, token_elements(l, false)};
  const TensorCollective reduce_out{sp ? Op::reduce_scatter : Op::all_reduce, token_elements(l, false)};
  const TensorCollective reduce_in{sp ? Op::reduce_scatter : Op::all_reduce, token_elements(l, true)};
  switch (l.tensor_split) {
  case TensorSplit::column:
    if (sp) c.before = gather_in;
    if (!forward) c.after = reduce_in;
    break;
  case TensorSplit::row:
    if (forward) c.after = reduce_out;
    if (!forward && sp) c.before = gather_out;
    break;
  case TensorSplit::column_row:
    if (sp) c.before = forward ? gather_in : gather_out;
    c.after = forward ? reduce_out : reduce_in;
    break;
  case TensorSplit::vocabulary:
    if (forward) c.after = reduce_out;
    if (!forward && sp) c.before = gather_out;
    break;
  case TensorSplit::inner:
    if (forward && l.memory_op == models::MemoryOp::cross_entropy)
      c.after = TensorCollective{Op::all_reduce, 3.0 * static_cast<double>(l.output_elements), 2, 4.0};
    break;
  default:
    break;
  }
  return c;
}

} // namespace dtsim::plan
