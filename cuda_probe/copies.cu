// Host-device copies (pinned and pageable, both directions), device-to-device, peer-to-peer between every ordered
// pair of GPUs, and kernel launch latency. "bytes" is the size copied.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "device.hpp"
#include "errors.hpp"
#include "probe.hpp"

namespace dtsim::probe {

namespace {

__global__ void empty_kernel() {}
__global__ void flag_kernel(int* flag) {
  *flag = 42;
}

std::vector<std::size_t> copy_sizes(bool quick) {
  std::vector<std::size_t> s;
  // 4 KiB .. 1 GiB by 4x (quick: 64 KiB .. 256 MiB by 16x)
  for (int lg = quick ? 16 : 12; lg <= (quick ? 28 : 30); lg += quick ? 4 : 2)
    s.push_back(std::size_t{1} << lg);
  return s;
}

std::string gbps(std::size_t bytes, const Stats& st) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", static_cast<double>(bytes) / st.median / 1e9);
  return buf;
}

// A byte pattern that differs at every offset, so a short or shifted copy is caught.
void pattern(unsigned char* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i)
    p[i] = static_cast<unsigned char>((i * 2654435761u + seed) >> 7);
}

void expect_same(const std::string& what, const unsigned char* got, const unsigned char* want, std::size_t n) {
  if (std::memcmp(got, want, n) != 0) {
    std::size_t i = 0;
    while (got[i] == want[i])
      ++i;
    throw CheckFailed("check failed: " + what + ": byte " + std::to_string(i) + " differs");
  }
}

void add(Context& ctx, Record r, const Stats& st) {
  r.stats = st;
  r.checked = true;
  ctx.results.measurements.push_back(std::move(r));
}

// Every copy goes host -> device -> device -> host once and comes back intact before any is timed.
void check_copies(cudaStream_t stream) {
  const std::size_t n = (1u << 20) + 77;
  std::vector<unsigned char> src(n), back(n, 0);
  pattern(src.data(), n, 1);
  PinnedBuffer pinned(n);
  DeviceBuffer a(n), b(n);
  PROBE_CUDA(cudaMemcpyAsync(a.get(), src.data(), n, cudaMemcpyHostToDevice, stream));   // pageable h2d
  PROBE_CUDA(cudaMemcpyAsync(b.get(), a.get(), n, cudaMemcpyDeviceToDevice, stream));    // d2d
  PROBE_CUDA(cudaMemcpyAsync(pinned.get(), b.get(), n, cudaMemcpyDeviceToHost, stream)); // pinned d2h
  PROBE_CUDA(cudaStreamSynchronize(stream));
  expect_same("copy h2d/d2d/d2h", static_cast<unsigned char*>(pinned.get()), src.data(), n);
  PROBE_CUDA(cudaMemsetAsync(a.get(), 0, n, stream));
  PROBE_CUDA(cudaMemcpyAsync(a.get(), pinned.get(), n, cudaMemcpyHostToDevice, stream)); // pinned h2d
  PROBE_CUDA(cudaMemcpyAsync(back.data(), a.get(), n, cudaMemcpyDeviceToHost, stream));  // pageable d2h
  PROBE_CUDA(cudaStreamSynchronize(stream));
  expect_same("copy h2d/d2h pinned/pageable", back.data(), src.data(), n);
}

void measure_host_copies(Context& ctx, cudaStream_t stream) {
  check_copies(stream);
  const auto sizes = copy_sizes(ctx.options.quick);
  const std::size_t largest = sizes.back();
  if (!ctx.fits("copies", 2 * largest)) throw Unsupported("not enough device memory for 2 x 1 GiB");
  DeviceBuffer dev(largest), dev2(largest);
  PinnedBuffer pinned(largest);
  std::unique_ptr<unsigned char[]> pageable(new unsigned char[largest]);
  std::memset(pageable.get(), 1, largest); // fault the pages in
  std::memset(pinned.get(), 1, largest);
  PROBE_CUDA(cudaMemset(dev.get(), 0, largest));
  PROBE_CUDA(cudaMemset(dev2.get(), 0, largest));

  for (std::size_t bytes : sizes) {
    for (bool is_pinned : {true, false}) {
      void* host = is_pinned ? pinned.get() : static_cast<void*>(pageable.get());
      for (bool h2d : {true, false}) {
        // A copy from or to pageable memory returns only when it is done: it cannot be queued behind a gate.
        const Stats st = time_on_stream(
            stream, ctx.reps,
            [&] {
              if (h2d)
                PROBE_CUDA(cudaMemcpyAsync(dev.get(), host, bytes, cudaMemcpyHostToDevice, stream));
              else
                PROBE_CUDA(cudaMemcpyAsync(host, dev.get(), bytes, cudaMemcpyDeviceToHost, stream));
            },
            is_pinned);
        const char* dir = h2d ? "h2d" : "d2h";
        progress(std::string("copy ") + dir + (is_pinned ? " pinned " : " pageable ") + human_bytes(bytes), st,
                 gbps(bytes, st));
        add(ctx, Record().set("kind", "copy").set("direction", dir).set("pinned", is_pinned).set("bytes", bytes), st);
      }
    }
    const Stats st = time_on_stream(stream, ctx.reps, [&] {
      PROBE_CUDA(cudaMemcpyAsync(dev2.get(), dev.get(), bytes, cudaMemcpyDeviceToDevice, stream));
    });
    progress("copy d2d " + human_bytes(bytes), st, gbps(bytes, st));
    add(ctx, Record().set("kind", "copy").set("direction", "d2d").set("bytes", bytes), st);
  }
}

