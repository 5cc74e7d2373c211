// Wire formats and compute costs of gradient compressors. Each follows the paper it cites; where the paper leaves
// a choice open (how the compressed tensors are exchanged, how many passes a kernel makes) the choice is stated.
//
// Counting conventions for CompressionWork:
// - bytes are DRAM traffic of fused kernels: each buffer a step names is read or written once, unless stated;
//   small buffers (scales, PowerSGD's factors) are left out where the tensor-sized ones dominate.
// - flops count one per arithmetic operation on an element (an add, a compare, a multiply-add); abs, sign and bit
//   packing are free. Compressors are memory bound on GPUs, so the bytes decide their time; the flops matter only
//   for PowerSGD's matrix products.
#include "sim/strategies/compression.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace dtsim::strategies {
namespace {

using collectives::Operation;

void check_sizes(double elements, double element_bytes) {
  if (!(elements >= 0) || !std::isfinite(elements))
    throw std::invalid_argument(fmt::format("compression: elements must be >= 0, got {}", elements));
  if (!(element_bytes > 0) || !std::isfinite(element_bytes))
    throw std::invalid_argument(fmt::format("compression: element_bytes must be > 0, got {}", element_bytes));
}

// k = ceil(ratio * elements) values, at least one of a non-empty tensor and at most all of them. The small
// tolerance keeps 0.01 * 1e6 at 10,000 rather than rounding a representation error up to 10,001.
double kept_values(const CompressionSpec& spec, double elements) {
  if (!(spec.ratio > 0 && spec.ratio <= 1))
    throw std::invalid_argument(
        fmt::format("compression {}: ratio must be in (0, 1], got {}", to_string(spec.kind), spec.ratio));
  const double k = std::ceil(spec.ratio * elements * (1 - 1e-12));
  return std::min(k, elements);
}

// Positions are int32 (DGC, Horovod's sparse path); a tensor with more values than int32 can address needs int64.
double index_bytes_per_value(double elements) {
  return elements > static_cast<double>(std::numeric_limits<std::int32_t>::max()) ? 8 : 4;
}

// PowerSGD compresses matrices only; vectors (biases, norms) go dense. Returns whether the tensor is compressed,
// i.e. it is a matrix and its rank-r factors are smaller than it.
bool powersgd_compresses(const CompressionSpec& spec, double elements, std::int64_t rows, std::int64_t cols) {
  if (spec.rank < 1)
    throw std::invalid_argument(fmt::format("compression powersgd: rank must be >= 1, got {}", spec.rank));
  if (rows <= 1 || cols <= 1) return false;
  const double matrix = static_cast<double>(rows) * static_cast<double>(cols);
  if (std::abs(matrix - elements) > 0.5)
    throw std::invalid_argument(fmt::format(
        "compression powersgd: a {} x {} matrix holds {} values, but the tensor has {}", rows, cols, matrix, elements));
  return static_cast<double>(spec.rank) * static_cast<double>(rows + cols) < matrix;
}

bool keeps_residual(const CompressionSpec& spec) {
  switch (spec.kind) {
  case CompressionKind::sign:
  case CompressionKind::topk:
  case CompressionKind::randomk:
  case CompressionKind::powersgd:
    return spec.error_feedback;
  case CompressionKind::none:
  case CompressionKind::fp16:
    return false; // nothing is lost that a residual would have to carry over
  }
  return false;
}

} // namespace

