// Device-side helpers shared by the families: owning buffers, a stream, element types with host conversions,
// and a random fill that runs on the GPU (large operands never cross PCIe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "errors.hpp"

namespace dtsim::probe {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) PROBE_CUDA(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_); // nothing to do about an error while unwinding
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class PinnedBuffer {
public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) { PROBE_CUDA(cudaMallocHost(&ptr_, bytes)); }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
public:
  Stream() { PROBE_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { PROBE_CUDA(cudaStreamSynchronize(s_)); }

private:
  cudaStream_t s_ = nullptr;
};

// Owns a set of CUDA events of the current device.
class Events {
public:
  explicit Events(std::size_t n) : events_(n, nullptr) {
    for (auto& e : events_)
      PROBE_CUDA(cudaEventCreate(&e));
  }
  ~Events() {
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

private:
  std::vector<cudaEvent_t> events_;
};

// Holds a stream until the host releases it, so that a batch of timed runs is queued completely before the GPU
// starts on it: otherwise a short kernel's time includes the host's launch gaps. A one-thread kernel polls a flag in
// mapped pinned memory (and gives up after a second, so a host blocked in the queue cannot deadlock).
class HostGate {
public:
  HostGate();
  ~HostGate(); // releases, then frees
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;
  void hold(cudaStream_t stream); // on the current device
  void release();

private:
  int* flag_ = nullptr;
};

enum class DType { f32, f16, bf16, e4m3 };

std::size_t size_of(DType t);
const char* name_of(DType t); // fp32, fp16, bf16, fp8

// Host conversions through CUDA's own types (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h): round-to-nearest-even.
std::vector<std::uint8_t> encode(DType t, const std::vector<float>& values);
std::vector<float> decode(DType t, const std::vector<std::uint8_t>& bytes);
std::vector<float> round_trip(DType t, const std::vector<float>& values); // decode(encode(values))

// Uploads `values` as type t into a new buffer; downloads n elements of type t as floats.
DeviceBuffer upload(DType t, const std::vector<float>& values);
std::vector<float> download(DType t, const void* device_ptr, std::size_t n);

// Uniform values in [-scale, scale], deterministic in (seed, index), written on the device.
void fill_random(void* ptr, std::size_t n, DType t, std::uint64_t seed, float scale, cudaStream_t stream);

// Host values uniform in [lo, hi] (a fixed generator, so checks are reproducible).
std::vector<float> host_random(std::size_t n, std::uint64_t seed, float lo, float hi);
// Host values k/4 for integers k in [-8, 8]: exact in every type here, so products and sums are exact in fp32.
std::vector<float> host_quarters(std::size_t n, std::uint64_t seed);

} // namespace dtsim::probe
