// The probe's own kernels: GELU (elementwise), row-wise softmax and layer norm, in bf16 and fp32. Each reads and
// writes 16 bytes per thread access; softmax and layer norm give one block to a row.
#include "kernels.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>

#include "check.hpp"
#include "errors.hpp"
#include "probe.hpp"

namespace dtsim::probe {

namespace {

template <class T> struct alignas(16) Pack {
  static constexpr int n = 16 / sizeof(T);
  T v[n];
};

__device__ __forceinline__ float to_f(float x) {
  return x;
}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <class T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

constexpr double kGeluC = 0.7978845608028654; // sqrt(2 / pi)
constexpr float kLayerNormEps = 1e-5f;

__device__ __forceinline__ float gelu(float v) {
  return 0.5f * v * (1.0f + tanhf(static_cast<float>(kGeluC) * (v + 0.044715f * v * v * v)));
}

template <class T>
__global__ void gelu_kernel(const Pack<T>* __restrict__ x, Pack<T>* __restrict__ y, std::size_t packs) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  Pack<T> p = x[i];
#pragma unroll
  for (int e = 0; e < Pack<T>::n; ++e)
    p.v[e] = from_f<T>(gelu(to_f(p.v[e])));
  y[i] = p;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Every thread gets the block's sum. `shared` holds 32 floats.
template <int Threads> __device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  if constexpr (Threads > 32) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = warp_sum(lane < Threads / 32 ? shared[lane] : 0.0f);
    __syncthreads();
  }
  return v;
}

// Online softmax state: running max m and sum s of exp(x - m).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;
  s = s * __expf(m - mm) + s2 * __expf(m2 - mm);
  m = mm;
}

template <int Threads> __device__ void block_merge(float& m, float& s, float* shared_m, float* shared_s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  if constexpr (Threads > 32) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared_m[warp] = m, shared_s[warp] = s;
    __syncthreads();
    m = lane < Threads / 32 ? shared_m[lane] : -INFINITY;
    s = lane < Threads / 32 ? shared_s[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  }
}

// No __restrict__: in place is allowed (each thread reads an element before writing the same element).
template <class T, int Threads>
__global__ void __launch_bounds__(Threads) softmax_kernel(const T* in, T* out, int cols, float scale, int causal_seq) {
  using P = Pack<T>;
  constexpr int N = P::n;
  __shared__ float shared_m[32], shared_s[32];
  const std::size_t row = blockIdx.x;
  const P* x = reinterpret_cast<const P*>(in + row * cols);
  P* y = reinterpret_cast<P*>(out + row * cols);
  const int limit = causal_seq > 0 ? static_cast<int>(row % static_cast<std::size_t>(causal_seq)) + 1 : cols;
  const int packs = cols / N;
  const int live = (limit + N - 1) / N; // packs holding at least one visible column

  float m = -INFINITY, s = 0.0f;
  for (int p = threadIdx.x; p < live; p += Threads) {
    const P v = x[p];
#pragma unroll
    for (int e = 0; e < N; ++e) {
      if (p * N + e >= limit) break;
      const float z = to_f(v.v[e]) * scale;
      if (z > m) {
        s = s * __expf(m - z) + 1.0f;
        m = z;
      } else {
        s += __expf(z - m);
      }
    }
  }
  block_merge<Threads>(m, s, shared_m, shared_s);
  const float inv = 1.0f / s;
  for (int p = threadIdx.x; p < packs; p += Threads) {
    P v{};
    if (p < live) v = x[p];
    P o;
#pragma unroll
    for (int e = 0; e < N; ++e)
      o.v[e] = from_f<T>(p * N + e < limit ? __expf(to_f(v.v[e]) * scale - m) * inv : 0.0f);
    y[p] = o;
  }
}