WireFormat wire_format(const CompressionSpec& spec, double elements, double element_bytes, std::int64_t rows,
                       std::int64_t cols) {
  check_sizes(elements, element_bytes);
  const WireFormat dense{elements * element_bytes, 0, 0, Operation::all_reduce};
  switch (spec.kind) {
  case CompressionKind::none:
    return dense;
  case CompressionKind::fp16:
    // Cast to 16 bits and all-reduce in fp16 (PyTorch DDP's fp16_compress_hook, Horovod's fp16 compression).
    // Gradients already at 16 bits (or fewer) are sent as they are.
    return {elements * std::min(element_bytes, 2.0), 0, 0, Operation::all_reduce};
  case CompressionKind::sign:
    // One bit per value plus one fp32 scale per tensor (the mean magnitude, Karimireddy et al. 2019 EF-SignSGD;
    // 1-bit SGD, Seide et al. 2014), exchanged by a compressed all-reduce as 1-bit Adam and 1-bit LAMB run it
    // (Tang et al. 2021; DeepSpeed's compressed_allreduce): sums of signs need more than one bit, so each worker
    // takes one chunk of every worker's signs (an all-to-all), averages it, compresses it again with an error
    // feedback of its own, and the recompressed chunks are all-gathered. Each worker sends (n-1)/n of the 1/32 in
    // each phase, flat in n. (GRACE's signSGD all-gathers every worker's signs instead, a byte per sign; signSGD
    // with majority vote, Bernstein et al. 2019, gathers them at a server.)
    return {std::ceil(elements / 8), 0, elements > 0 ? 4.0 : 0.0, Operation::all_to_all, true};
  case CompressionKind::topk: {
    // The k largest magnitudes as (value, int32 index) pairs (DGC, Lin et al. 2018; Aji & Heafield 2017). Workers
    // select different positions, so the sparse tensors cannot be all-reduced: they are all-gathered, as DGC and
    // Horovod's sparse (IndexedSlices) path do. No fallback to dense when k is large: a ratio near 1 really does
    // send more than the dense tensor.
    const double k = kept_values(spec, elements);
    return {k * element_bytes, k * index_bytes_per_value(elements), 0, Operation::all_gather};
  }
  case CompressionKind::randomk: {
    // k values at positions drawn from a seed every worker shares (Stich et al. 2018, "Sparsified SGD with
    // memory"): the same positions everywhere, so no indices travel and the k values are all-reduced.
    const double k = kept_values(spec, elements);
    return {k * element_bytes, 0, 0, Operation::all_reduce};
  }
  case CompressionKind::powersgd:
    // Rank-r factors P (rows x r) and Q (cols x r) of a matrix, all-reduced (Vogels et al. 2019). PowerSGD sends
    // P and Q in two all-reduces, one after the other (Q is computed from the reduced P); the total is their sum.
    // Vectors go dense, as in the paper, and so does a matrix too small for its factors to save anything.
    if (!powersgd_compresses(spec, elements, rows, cols)) return dense;
    return {static_cast<double>(spec.rank) * static_cast<double>(rows + cols) * element_bytes, 0, 0,
            Operation::all_reduce};
  }
  return dense;
}

double compression_ratio(const WireFormat& wire, double dense_bytes) {
  const double sent = wire.total();
  if (sent <= 0) return dense_bytes <= 0 ? 1 : std::numeric_limits<double>::infinity();
  return dense_bytes / sent;
}