void enable_peer(int from, int to) {
  PROBE_CUDA(cudaSetDevice(from));
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled)
    (void)cudaGetLastError(); // clears it
  else
    PROBE_CUDA(e);
}

void measure_p2p(Context& ctx) {
  const int n = ctx.device_count;
  std::vector<std::size_t> sizes;
  // 1 MiB, 16 MiB, 256 MiB (quick: 1 and 256 MiB): every ordered pair, so this grows as GPUs^2.
  for (int lg = 20; lg <= 28; lg += ctx.options.quick ? 8 : 4)
    sizes.push_back(std::size_t{1} << lg);
  const std::size_t largest = sizes.back();
  for (int src = 0; src < n; ++src)
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      int can = 0;
      PROBE_CUDA(cudaDeviceCanAccessPeer(&can, src, dst));
      if (can) {
        enable_peer(src, dst);
        enable_peer(dst, src);
      }
      PROBE_CUDA(cudaSetDevice(dst));
      DeviceBuffer to(largest);
      PROBE_CUDA(cudaSetDevice(src));
      DeviceBuffer from(largest);
      Stream stream;
      { // check: the pattern arrives whole
        const std::size_t m = (1u << 20) + 5;
        std::vector<unsigned char> want(m), got(m);
        pattern(want.data(), m, static_cast<unsigned>(src * 31 + dst));
        PROBE_CUDA(cudaMemcpy(from.get(), want.data(), m, cudaMemcpyHostToDevice));
        PROBE_CUDA(cudaMemcpyPeerAsync(to.get(), dst, from.get(), src, m, stream.get()));
        stream.sync();
        PROBE_CUDA(cudaMemcpy(got.data(), to.get(), m, cudaMemcpyDeviceToHost));
        expect_same("copy p2p " + std::to_string(src) + "->" + std::to_string(dst), got.data(), want.data(), m);
      }
      for (std::size_t bytes : sizes) {
        // Without peer access the copy is staged through the host and may block it: no gate then.
        const Stats st = time_on_stream(
            stream.get(), ctx.reps,
            [&] { PROBE_CUDA(cudaMemcpyPeerAsync(to.get(), dst, from.get(), src, bytes, stream.get())); }, can != 0);
        progress("copy p2p " + std::to_string(src) + "->" + std::to_string(dst) + " " + human_bytes(bytes), st,
                 gbps(bytes, st));
        add(ctx,
            Record()
                .set("kind", "copy")
                .set("direction", "p2p")
                .set("src", src)
                .set("dst", dst)
                .set("peer_access", can != 0)
                .set("bytes", bytes),
            st);
      }
    }
  PROBE_CUDA(cudaSetDevice(ctx.device));
}

} // namespace

void run_launch(Context& ctx) {
  PROBE_CUDA(cudaSetDevice(ctx.device));
  Stream stream;
  ctx.guarded("launch", [&] {
    // The launch path works: a one-thread kernel's store arrives.
    DeviceBuffer flag(sizeof(int));
    PROBE_CUDA(cudaMemset(flag.get(), 0, sizeof(int)));
    flag_kernel<<<1, 1, 0, stream.get()>>>(flag.as<int>());
    PROBE_LAUNCHED();
    int got = 0;
    stream.sync();
    PROBE_CUDA(cudaMemcpy(&got, flag.get(), sizeof got, cudaMemcpyDeviceToHost));
    if (got != 42) throw CheckFailed("check failed: launch: a one-thread kernel's store did not arrive");
    // What each kernel of a stream costs the GPU beyond its work (the cost model's launch_overhead): a burst of
    // empty kernels queued behind a gate, released at once and timed with events, per kernel. One burst per gate:
    // thousands of launches behind one gate fill the launch queue, the host blocks, the gate times out and the
    // kernels then run as fast as the host issues them (on one H100 host that measured 4.2 us a kernel, the
    // host's pace, against 1.85 us gated).
    constexpr int kBurst = 100;
    const int warmup = 5;
    const int runs = ctx.options.quick ? 20 : 100;
    Events ev(2);
    std::vector<double> per_kernel;
    for (int r = 0; r < warmup + runs; ++r) {
      HostGate gate;
      gate.hold(stream.get());
      PROBE_CUDA(cudaEventRecord(ev[0], stream.get()));
      for (int i = 0; i < kBurst; ++i)
        empty_kernel<<<1, 1, 0, stream.get()>>>();
      PROBE_LAUNCHED();
      PROBE_CUDA(cudaEventRecord(ev[1], stream.get()));
      gate.release();
      stream.sync();
      float ms = 0;
      PROBE_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      if (r >= warmup) per_kernel.push_back(ms * 1e-3 / kBurst);
    }
    Stats st = summarize(std::move(per_kernel));
    progress("launch (per kernel of a gated burst of 100 empty kernels)", st);
    add(ctx,
        Record()
            .set("kind", "launch")
            .set("method", "CUDA events around 100 empty kernels queued behind a gate and "
                           "released at once, per kernel (one burst per gate)"),
        st);
  });
}

void run_copies(Context& ctx) {
  PROBE_CUDA(cudaSetDevice(ctx.device));
  {
    Stream stream;
    ctx.guarded("copy host/device", [&] { measure_host_copies(ctx, stream.get()); });
  }
  if (ctx.device_count < 2)
    ctx.results.skip("copy p2p", "one GPU visible");
  else
    ctx.guarded("copy p2p", [&] { measure_p2p(ctx); });
}

} // namespace dtsim::probe
