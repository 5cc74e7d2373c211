// GEMMs through cuBLASLt (cublasLtMatmul, the algorithm from cublasLtMatmulAlgoGetHeuristic) in fp32, tf32, fp16,
// bf16 and fp8 (e4m3, compute capability >= 8.9). D = A^T B ("TN", column-major): A is stored k x m, B k x n, D m x n,
// which every precision supports (fp8 requires it). Accumulation is fp32 throughout.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "device.hpp"
#include "errors.hpp"
#include "probe.hpp"

namespace dtsim::probe {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

struct Precision {
  const char* name;
  DType ab; // A and B
  DType cd; // C and D
  cudaDataType_t ab_type, cd_type;
  cublasComputeType_t compute;
  double tol; // allowed |D - ref| / sum_k |a b|
};

const Precision kPrecisions[] = {
    {"fp32", DType::f32, DType::f32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1e-5},
    {"tf32", DType::f32, DType::f32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 2e-3},
    {"fp16", DType::f16, DType::f16, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2e-3},
    {"bf16", DType::bf16, DType::bf16, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1e-2},
    {"fp8", DType::e4m3, DType::bf16, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1e-2},
};

struct Shape {
  const char* name; // square, qkv, attn_out, ffn_up, ffn_down
  long long m, n, k;
};

std::vector<Shape> shapes(bool quick) {
  std::vector<Shape> s;
  for (long long d = quick ? 512 : 256; d <= 16384; d *= quick ? 4 : 2)
    s.push_back({"square", d, d, d});
  // A transformer layer on 4096 tokens: X[tokens x in] W[in x out] with m = tokens, k = in, n = out.
  const long long tokens = 4096;
  const std::vector<long long> hidden =
      quick ? std::vector<long long>{4096} : std::vector<long long>{4096, 8192, 12288};
  for (long long h : hidden) {
    s.push_back({"qkv", tokens, 3 * h, h});
    s.push_back({"attn_out", tokens, h, h});
    s.push_back({"ffn_up", tokens, 4 * h, h});
    s.push_back({"ffn_down", tokens, h, 4 * h});
  }
  return s;
}

class LtMatmul {
public:
  LtMatmul(cublasLtHandle_t lt, const Precision& p, long long m, long long n, long long k) : lt_(lt) {
    PROBE_CUBLAS(cublasLtMatmulDescCreate(&op_, p.compute, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    PROBE_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PROBE_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    PROBE_CUBLAS(cublasLtMatrixLayoutCreate(&a_, p.ab_type, k, m, k));
    PROBE_CUBLAS(cublasLtMatrixLayoutCreate(&b_, p.ab_type, k, n, k));
    PROBE_CUBLAS(cublasLtMatrixLayoutCreate(&c_, p.cd_type, m, n, m));
    PROBE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref_));
    const std::size_t ws = kWorkspaceBytes;
    PROBE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_, op_, a_, b_, c_, c_, pref_, 1, &heuristic_, &found);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0))
      throw Unsupported(std::string("cuBLASLt has no algorithm for ") + p.name + " " + std::to_string(m) + "x" +
                        std::to_string(n) + "x" + std::to_string(k) + " on this device");
    PROBE_CUBLAS(st);
  }
  ~LtMatmul() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (c_) cublasLtMatrixLayoutDestroy(c_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (op_) cublasLtMatmulDescDestroy(op_);
  }
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  void run(const void* a, const void* b, void* d, void* workspace, cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t st = cublasLtMatmul(lt_, op_, &alpha, a, a_, b, b_, &beta, d, c_, d, c_, &heuristic_.algo,
                                             workspace, kWorkspaceBytes, stream);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED)
      throw Unsupported(std::string("cublasLtMatmul: ") + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) +
                        ")");
    PROBE_CUBLAS(st);
  }

private:
  cublasLtHandle_t lt_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

