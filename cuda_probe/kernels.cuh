// The probe's own kernels that other families reuse (attention uses the softmax).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "device.hpp"

namespace dtsim::probe {

// Row-wise softmax over the last dimension of a rows x cols matrix (row-major), in place allowed (in == out).
// Values are multiplied by `scale` first. causal_seq > 0: row r is query (r % causal_seq) of a sequence and sees
// columns 0 .. r % causal_seq only (the rest become 0). cols must be a multiple of 16 / size_of(t).
void launch_softmax(DType t, const void* in, void* out, std::size_t rows, int cols, float scale, int causal_seq,
                    cudaStream_t stream);

} // namespace dtsim::probe
