#include "device.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace dtsim::probe {

std::size_t size_of(DType t) {
  switch (t) {
  case DType::f32:
    return 4;
  case DType::f16:
    return 2;
  case DType::bf16:
    return 2;
  case DType::e4m3:
    return 1;
  }
  return 0;
}

const char* name_of(DType t) {
  switch (t) {
  case DType::f32:
    return "fp32";
  case DType::f16:
    return "fp16";
  case DType::bf16:
    return "bf16";
  case DType::e4m3:
    return "fp8";
  }
  return "?";
}

std::vector<std::uint8_t> encode(DType t, const std::vector<float>& values) {
  std::vector<std::uint8_t> out(values.size() * size_of(t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    switch (t) {
    case DType::f32:
      std::memcpy(&out[i * 4], &v, 4);
      break;
    case DType::f16: {
      const __half h = __float2half_rn(v);
      std::memcpy(&out[i * 2], &h, 2);
      break;
    }
    case DType::bf16: {
      const __nv_bfloat16 h = __float2bfloat16_rn(v);
      std::memcpy(&out[i * 2], &h, 2);
      break;
    }
    case DType::e4m3: {
      const __nv_fp8_e4m3 h(v);
      std::memcpy(&out[i], &h, 1);
      break;
    }
    }
  }
  return out;
}

std::vector<float> decode(DType t, const std::vector<std::uint8_t>& bytes) {
  const std::size_t n = bytes.size() / size_of(t);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t) {
    case DType::f32:
      std::memcpy(&out[i], &bytes[i * 4], 4);
      break;
    case DType::f16: {
      __half h;
      std::memcpy(&h, &bytes[i * 2], 2);
      out[i] = __half2float(h);
      break;
    }
    case DType::bf16: {
      __nv_bfloat16 h;
      std::memcpy(&h, &bytes[i * 2], 2);
      out[i] = __bfloat162float(h);
      break;
    }
    case DType::e4m3: {
      __nv_fp8_e4m3 h;
      std::memcpy(&h, &bytes[i], 1);
      out[i] = static_cast<float>(h);
      break;
    }
    }
  }
  return out;
}

std::vector<float> round_trip(DType t, const std::vector<float>& values) {
  return decode(t, encode(t, values));
}

DeviceBuffer upload(DType t, const std::vector<float>& values) {
  const auto bytes = encode(t, values);
  DeviceBuffer buf(bytes.size());
  PROBE_CUDA(cudaMemcpy(buf.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return buf;
}

std::vector<float> download(DType t, const void* device_ptr, std::size_t n) {
  std::vector<std::uint8_t> bytes(n * size_of(t));
  PROBE_CUDA(cudaDeviceSynchronize());
  PROBE_CUDA(cudaMemcpy(bytes.data(), device_ptr, bytes.size(), cudaMemcpyDeviceToHost));
  return decode(t, bytes);
}

namespace {

__device__ __forceinline__ float hash_uniform(std::uint64_t seed, std::size_t i) {
  std::uint64_t x = seed ^ (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f; // [-1, 1)
}

template <class T> __global__ void fill_kernel(T* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = T(scale * hash_uniform(seed, i));
}

template <class T> void launch_fill(void* ptr, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream) {
  const std::size_t blocks = std::min<std::size_t>((n + 255) / 256, 65536);
  fill_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<T*>(ptr), n, seed, scale);
  PROBE_LAUNCHED();
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(const volatile int* flag, unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (*flag == 0 && global_ns() - start < timeout_ns)
    __nanosleep(256);
}

} // namespace

HostGate::HostGate() {
  PROBE_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&flag_), sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  __atomic_store_n(flag_, 1, __ATOMIC_SEQ_CST);
}

HostGate::~HostGate() {
  if (!flag_) return;
  release();
  cudaFreeHost(flag_);
}

void HostGate::hold(cudaStream_t stream) {
  __atomic_store_n(flag_, 0, __ATOMIC_SEQ_CST);
  int* device_flag = nullptr;
  PROBE_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag), flag_, 0));
  hold_kernel<<<1, 1, 0, stream>>>(device_flag, 1000000000ull);
  PROBE_LAUNCHED();
}

void HostGate::release() {
  __atomic_store_n(flag_, 1, __ATOMIC_SEQ_CST);
}

void fill_random(void* ptr, std::size_t n, DType t, std::uint64_t seed, float scale, cudaStream_t stream) {
  if (n == 0) return;
  switch (t) {
  case DType::f32:
    launch_fill<float>(ptr, n, seed, scale, stream);
    break;
  case DType::f16:
    launch_fill<__half>(ptr, n, seed, scale, stream);
    break;
  case DType::bf16:
    launch_fill<__nv_bfloat16>(ptr, n, seed, scale, stream);
    break;
  case DType::e4m3:
    launch_fill<__nv_fp8_e4m3>(ptr, n, seed, scale, stream);
    break;
  }
}

std::vector<float> host_random(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(gen);
  return v;
}

std::vector<float> host_quarters(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> dist(-8, 8);
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(dist(gen)) / 4.0f;
  return v;
}

} // namespace dtsim::probe