CompressionWork compression_work(const CompressionSpec& spec, double elements, double element_bytes, std::int64_t rows,
                                 std::int64_t cols, int workers) {
  const WireFormat wire = wire_format(spec, elements, element_bytes, rows, cols); // validates the arguments
  if (workers < 1) throw std::invalid_argument(fmt::format("compression: workers must be >= 1, got {}", workers));
  const double e = elements;
  const double eb = element_bytes;
  // All-gathered formats decode every worker's contribution; all-reduced ones arrive summed.
  const double parts = wire.operation == Operation::all_gather ? workers : 1;
  const double n = workers;
  CompressionWork w;

  // Error feedback (EF-SGD, Karimireddy et al. 2019; DGC's local accumulation; Stich et al.'s memory): the residual
  // is added to the gradient before compressing and what was not sent is written back. Counted as reading and
  // writing the residual once (2 e eb) plus one add per value; the write-back itself is fused into the compressor
  // (per kind below).
  const bool ef = keeps_residual(spec);
  auto add_error_feedback = [&] {
    if (!ef) return;
    w.bytes += 2 * e * eb;
    w.flops += e;
  };

  switch (spec.kind) {
  case CompressionKind::none:
    return w;
  case CompressionKind::fp16:
    if (eb <= 2) return w; // already 16-bit: no cast
    // Cast down (read e eb, write 2e) and, after the fp16 all-reduce, back up (read 2e, write e eb), as PyTorch's
    // fp16_compress_hook does. Conversions are not counted as flops.
    w.bytes = 2 * (e * eb + 2 * e);
    return w;
  case CompressionKind::sign: {
    // Compress (Karimireddy et al. 2019, Algorithm 1): read p = g + e, sum |p| for the scale (1 flop per value),
    // write the packed bits and the scale. With error feedback the residual p - scale * sign(p) is written in the
    // same kernel: one more multiply-add per value on top of the generic residual traffic.
    w.bytes = e * eb + wire.total();
    w.flops = e;
    add_error_feedback();
    if (ef) w.flops += e;
    // The worker's chunk: read the n contributions (the whole 1/32), sum them into the chunk (e/n values, n
    // multiply-adds each), add its residual and compress again writing the residual back (2 e/n eb with error
    // feedback, one more multiply-add per value), write its bits. Then decompress the all-gathered chunks: read the
    // 1/32, write the dense tensor, one multiply-add per value.
    w.bytes += wire.total() + e / n * eb + wire.total() / n;
    w.flops += e + e / n;
    if (ef) {
      w.bytes += 2 * e / n * eb;
      w.flops += 2 * e / n;
    }
    w.bytes += wire.total() + e * eb;
    w.flops += e;
    return w;
  }
  case CompressionKind::topk: {
    // Compress (DGC, Lin et al. 2018, section 3): exact top-k is a sort; DGC estimates the threshold from a
    // sample and then filters, which a GPU does in about two passes over the values. Counted as reading the
    // values twice with one compare per value per pass, then writing the k (value, index) pairs. With error
    // feedback, zeroing the k sent positions of the residual is left out (k << e).
    w.bytes = 2 * e * eb + wire.total();
    w.flops = 2 * e;
    add_error_feedback();
    // Decompress: write the dense sum once (the scatter-adds are assumed to hit it in cache), reading every
    // contribution's k pairs; one add per pair.
    const double k = wire.value_bytes / eb;
    w.bytes += e * eb + parts * wire.total();
    w.flops += parts * k;
    return w;
  }
  case CompressionKind::randomk: {
    // Compress (Stich et al. 2018): gather the k values at the seeded positions (read k, write k; generating the
    // positions from the seed is left out). With error feedback the whole gradient is read to form g + e, which
    // the gather then reads from: e eb more than the generic residual traffic.
    const double k = wire.value_bytes / eb;
    w.bytes = 2 * k * eb;
    add_error_feedback();
    if (ef) w.bytes += e * eb;
    // Decompress: scatter the k reduced values into a dense tensor (read k, write the dense tensor once).
    w.bytes += k * eb + e * eb;
    return w;
  }
  case CompressionKind::powersgd: {
    if (wire.total() >= e * eb) return w; // sent dense: nothing to compute
    // Compress (Vogels et al. 2019, Algorithm 1): P = M Q (2 rows cols r flops), orthogonalize P by Gram-Schmidt
    // (about 2 rows r^2 flops), Q = M^T P (2 rows cols r flops). M is read once per product; the factors are
    // small and left out.
    const double m = static_cast<double>(rows);
    const double c = static_cast<double>(cols);
    const double r = spec.rank;
    w.flops = 2 * m * c * r + 2 * m * r * r + 2 * m * c * r;
    w.bytes = 2 * e * eb;
    // Error feedback (the paper's Algorithm 2, PyTorch's powerSGD_hook by default): residual M - P Q^T.
    add_error_feedback();
    // Decompress: M' = P Q^T, one more product (2 rows cols r flops), writing the dense tensor.
    w.flops += 2 * m * c * r;
    w.bytes += e * eb;
    return w;
  }
  }
  return w;
}

double error_feedback_bytes(const CompressionSpec& spec, double elements, double element_bytes, int workers) {
  check_sizes(elements, element_bytes);
  // One residual the size of the gradient, at the gradient's precision. PowerSGD's residual covers the whole
  // tensor (PyTorch's powerSGD_hook keeps one per bucket, vectors included); its warm-start Q (cols x r) is left
  // out, being r / rows of the residual. The compressed all-reduce's chunk keeps one more (DeepSpeed's server
  // error, 1/n of the tensor).
  if (!keeps_residual(spec)) return 0;
  const bool chunked = wire_format(spec, elements, element_bytes).recompressed;
  return elements * element_bytes * (1 + (chunked ? 1.0 / std::max(1, workers) : 0));
}

} // namespace dtsim::strategies
