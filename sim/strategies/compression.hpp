#pragma once
// What gradient compression puts on the wire for one tensor, and what compressing it costs the GPU. Pure counts
// (bytes and FLOPs): the planner prices the work with the GPU profile and turns the wire format into a collective.
// The model of each compressor, with the paper it follows, is in compression.cpp.
#include "sim/collectives/schedule.hpp"
#include "sim/strategies/strategy.hpp"

#include <cstdint>

namespace dtsim::strategies {

// One worker's compressed tensor. For all_gather the collective's buffer is every worker's contribution together
// (n * total(), collectives::Operation::all_gather); for all_reduce it is total() itself.
struct WireFormat {
  double value_bytes = 0; // the values (or bits, or low-rank factors)
  double index_bytes = 0; // positions of sparse values
  double scale_bytes = 0; // per-tensor scales
  collectives::Operation operation = collectives::Operation::all_reduce;
  // A compressed all-reduce (1-bit Adam, Tang et al. 2021; DeepSpeed's compressed_allreduce): an all-to-all of the
  // compressed tensor's n chunks, each worker averaging one chunk's n contributions and compressing it again, then
  // an all-gather of the recompressed chunks. `operation` is the all-to-all; each phase moves total() per worker.
  bool recompressed = false;
  double total() const { return value_bytes + index_bytes + scale_bytes; }
};

// The wire format of a tensor of `elements` gradient values of `element_bytes` each (4 for fp32, 2 for fp16/bf16
// gradients). rows x cols is the tensor's matrix shape, used by PowerSGD only: rows * cols == elements for a matrix,
// cols == 1 (or rows == 1) for a vector. Throws std::invalid_argument for a negative size, a ratio outside (0, 1],
// a rank below 1, or a PowerSGD matrix whose shape does not hold `elements` values.
WireFormat wire_format(const CompressionSpec& spec, double elements, double element_bytes, std::int64_t rows = 1,
                       std::int64_t cols = 1);

// dense_bytes / wire.total(): how many times smaller than dense (32 for signs of fp32 values, ignoring the scale).
// 1 for an empty tensor.
double compression_ratio(const WireFormat& wire, double dense_bytes);

// GPU work, as a caller prices it with its profile: flops and bytes of memory traffic.
struct CompressionWork {
  double flops = 0;
  double bytes = 0;
};

// The work of compressing a tensor once and decompressing the result once, error feedback included where the spec
// keeps a residual. `workers` matters only for all-gathered formats (sign, topk): the decompression then decodes
// every worker's contribution into one dense sum; an all-reduced format arrives already summed and is decoded once.
// The assumptions behind each count are in compression.cpp.
CompressionWork compression_work(const CompressionSpec& spec, double elements, double element_bytes,
                                 std::int64_t rows = 1, std::int64_t cols = 1, int workers = 1);

// Extra GPU memory of the error-feedback residual (one gradient-sized buffer), 0 where there is none; a compressed
// all-reduce over `workers` also keeps the residual of the chunk each worker recompresses (1/workers of it).
double error_feedback_bytes(const CompressionSpec& spec, double elements, double element_bytes, int workers = 1);

} // namespace dtsim::strategies
