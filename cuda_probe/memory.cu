// Device memory bandwidth: STREAM-like copy (b = a), scale (b = s a) and triad (a = b + s c) kernels over float4,
// array sizes 1 MiB .. 4 GiB (bounded by free memory). "bytes" counts what is read plus what is written.
#include <cstdio>
#include <string>
#include <vector>

#include "check.hpp"
#include "device.hpp"
#include "errors.hpp"
#include "probe.hpp"

namespace dtsim::probe {

namespace {

constexpr float kScale = 1.7f;

__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, std::size_t n4) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n4) b[i] = a[i];
}

__global__ void scale_kernel(const float4* __restrict__ a, float4* __restrict__ b, float s, std::size_t n4) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n4) {
    const float4 v = a[i];
    b[i] = make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
  }
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             float s, std::size_t n4) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n4) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

enum class Op { copy, scale, triad };
const char* name(Op op) {
  return op == Op::copy ? "copy" : op == Op::scale ? "scale" : "triad";
}
int arrays(Op op) {
  return op == Op::triad ? 3 : 2;
}

// a, b, c: arrays of n floats (n a multiple of 4).
void launch(Op op, float* a, float* b, float* c, std::size_t n, cudaStream_t stream) {
  const std::size_t n4 = n / 4;
  const auto blocks = static_cast<unsigned>((n4 + 255) / 256);
  auto* a4 = reinterpret_cast<float4*>(a);
  auto* b4 = reinterpret_cast<float4*>(b);
  auto* c4 = reinterpret_cast<float4*>(c);
  switch (op) {
  case Op::copy:
    copy_kernel<<<blocks, 256, 0, stream>>>(a4, b4, n4);
    break;
  case Op::scale:
    scale_kernel<<<blocks, 256, 0, stream>>>(a4, b4, kScale, n4);
    break;
  case Op::triad:
    triad_kernel<<<blocks, 256, 0, stream>>>(a4, b4, c4, kScale, n4);
    break;
  }
  PROBE_LAUNCHED();
}

void check(Op op, cudaStream_t stream) {
  const std::size_t n = (1u << 18) + 4 * 13;
  const auto ha = host_random(n, 21, -1, 1), hb = host_random(n, 22, -1, 1), hc = host_random(n, 23, -1, 1);
  DeviceBuffer a = upload(DType::f32, ha), b = upload(DType::f32, hb), c = upload(DType::f32, hc);
  launch(op, a.as<float>(), b.as<float>(), c.as<float>(), n, stream);
  std::vector<double> ref(n);
  for (std::size_t i = 0; i < n; ++i)
    ref[i] = op == Op::copy ? ha[i] : op == Op::scale ? double{kScale} * ha[i] : hb[i] + double{kScale} * hc[i];
  const void* result = op == Op::triad ? a.get() : b.get();
  expect_close(std::string("memory ") + name(op), download(DType::f32, result, n), ref, 1e-6, 1e-6);
}

} // namespace

void run_memory(Context& ctx) {
  PROBE_CUDA(cudaSetDevice(ctx.device));
  Stream stream;
  const int step = ctx.options.quick ? 2 : 1; // array sizes 2^20 .. 2^32 bytes, doubling (quick: x4)
  for (Op op : {Op::copy, Op::scale, Op::triad}) {
    ctx.guarded(std::string("memory ") + name(op), [&] {
      check(op, stream.get());
      for (int lg = 20; lg <= 32; lg += step) {
        const std::size_t array_bytes = std::size_t{1} << lg, n = array_bytes / 4;
        const std::string what = std::string("memory ") + name(op) + " " + human_bytes(array_bytes);
        if (!ctx.fits(what, arrays(op) * array_bytes)) break;
        DeviceBuffer a(array_bytes), b(array_bytes), c(op == Op::triad ? array_bytes : 0);
        fill_random(a.get(), n, DType::f32, 31, 1, stream.get());
        fill_random(b.get(), n, DType::f32, 32, 1, stream.get());
        if (op == Op::triad) fill_random(c.get(), n, DType::f32, 33, 1, stream.get());
        const Stats st = time_on_stream(
            stream.get(), ctx.reps, [&] { launch(op, a.as<float>(), b.as<float>(), c.as<float>(), n, stream.get()); });
        const std::size_t bytes = arrays(op) * array_bytes; // read + written
        char rate[48];
        std::snprintf(rate, sizeof rate, "%.0f GB/s", static_cast<double>(bytes) / st.median / 1e9);
        progress(what, st, rate);
        Record r;
        r.set("kind", "memory").set("op", name(op)).set("bytes", bytes).set("array_bytes", array_bytes);
        r.stats = st;
        r.checked = true;
        ctx.results.measurements.push_back(std::move(r));
      }
    });
  }
}

} // namespace dtsim::probe
