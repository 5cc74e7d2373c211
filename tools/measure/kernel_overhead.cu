// What one kernel costs the GPU when the host is not the bottleneck, three ways: launches queued behind a gate
// kernel (dtsim-probe's method), the same launches with no gate (the host issues them as the GPU runs them), and a
// CUDA graph of them. Empty kernels, and 64 KiB scale kernels (gpu-benches' gpu-small-kernels size).
// Prints one JSON object. Build: nvcc -O2 -arch=sm_90 kernel_overhead.cu -o kernel_overhead
#include <algorithm>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(x)                                                                                                       \
  do {                                                                                                                 \
    cudaError_t e = (x);                                                                                               \
    if (e != cudaSuccess) {                                                                                            \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e));                                \
      return 1;                                                                                                        \
    }                                                                                                                  \
  } while (0)

__global__ void empty_kernel() {}
__global__ void scale_kernel(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= 1.0001f;
}
__global__ void gate_kernel(volatile int* flag) {
  while (*flag == 0) {
  }
}

constexpr int kScaleElements = 16384; // 64 KiB of floats

void launch(bool scale, float* a, cudaStream_t s) {
  if (scale)
    scale_kernel<<<kScaleElements / 256, 256, 0, s>>>(a, kScaleElements);
  else
    empty_kernel<<<1, 1, 0, s>>>();
}

int main() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* flag_host = nullptr;
  int* flag_dev = nullptr;
  CHECK(cudaHostAlloc(&flag_host, sizeof(int), cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(&flag_dev, flag_host, 0));
  float* a = nullptr;
  CHECK(cudaMalloc(&a, kScaleElements * sizeof(float)));
  CHECK(cudaMemset(a, 0, kScaleElements * sizeof(float)));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  printf("{\n");
  bool first = true;
  for (int scale = 0; scale < 2; ++scale)
    for (int n : {100, 1000}) {
      for (int method = 0; method < 3; ++method) { // 0 gate, 1 no gate, 2 graph
        if (method == 0 && n > 100) continue;      // the host must not block on a full launch queue behind the gate
        cudaGraphExec_t exec = nullptr;
        if (method == 2) {
          cudaGraph_t graph;
          CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
          for (int i = 0; i < n; ++i)
            launch(scale, a, s);
          CHECK(cudaStreamEndCapture(s, &graph));
          CHECK(cudaGraphInstantiate(&exec, graph, 0));
          CHECK(cudaGraphDestroy(graph));
        }
        std::vector<float> per_kernel_us;
        for (int rep = 0; rep < 12; ++rep) {
          if (method == 0) {
            *(volatile int*)flag_host = 0;
            gate_kernel<<<1, 1, 0, s>>>(flag_dev);
          }
          CHECK(cudaEventRecord(e0, s));
          if (method == 2)
            CHECK(cudaGraphLaunch(exec, s));
          else
            for (int i = 0; i < n; ++i)
              launch(scale, a, s);
          CHECK(cudaEventRecord(e1, s));
          if (method == 0) *(volatile int*)flag_host = 1;
          CHECK(cudaStreamSynchronize(s));
          CHECK(cudaGetLastError());
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, e0, e1));
          if (rep >= 2) per_kernel_us.push_back(ms * 1000.0f / n);
        }
        std::sort(per_kernel_us.begin(), per_kernel_us.end());
        const char* names[] = {"gated_stream", "stream", "graph"};
        printf("%s  \"%s_%s_%d\": {\"median_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f}", first ? "" : ",\n",
               scale ? "scale64k" : "empty", names[method], n, per_kernel_us[per_kernel_us.size() / 2],
               per_kernel_us.front(), per_kernel_us.back());
        first = false;
        if (exec) CHECK(cudaGraphExecDestroy(exec));
      }
    }
  printf("\n}\n");
  return 0;
}