template <class T, int Threads>
__global__ void __launch_bounds__(Threads)
    layernorm_kernel(const T* __restrict__ in, const T* __restrict__ gamma, const T* __restrict__ beta,
                     T* __restrict__ out, int cols, float eps) {
  using P = Pack<T>;
  constexpr int N = P::n;
  __shared__ float shared[32];
  const std::size_t row = blockIdx.x;
  const P* x = reinterpret_cast<const P*>(in + row * cols);
  P* y = reinterpret_cast<P*>(out + row * cols);
  const P* g = reinterpret_cast<const P*>(gamma);
  const P* b = reinterpret_cast<const P*>(beta);
  const int packs = cols / N;

  float sum = 0.0f, sumsq = 0.0f;
  for (int p = threadIdx.x; p < packs; p += Threads) {
    const P v = x[p];
#pragma unroll
    for (int e = 0; e < N; ++e) {
      const float z = to_f(v.v[e]);
      sum += z;
      sumsq += z * z;
    }
  }
  sum = block_sum<Threads>(sum, shared);
  sumsq = block_sum<Threads>(sumsq, shared);
  const float mean = sum / cols;
  const float rstd = rsqrtf(fmaxf(sumsq / cols - mean * mean, 0.0f) + eps);
  for (int p = threadIdx.x; p < packs; p += Threads) {
    const P v = x[p], gp = g[p], bp = b[p];
    P o;
#pragma unroll
    for (int e = 0; e < N; ++e)
      o.v[e] = from_f<T>((to_f(v.v[e]) - mean) * rstd * to_f(gp.v[e]) + to_f(bp.v[e]));
    y[p] = o;
  }
}

int pack_elems(DType t) {
  return static_cast<int>(16 / size_of(t));
}

void require_packed(DType t, std::size_t n) {
  if (n % static_cast<std::size_t>(pack_elems(t)) != 0)
    throw ProbeError("kernel sizes must be multiples of " + std::to_string(pack_elems(t)) + " elements");
}

void launch_gelu(DType t, const void* x, void* y, std::size_t n, cudaStream_t stream) {
  require_packed(t, n);
  const std::size_t packs = n / pack_elems(t);
  const auto blocks = static_cast<unsigned>((packs + 255) / 256);
  if (t == DType::bf16)
    gelu_kernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>(static_cast<const Pack<__nv_bfloat16>*>(x),
                                                           static_cast<Pack<__nv_bfloat16>*>(y), packs);
  else
    gelu_kernel<float>
        <<<blocks, 256, 0, stream>>>(static_cast<const Pack<float>*>(x), static_cast<Pack<float>*>(y), packs);
  PROBE_LAUNCHED();
}

// Threads per row: a few packs per thread.
template <class F> void with_threads(int packs, F&& f) {
  if (packs <= 64)
    f(std::integral_constant<int, 32>());
  else if (packs <= 512)
    f(std::integral_constant<int, 128>());
  else
    f(std::integral_constant<int, 512>());
}

void launch_layernorm(DType t, const void* x, const void* gamma, const void* beta, void* y, std::size_t rows, int cols,
                      cudaStream_t stream) {
  require_packed(t, static_cast<std::size_t>(cols));
  with_threads(cols / pack_elems(t), [&](auto threads) {
    constexpr int Threads = decltype(threads)::value;
    const auto grid = static_cast<unsigned>(rows);
    if (t == DType::bf16)
      layernorm_kernel<__nv_bfloat16, Threads><<<grid, Threads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(gamma),
          static_cast<const __nv_bfloat16*>(beta), static_cast<__nv_bfloat16*>(y), cols, kLayerNormEps);
    else
      layernorm_kernel<float, Threads>
          <<<grid, Threads, 0, stream>>>(static_cast<const float*>(x), static_cast<const float*>(gamma),
                                         static_cast<const float*>(beta), static_cast<float*>(y), cols, kLayerNormEps);
  });
  PROBE_LAUNCHED();
}

// ---- host references (double) ----

std::vector<double> gelu_reference(const std::vector<float>& x) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    y[i] = 0.5 * v * (1.0 + std::tanh(kGeluC * (v + 0.044715 * v * v * v)));
  }
  return y;
}

std::vector<double> layernorm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                        const std::vector<float>& beta, std::size_t rows, int cols) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = &x[r * cols];
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c)
      mean += row[c];
    mean /= cols;
    for (int c = 0; c < cols; ++c)
      var += (row[c] - mean) * (row[c] - mean);
    var /= cols;
    const double rstd = 1.0 / std::sqrt(var + kLayerNormEps);
    for (int c = 0; c < cols; ++c)
      y[r * cols + c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
  }
  return y;
}

struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(DType t) {
  return t == DType::bf16 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-5, 1e-4};
}

// ---- the measurements ----

struct KernelRun {
  Context& ctx;
  DType t;
  cudaStream_t stream;

  std::string prec() const { return name_of(t); }