// A small GEMM against a host reference. The inputs are multiples of 1/4 in [-2, 2], exact in every precision, so
// the error comes from the kernel's accumulation and the rounding of D only; a transposed or misread operand fails.
void check(cublasLtHandle_t lt, const Precision& p, void* workspace, cudaStream_t stream) {
  const long long m = 128, n = 96, k = 160;
  const auto a = host_quarters(static_cast<std::size_t>(k * m), 41); // A[kk + i k]
  const auto b = host_quarters(static_cast<std::size_t>(k * n), 42); // B[kk + j k]
  std::vector<double> ref(static_cast<std::size_t>(m * n)), scale(ref.size());
  for (long long j = 0; j < n; ++j)
    for (long long i = 0; i < m; ++i) {
      double sum = 0, mag = 0;
      for (long long kk = 0; kk < k; ++kk) {
        const double x = double{a[kk + i * k]} * b[kk + j * k];
        sum += x;
        mag += std::abs(x);
      }
      ref[i + j * m] = sum;
      scale[i + j * m] = mag;
    }
  DeviceBuffer da = upload(p.ab, a), db = upload(p.ab, b), dd(ref.size() * size_of(p.cd));
  try {
    LtMatmul mm(lt, p, m, n, k);
    mm.run(da.get(), db.get(), dd.get(), workspace, stream);
  } catch (const ProbeError& e) {
    // fp8 is optional: a cuBLASLt that refuses it (a host-side status, nothing broken on the device) skips it.
    if (p.ab != DType::e4m3) throw;
    throw Unsupported(std::string("cuBLASLt's fp8 (e4m3) path is not usable here: ") + e.what());
  }
  expect_close_scaled(std::string("gemm ") + p.name + " 128x96x160", download(p.cd, dd.get(), ref.size()), ref, scale,
                      p.tol);
}

void measure(Context& ctx, cublasLtHandle_t lt, const Precision& p, void* workspace, cudaStream_t stream) {
  check(lt, p, workspace, stream);
  for (const Shape& s : shapes(ctx.options.quick)) {
    const std::string what = std::string("gemm ") + p.name + " " + s.name + " " + std::to_string(s.m) + "x" +
                             std::to_string(s.n) + "x" + std::to_string(s.k);
    const std::size_t na = s.k * s.m, nb = s.k * s.n, nd = s.m * s.n;
    if (!ctx.fits(what, (na + nb) * size_of(p.ab) + nd * size_of(p.cd))) continue;
    std::unique_ptr<LtMatmul> mm;
    try {
      mm = std::make_unique<LtMatmul>(lt, p, s.m, s.n, s.k);
    } catch (const Unsupported& e) {
      ctx.results.skip(what, e.what());
      continue;
    }
    DeviceBuffer a(na * size_of(p.ab)), b(nb * size_of(p.ab)), d(nd * size_of(p.cd));
    fill_random(a.get(), na, p.ab, 51, 1.0f, stream);
    fill_random(b.get(), nb, p.ab, 52, 1.0f, stream);
    Stats st;
    try {
      st = time_on_stream(stream, ctx.reps, [&] { mm->run(a.get(), b.get(), d.get(), workspace, stream); });
    } catch (const Unsupported& e) {
      ctx.results.skip(what, e.what());
      continue;
    }
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    char rate[48];
    std::snprintf(rate, sizeof rate, "%.1f TFLOP/s", flops / st.median / 1e12);
    progress(what, st, rate);
    Record r;
    r.set("kind", "gemm").set("library", "cublasLt").set("precision", p.name).set("shape", s.name);
    r.set("m", s.m).set("n", s.n).set("k", s.k).set("batch", 1).set("flops", flops);
    r.stats = st;
    r.checked = true;
    ctx.results.measurements.push_back(std::move(r));
  }
}

} // namespace

void run_gemm(Context& ctx) {
  PROBE_CUDA(cudaSetDevice(ctx.device));
  Stream stream;
  cublasLtHandle_t lt = nullptr;
  PROBE_CUBLAS(cublasLtCreate(&lt));
  struct Guard {
    cublasLtHandle_t h;
    ~Guard() { cublasLtDestroy(h); }
  } guard{lt};
  DeviceBuffer workspace(kWorkspaceBytes);
  for (const Precision& p : kPrecisions) {
    const std::string what = std::string("gemm ") + p.name;
    if (p.ab == DType::e4m3 && ctx.cc_major * 10 + ctx.cc_minor < 89) {
      ctx.results.skip(what, "fp8 (e4m3) GEMMs need compute capability 8.9 or later; this device is " +
                                 std::to_string(ctx.cc_major) + "." + std::to_string(ctx.cc_minor));
      continue;
    }
    ctx.guarded(what, [&] { measure(ctx, lt, p, workspace.get(), stream.get()); });
  }
}

} // namespace dtsim::probe
