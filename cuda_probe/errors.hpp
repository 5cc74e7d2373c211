// Errors of the probe: every CUDA, cuBLAS, cuDNN and NCCL call goes through a macro that throws with the file, the
// line, the call and the library's error string; main() catches, prints the message and exits non-zero.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace dtsim::probe {

// A CUDA/library call failed, or the run cannot go on: the whole probe stops and writes nothing.
struct ProbeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A kernel disagreed with its reference on the small case: that kind is dropped (its timings never count).
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The device or the library cannot run this kind (e.g. fp8 before compute capability 8.9): it is skipped with a note.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail_call(const char* library, const char* call, const char* file, int line,
                                   const std::string& detail) {
  const char* slash = std::strrchr(file, '/');
  throw ProbeError(std::string(slash ? slash + 1 : file) + ":" + std::to_string(line) + ": " + library + " call " +
                   call + " failed: " + detail);
}

} // namespace dtsim::probe

#define PROBE_CUDA(call)                                                                                               \
  do {                                                                                                                 \
    const cudaError_t probe_status_ = (call);                                                                          \
    if (probe_status_ != cudaSuccess)                                                                                  \
      ::dtsim::probe::fail_call("CUDA", #call, __FILE__, __LINE__,                                                     \
                                std::string(cudaGetErrorName(probe_status_)) + " (" +                                  \
                                    cudaGetErrorString(probe_status_) + ")");                                          \
  } while (0)

// After a kernel launch: a bad configuration shows up here, a fault at the next synchronizing call.
#define PROBE_LAUNCHED() PROBE_CUDA(cudaGetLastError())

#define PROBE_CUBLAS(call)                                                                                             \
  do {                                                                                                                 \
    const cublasStatus_t probe_status_ = (call);                                                                       \
    if (probe_status_ != CUBLAS_STATUS_SUCCESS)                                                                        \
      ::dtsim::probe::fail_call("cuBLAS", #call, __FILE__, __LINE__,                                                   \
                                std::string(cublasGetStatusName(probe_status_)) + " (" +                               \
                                    cublasGetStatusString(probe_status_) + ")");                                       \
  } while (0)