  void elementwise() {
    const std::string what = "kernel elementwise (gelu) " + prec();
    {
      const std::size_t n = 8192 + 8 * 37;
      const auto x = round_trip(t, host_random(n, 11, -4.0f, 4.0f));
      DeviceBuffer dx = upload(t, x), dy(n * size_of(t));
      launch_gelu(t, dx.get(), dy.get(), n, stream);
      const auto tol = tolerance(t);
      expect_close(what, download(t, dy.get(), n), gelu_reference(x), tol.atol, tol.rtol);
    }
    std::vector<int> logs = ctx.options.quick ? std::vector<int>{20, 24} : std::vector<int>{20, 22, 24, 26, 28};
    for (int lg : logs) {
      const std::size_t n = std::size_t{1} << lg;
      const std::size_t bytes = 2 * n * size_of(t);
      if (!ctx.fits(what + " " + std::to_string(n) + " elements", bytes)) continue;
      DeviceBuffer x(n * size_of(t)), y(n * size_of(t));
      fill_random(x.get(), n, t, 1, 4.0f, stream);
      const Stats st = time_on_stream(stream, ctx.reps, [&] { launch_gelu(t, x.get(), y.get(), n, stream); });
      progress(what + " 2^" + std::to_string(lg), st, rate(bytes, st));
      Record r;
      r.set("kind", "kernel").set("op", "elementwise").set("function", "gelu").set("precision", prec());
      r.set("elements", n).set("bytes", bytes);
      add(r, st);
    }
  }

  void softmax() {
    const std::string what = "kernel softmax " + prec();
    {
      const std::size_t rows = 37;
      const int cols = 200;
      const auto x = round_trip(t, host_random(rows * cols, 12, -6.0f, 6.0f));
      DeviceBuffer dx = upload(t, x), dy(x.size() * size_of(t));
      launch_softmax(t, dx.get(), dy.get(), rows, cols, 1.0f, 0, stream);
      const auto tol = tolerance(t);
      expect_close(what, download(t, dy.get(), x.size()), softmax_reference(x, rows, cols, 1.0, 0), tol.atol, tol.rtol);
      // The causal, scaled path that attention uses, in place.
      const int seq = 48;
      const auto xc = round_trip(t, host_random(2 * seq * seq, 13, -3.0f, 3.0f));
      DeviceBuffer dc = upload(t, xc);
      launch_softmax(t, dc.get(), dc.get(), 2 * seq, seq, 0.5f, seq, stream);
      expect_close(what + " (causal)", download(t, dc.get(), xc.size()), softmax_reference(xc, 2 * seq, seq, 0.5, seq),
                   tol.atol, tol.rtol);
    }
    const std::vector<int> cols_list =
        ctx.options.quick ? std::vector<int>{1024, 8192} : std::vector<int>{256, 1024, 4096, 16384};
    const std::vector<int> logs = ctx.options.quick ? std::vector<int>{24} : std::vector<int>{22, 26};
    for (int lg : logs)
      for (int cols : cols_list) {
        const std::size_t n = std::size_t{1} << lg, rows = n / cols;
        const std::size_t bytes = 2 * n * size_of(t);
        if (!ctx.fits(what + " " + std::to_string(rows) + "x" + std::to_string(cols), bytes)) continue;
        DeviceBuffer x(n * size_of(t)), y(n * size_of(t));
        fill_random(x.get(), n, t, 2, 4.0f, stream);
        const Stats st =
            time_on_stream(stream, ctx.reps, [&] { launch_softmax(t, x.get(), y.get(), rows, cols, 1.0f, 0, stream); });
        progress(what + " " + std::to_string(rows) + "x" + std::to_string(cols), st, rate(bytes, st));
        Record r;
        r.set("kind", "kernel").set("op", "softmax").set("precision", prec());
        r.set("elements", n).set("rows", rows).set("cols", cols).set("bytes", bytes);
        add(r, st);
      }
  }

