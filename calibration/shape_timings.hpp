#pragma once
// Kernels at the shapes training runs, each timed twice on one GPU (tools/measure/training_shapes.py;
// docs/measurement-format.md, "Training shapes"): in a burst (kernels back to back for about 25 ms on a GPU that had
// idled, at its boost clock) and sustained (replayed for seconds after a soak that brought the GPU to its power
// limit, with the SM clock and the draw sampled through NVML). A value type and a strict reader: a malformed file is
// refused with a CalibrationError naming the file, the JSON pointer and what was expected.
#include "calibration/error.hpp"
#include "calibration/precision.hpp"
#include "calibration/profile.hpp"

#include <string>
#include <vector>

namespace dtsim::calibration {

// One timing of a kernel: seconds per run (median), and the SM clock and draw NVML read meanwhile (0: not read).
struct ShapeTiming {
  double seconds = 0;
  double sm_clock_mhz = 0;
  double watts = 0;
};

struct ShapePoint {
  std::string label;                    // what it is ("llama3-70b mlp.up forward"), as the measurement names it
  KernelClass kind = KernelClass::gemm; // gemm, attention (fused) or memory (a device-to-device copy)
  Precision precision = Precision::bf16;
  // gemm: batch products C[m x n] = A[m x k] B[k x n] in one of torch.nn.Linear's layouts ("forward", "input_grad",
  // "weight_grad"; "batched" for a bmm).
  double m = 0, n = 0, k = 0, batch = 1;
  std::string layout;
  // attention: PyTorch's scaled_dot_product_attention on `backend` (FLASH_ATTENTION, CUDNN_ATTENTION) over
  // batch x heads heads of `sequence` and `head_dim`, causal; forward alone or forward and backward.
  std::string backend;
  double sequence = 0, heads = 0, head_dim = 0;
  bool causal = true, backward = false;
  double flops = 0; // as the measurement counts them (2 m n k batch; attention: the causal half's)
  double bytes = 0; // memory: read + written
  // memory: replayed eagerly when sustained (a CUDA graph captures a device-to-device copy as a memcpy node, which
  // the copy engines run instead of the SMs: not the kernel the burst timed)
  bool eager = false;
  ShapeTiming burst, sustained;
};

struct ShapeTimings {
  std::string origin; // the file it was read from
  std::string device, driver, cuda, cublaslt, cudnn, torch, date;
  double power_limit_w = 0, max_sm_clock_mhz = 0;
  std::vector<ShapePoint> points;
};

ShapeTimings parse_shape_timings(const std::string& json_text, const std::string& origin);
ShapeTimings load_shape_timings(const std::string& path);

} // namespace dtsim::calibration
