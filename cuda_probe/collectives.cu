// NCCL collectives over every visible GPU from one process (ncclCommInitAll): all-reduce, all-gather, reduce-scatter
// and all-to-all (ncclSend/ncclRecv pairs in one group), bf16, sizes 1 MiB .. 1 GiB. "bytes" is what nccl-tests
// calls the size: the larger of a rank's send and receive buffers. Built only when CMake found NCCL
// (DTSIM_PROBE_HAVE_NCCL), run only when more than one GPU is visible.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "probe.hpp"

#ifdef DTSIM_PROBE_HAVE_NCCL

#include <nccl.h>

#include "check.hpp"
#include "device.hpp"
#include "errors.hpp"

#define PROBE_NCCL(call)                                                                                               \
  do {                                                                                                                 \
    const ncclResult_t probe_status_ = (call);                                                                         \
    if (probe_status_ != ncclSuccess)                                                                                  \
      ::dtsim::probe::fail_call("NCCL", #call, __FILE__, __LINE__, ncclGetErrorString(probe_status_));                 \
  } while (0)

namespace dtsim::probe {

namespace {

enum class Op { all_reduce, all_gather, reduce_scatter, all_to_all };
const char* name(Op op) {
  switch (op) {
  case Op::all_reduce:
    return "all_reduce";
  case Op::all_gather:
    return "all_gather";
  case Op::reduce_scatter:
    return "reduce_scatter";
  case Op::all_to_all:
    return "all_to_all";
  }
  return "?";
}

struct Group {
  int n = 0;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<DeviceBuffer> send, recv;

  explicit Group(int count) : n(count), comms(count, nullptr), streams(count, nullptr) {
    std::vector<int> devs(n);
    for (int d = 0; d < n; ++d)
      devs[d] = d;
    PROBE_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
    for (int d = 0; d < n; ++d) {
      PROBE_CUDA(cudaSetDevice(d));
      PROBE_CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
    }
  }
  ~Group() {
    send.clear(), recv.clear();
    for (int d = 0; d < n; ++d) {
      cudaSetDevice(d);
      if (streams[d]) cudaStreamDestroy(streams[d]);
      if (comms[d]) ncclCommDestroy(comms[d]);
    }
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  void allocate(std::size_t bytes) {
    send.clear(), recv.clear();
    for (int d = 0; d < n; ++d) {
      PROBE_CUDA(cudaSetDevice(d));
      send.emplace_back(bytes);
      recv.emplace_back(bytes);
    }
  }

  // One collective on every rank; `elems` is the element count of the larger buffer (a multiple of n).
  void enqueue(Op op, std::size_t elems) {
    const std::size_t chunk = elems / n;
    PROBE_NCCL(ncclGroupStart());
    for (int d = 0; d < n; ++d) {
      void* s = send[d].get();
      void* r = recv[d].get();
      switch (op) {
      case Op::all_reduce:
        PROBE_NCCL(ncclAllReduce(s, r, elems, ncclBfloat16, ncclSum, comms[d], streams[d]));
        break;
      case Op::all_gather:
        PROBE_NCCL(ncclAllGather(s, r, chunk, ncclBfloat16, comms[d], streams[d]));
        break;
      case Op::reduce_scatter:
        PROBE_NCCL(ncclReduceScatter(s, r, chunk, ncclBfloat16, ncclSum, comms[d], streams[d]));
        break;
      case Op::all_to_all:
        for (int p = 0; p < n; ++p) {
          PROBE_NCCL(ncclSend(static_cast<char*>(s) + p * chunk * 2, chunk, ncclBfloat16, p, comms[d], streams[d]));
          PROBE_NCCL(ncclRecv(static_cast<char*>(r) + p * chunk * 2, chunk, ncclBfloat16, p, comms[d], streams[d]));
        }
        break;
      }
    }
    PROBE_NCCL(ncclGroupEnd());
  }

  void sync() {
    for (int d = 0; d < n; ++d) {
      PROBE_CUDA(cudaSetDevice(d));
      PROBE_CUDA(cudaStreamSynchronize(streams[d]));
    }
  }
};

// Rank r's send element i: (r + 1) + i % 4, small integers that bf16 sums exactly.
float sent(int rank, std::size_t i) {
  return static_cast<float>(rank + 1 + static_cast<int>(i % 4));
}

void check(Group& g, Op op) {
  const int n = g.n;
  const std::size_t elems = 1024 * static_cast<std::size_t>(n), chunk = elems / n;
  g.allocate(elems * 2);
  for (int d = 0; d < n; ++d) {
    std::vector<float> v(elems);
    for (std::size_t i = 0; i < elems; ++i)
      v[i] = sent(d, i);
    const auto bytes = encode(DType::bf16, v);
    PROBE_CUDA(cudaSetDevice(d));
    PROBE_CUDA(cudaMemcpy(g.send[d].get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    PROBE_CUDA(cudaMemset(g.recv[d].get(), 0, elems * 2));
  }
  g.enqueue(op, elems);
  g.sync();
  const double ranks_sum = n * (n + 1) / 2.0;
  for (int d = 0; d < n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    const std::size_t count = op == Op::reduce_scatter ? chunk : elems;
    const auto got = download(DType::bf16, g.recv[d].get(), count);
    std::vector<double> want(count);
    for (std::size_t i = 0; i < count; ++i) {
      switch (op) {
      case Op::all_reduce:
        want[i] = ranks_sum + n * static_cast<double>(i % 4);
        break;
      case Op::all_gather:
        want[i] = sent(static_cast<int>(i / chunk), i % chunk);
        break;
      case Op::reduce_scatter:
        want[i] = ranks_sum + n * static_cast<double>((d * chunk + i) % 4);
        break;
      case Op::all_to_all:
        want[i] = sent(static_cast<int>(i / chunk), d * chunk + i % chunk);
        break;
      }
    }
    expect_close(std::string("collective ") + name(op) + " rank " + std::to_string(d), got, want, 0, 1e-2);
  }
}

Stats time_group(Group& g, const Repetitions& reps, Op op, std::size_t elems) {
  using clock = std::chrono::steady_clock;
  const int warmup = std::max(1, reps.warmup);
  const auto t0 = clock::now();
  for (int i = 0; i < warmup; ++i)
    g.enqueue(op, elems);
  g.sync();
  const double per_run = std::chrono::duration<double>(clock::now() - t0).count() / warmup;
  const int runs = static_cast<int>(std::clamp(per_run > 0 ? reps.target_seconds / per_run : reps.max_runs,
                                               double(reps.min_runs), double(reps.max_runs)));
  // Events on every rank's stream; a run takes as long as its slowest rank.
  std::vector<std::vector<cudaEvent_t>> start(g.n, std::vector<cudaEvent_t>(runs)), stop = start;
  for (int d = 0; d < g.n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    for (int i = 0; i < runs; ++i) {
      PROBE_CUDA(cudaEventCreate(&start[d][i]));
      PROBE_CUDA(cudaEventCreate(&stop[d][i]));
    }
  }
  HostGate gate; // every rank's stream waits until all runs are queued
  for (int d = 0; d < g.n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    gate.hold(g.streams[d]);
  }
  for (int i = 0; i < runs; ++i) {
    for (int d = 0; d < g.n; ++d) {
      PROBE_CUDA(cudaSetDevice(d));
      PROBE_CUDA(cudaEventRecord(start[d][i], g.streams[d]));
    }
    g.enqueue(op, elems);
    for (int d = 0; d < g.n; ++d) {
      PROBE_CUDA(cudaSetDevice(d));
      PROBE_CUDA(cudaEventRecord(stop[d][i], g.streams[d]));
    }
  }
  gate.release();
  g.sync();
  std::vector<double> seconds(runs, 0.0);
  for (int d = 0; d < g.n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    for (int i = 0; i < runs; ++i) {
      float ms = 0;
      PROBE_CUDA(cudaEventElapsedTime(&ms, start[d][i], stop[d][i]));
      seconds[i] = std::max(seconds[i], ms * 1e-3);
      cudaEventDestroy(start[d][i]);
      cudaEventDestroy(stop[d][i]);
    }
  }
  return summarize(std::move(seconds));
}

void measure(Context& ctx, Group& g, Op op) {
  check(g, op);
  std::vector<std::size_t> sizes;
  for (int lg = 20; lg <= 30; lg += ctx.options.quick ? 4 : 2)
    sizes.push_back(std::size_t{1} << lg);
  std::size_t free_min = SIZE_MAX;
  for (int d = 0; d < g.n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    std::size_t free = 0, total = 0;
    PROBE_CUDA(cudaMemGetInfo(&free, &total));
    free_min = std::min(free_min, free);
  }
  g.send.clear(), g.recv.clear();
  while (!sizes.empty() && 2.0 * static_cast<double>(sizes.back()) > 0.8 * static_cast<double>(free_min)) {
    ctx.results.skip(std::string("collective ") + name(op) + " " + human_bytes(sizes.back()),
                     "not enough free device memory");
    sizes.pop_back();
  }
  if (sizes.empty()) return;
  g.allocate(sizes.back());
  for (int d = 0; d < g.n; ++d) {
    PROBE_CUDA(cudaSetDevice(d));
    fill_random(g.send[d].get(), sizes.back() / 2, DType::bf16, 81 + d, 1.0f, g.streams[d]);
  }
  for (std::size_t target : sizes) {
    const std::size_t elems = target / 2 / g.n * g.n, bytes = elems * 2;
    const Stats st = time_group(g, ctx.reps, op, elems);
    char rate[64];
    std::snprintf(rate, sizeof rate, "algbw %.1f GB/s", static_cast<double>(bytes) / st.median / 1e9);
    progress(std::string("collective ") + name(op) + " x" + std::to_string(g.n) + " " + human_bytes(bytes), st, rate);
    Record r;
    r.set("kind", "collective").set("op", name(op)).set("ranks", g.n).set("bytes", bytes).set("precision", "bf16");
    r.stats = st;
    r.checked = true;
    ctx.results.measurements.push_back(std::move(r));
  }
}

} // namespace

std::string nccl_version() {
  int v = 0;
  PROBE_NCCL(ncclGetVersion(&v));
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

void run_collectives(Context& ctx) {
  if (ctx.device_count < 2) {
    ctx.results.skip("collective", "one GPU visible (NCCL collectives need two or more)");
    return;
  }
  {
    std::unique_ptr<Group> g;
    try {
      g = std::make_unique<Group>(ctx.device_count);
    } catch (const ProbeError& e) {
      // Setting up NCCL depends on the machine (topology, shared memory, environment); nothing has run on the GPUs
      // yet, so the other measurements still count.
      ctx.results.skip("collective", std::string("NCCL could not be set up: ") + e.what());
      PROBE_CUDA(cudaSetDevice(ctx.device));
      return;
    }
    for (Op op : {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::all_to_all})
      ctx.guarded(std::string("collective ") + name(op), [&] { measure(ctx, *g, op); });
  }
  PROBE_CUDA(cudaSetDevice(ctx.device));
}

} // namespace dtsim::probe

#else // no NCCL at build time

namespace dtsim::probe {

std::string nccl_version() {
  return "";
}

void run_collectives(Context& ctx) {
  ctx.results.skip("collective", "dtsim-probe was built without NCCL (CMake found no nccl.h / libnccl)");
}

} // namespace dtsim::probe

#endif