  void layernorm() {
    const std::string what = "kernel layernorm " + prec();
    {
      const std::size_t rows = 29;
      const int cols = 264;
      const auto x = round_trip(t, host_random(rows * cols, 14, -2.0f, 3.0f));
      const auto g = round_trip(t, host_random(cols, 15, 0.5f, 1.5f));
      const auto b = round_trip(t, host_random(cols, 16, -0.5f, 0.5f));
      DeviceBuffer dx = upload(t, x), dg = upload(t, g), db = upload(t, b), dy(x.size() * size_of(t));
      launch_layernorm(t, dx.get(), dg.get(), db.get(), dy.get(), rows, cols, stream);
      const auto tol = tolerance(t);
      expect_close(what, download(t, dy.get(), x.size()), layernorm_reference(x, g, b, rows, cols), tol.atol, tol.rtol);
    }
    const std::vector<int> hidden =
        ctx.options.quick ? std::vector<int>{4096, 8192} : std::vector<int>{1024, 4096, 8192, 12288};
    const std::vector<std::size_t> rows_list =
        ctx.options.quick ? std::vector<std::size_t>{8192} : std::vector<std::size_t>{2048, 16384};
    for (std::size_t rows : rows_list)
      for (int cols : hidden) {
        const std::size_t n = rows * cols;
        const std::size_t bytes = (2 * n + 2 * static_cast<std::size_t>(cols)) * size_of(t);
        if (!ctx.fits(what + " " + std::to_string(rows) + "x" + std::to_string(cols), bytes)) continue;
        DeviceBuffer x(n * size_of(t)), y(n * size_of(t)), g(cols * size_of(t)), b(cols * size_of(t));
        fill_random(x.get(), n, t, 3, 2.0f, stream);
        fill_random(g.get(), cols, t, 4, 1.0f, stream);
        fill_random(b.get(), cols, t, 5, 1.0f, stream);
        const Stats st = time_on_stream(
            stream, ctx.reps, [&] { launch_layernorm(t, x.get(), g.get(), b.get(), y.get(), rows, cols, stream); });
        progress(what + " " + std::to_string(rows) + "x" + std::to_string(cols), st, rate(bytes, st));
        Record r;
        r.set("kind", "kernel").set("op", "layernorm").set("precision", prec());
        r.set("elements", n).set("rows", rows).set("cols", cols).set("bytes", bytes);
        add(r, st);
      }
  }

  static std::vector<double> softmax_reference(const std::vector<float>& x, std::size_t rows, int cols, double scale,
                                               int causal_seq) {
    std::vector<double> y(x.size(), 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      const int limit = causal_seq > 0 ? static_cast<int>(r % causal_seq) + 1 : cols;
      double m = -INFINITY, s = 0;
      for (int c = 0; c < limit; ++c)
        m = std::max(m, scale * x[r * cols + c]);
      for (int c = 0; c < limit; ++c)
        s += std::exp(scale * x[r * cols + c] - m);
      for (int c = 0; c < limit; ++c)
        y[r * cols + c] = std::exp(scale * x[r * cols + c] - m) / s;
    }
    return y;
  }

  static std::string rate(std::size_t bytes, const Stats& st) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.0f GB/s", static_cast<double>(bytes) / st.median / 1e9);
    return buf;
  }

  void add(Record& r, const Stats& st) {
    r.stats = st;
    r.checked = true;
    ctx.results.measurements.push_back(std::move(r));
  }
};

} // namespace

void launch_softmax(DType t, const void* in, void* out, std::size_t rows, int cols, float scale, int causal_seq,
                    cudaStream_t stream) {
  require_packed(t, static_cast<std::size_t>(cols));
  if (t != DType::bf16 && t != DType::f32) throw ProbeError("softmax: bf16 or fp32 only");
  with_threads(cols / pack_elems(t), [&](auto threads) {
    constexpr int Threads = decltype(threads)::value;
    const auto grid = static_cast<unsigned>(rows);
    if (t == DType::bf16)
      softmax_kernel<__nv_bfloat16, Threads><<<grid, Threads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(in), static_cast<__nv_bfloat16*>(out), cols, scale, causal_seq);
    else
      softmax_kernel<float, Threads><<<grid, Threads, 0, stream>>>(static_cast<const float*>(in),
                                                                   static_cast<float*>(out), cols, scale, causal_seq);
  });
  PROBE_LAUNCHED();
}

void run_kernels(Context& ctx) {
  PROBE_CUDA(cudaSetDevice(ctx.device));
  Stream stream;
  for (DType t : {DType::bf16, DType::f32}) {
    KernelRun k{ctx, t, stream.get()};
    ctx.guarded(std::string("kernel elementwise ") + name_of(t), [&] { k.elementwise(); });
    ctx.guarded(std::string("kernel softmax ") + name_of(t), [&] { k.softmax(); });
    ctx.guarded(std::string("kernel layernorm ") + name_of(t), [&] { k.layernorm(); });
  }
}

} // namespace dtsim::probe
