// dtsim-probe: measures this machine's GPU(s) and writes a measurement file for `dtsim calibrate`
// (docs/measurement-format.md).
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <sstream>
#include <string>
#include <variant>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "errors.hpp"
#include "json_out.hpp"
#include "probe.hpp"

namespace dtsim::probe {
namespace {

constexpr const char* kFamilies[] = {"launch", "copy", "memory", "kernel", "gemm", "attention", "collective"};

void usage(std::FILE* to) {
  std::fprintf(to,
               "dtsim-probe %s: measure this machine's GPUs for dtsim's calibration\n"
               "\n"
               "usage: dtsim-probe --out FILE [--quick] [--device N] [--only FAMILY,...]\n"
               "\n"
               "  --out FILE      the measurement file to write (docs/measurement-format.md); written atomically,\n"
               "                  and only when every measurement is done\n"
               "  --quick         a smaller grid and fewer repetitions (about a minute on an H100)\n"
               "  --device N      the GPU of the single-GPU measurements (default 0); collectives and\n"
               "                  peer-to-peer copies use every visible GPU\n"
               "  --only LIST     only these families, comma-separated: launch, copy, memory, kernel, gemm,\n"
               "                  attention, collective\n"
               "  -h, --help      this text\n"
               "  --version       the probe's version\n"
               "\n"
               "Next: dtsim calibrate FILE -o calibration/profiles/NAME.json\n"
               "Exit status: 0 done; 1 an error (no CUDA device, a failed CUDA call: nothing written); 2 bad\n"
               "arguments; 3 written, but some kernel failed its check and its measurements were left out.\n",
               kProbeVersion);
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Options parse(int argc, char** argv, bool& help, bool& version) {
  Options o;
  bool have_out = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      help = true;
    } else if (a == "--version") {
      version = true;
    } else if (a == "--out" || a == "-o") {
      o.out = value();
      have_out = true;
    } else if (a.rfind("--out=", 0) == 0) {
      o.out = a.substr(6);
      have_out = true;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--device" || a.rfind("--device=", 0) == 0) {
      const std::string v = a == "--device" ? value() : a.substr(9);
      char* end = nullptr;
      const long d = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || d < 0 || d > 1024) throw UsageError("--device expects a GPU index, got " + v);
      o.device = static_cast<int>(d);
    } else if (a == "--only" || a.rfind("--only=", 0) == 0) {
      std::stringstream list(a == "--only" ? value() : a.substr(7));
      for (std::string f; std::getline(list, f, ',');) {
        bool known = false;
        for (const char* k : kFamilies)
          known = known || f == k;
        if (!known) throw UsageError("--only: unknown family " + f);
        o.only.insert(f);
      }
    } else {
      throw UsageError("unknown argument " + a);
    }
  }
  if (!help && !version && !have_out) throw UsageError("--out FILE is required");
  return o;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// The driver's own version ("550.54.15") from NVML, loaded at run time so the probe needs no NVML to build or
// start; without it, the CUDA version the driver supports.
std::string driver_version() {
  int cuda_driver = 0;
  PROBE_CUDA(cudaDriverGetVersion(&cuda_driver));
  const std::string fallback = "CUDA " + cuda_version_text(cuda_driver);
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml) return fallback;
  using init_t = int (*)();
  using version_t = int (*)(char*, unsigned);
  auto init = reinterpret_cast<init_t>(dlsym(nvml, "nvmlInit_v2"));
  auto get = reinterpret_cast<version_t>(dlsym(nvml, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<init_t>(dlsym(nvml, "nvmlShutdown"));
  std::string out = fallback;
  if (init && get && shutdown && init() == 0) {
    char buf[96] = {};
    if (get(buf, sizeof buf) == 0 && buf[0]) out = buf;
    shutdown();
  }
  dlclose(nvml);
  return out;
}

Json device_json(int device, int count) {
  cudaDeviceProp p{};
  PROBE_CUDA(cudaGetDeviceProperties(&p, device));
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    PROBE_CUDA(cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  Json j;
  j["name"] = p.name;
  j["index"] = device;
  j["count"] = count;
  j["compute_capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
  j["sms"] = p.multiProcessorCount;
  j["clock_hz"] = static_cast<long long>(attr(cudaDevAttrClockRate)) * 1000;
  j["memory_clock_hz"] = static_cast<long long>(attr(cudaDevAttrMemoryClockRate)) * 1000;
  j["memory_bus_bits"] = attr(cudaDevAttrGlobalMemoryBusWidth);
  j["memory_bytes"] = static_cast<unsigned long long>(p.totalGlobalMem);
  j["l2_bytes"] = p.l2CacheSize;
  return j;
}

std::string cublas_version() {
  const std::size_t v = cublasLtGetVersion(); // major * 10000 + minor * 100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

int run(const Options& opt) {
  // A machine without a GPU (or without a driver) stops here, before anything is written.
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "dtsim-probe: no CUDA device (%s)\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none");
    return 1;
  }
  if (opt.device >= count)
    throw ProbeError("--device " + std::to_string(opt.device) + ": only " + std::to_string(count) + " GPU(s) visible");
  check_writable(opt.out);

  const auto started = std::chrono::steady_clock::now();
  Context ctx;
  ctx.options = opt;
  ctx.device = opt.device;
  ctx.device_count = count;
  PROBE_CUDA(cudaSetDevice(ctx.device));
  cudaDeviceProp p{};
  PROBE_CUDA(cudaGetDeviceProperties(&p, ctx.device));
  ctx.sms = p.multiProcessorCount;
  ctx.cc_major = p.major;
  ctx.cc_minor = p.minor;
  if (opt.quick) ctx.reps = Repetitions{2, 5, 20, 0.05};

  int runtime = 0;
  PROBE_CUDA(cudaRuntimeGetVersion(&runtime));
  Json file;
  file["dtsim_measurements_version"] = 1;
  file["probe_version"] = kProbeVersion;
  file["date"] = utc_now();
  file["host"] = hostname();
  file["quick"] = opt.quick;
  file["device"] = device_json(ctx.device, count);
  file["driver_version"] = driver_version();
  file["cuda_version"] = cuda_version_text(runtime);
  file["cublas_version"] = cublas_version();
  if (const std::string nccl = nccl_version(); !nccl.empty()) file["nccl_version"] = nccl;
  std::fprintf(stderr, "dtsim-probe %s on %s (%s, %d SMs, %s), %d GPU(s)%s\n", kProbeVersion, p.name,
               file["device"]["compute_capability"].get<std::string>().c_str(), p.multiProcessorCount,
               human_bytes(static_cast<double>(p.totalGlobalMem)).c_str(), count, opt.quick ? ", quick" : "");

  const auto wanted = [&](const char* family) { return opt.only.empty() || opt.only.count(family) > 0; };
  const struct {
    const char* family;
    void (*run)(Context&);
  } families[] = {{"launch", run_launch},         {"copy", run_copies}, {"memory", run_memory},
                  {"kernel", run_kernels},        {"gemm", run_gemm},   {"attention", run_attention},
                  {"collective", run_collectives}};
  for (const auto& f : families) {
    if (!wanted(f.family)) continue;
    std::fprintf(stderr, "%s\n", f.family);
    f.run(ctx);
  }

  file["measurements"] = to_json(ctx.results.measurements);
  file["skipped"] = to_json(ctx.results.skipped);
  if (!ctx.results.failed_checks.empty()) file["failed_checks"] = to_json(ctx.results.failed_checks);
  write_atomically(opt.out, file.dump(2) + "\n");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr, "dtsim-probe: wrote %zu measurements to %s in %.0f s (%zu skipped)\n",
               ctx.results.measurements.size(), opt.out.c_str(), took, ctx.results.skipped.size());
  if (!ctx.results.failed_checks.empty()) {
    std::fprintf(stderr, "dtsim-probe: %zu kind(s) failed their check and were left out:\n",
                 ctx.results.failed_checks.size());
    for (const auto& r : ctx.results.failed_checks)
      std::fprintf(stderr, "  %s\n", std::get<std::string>(r.fields.at(1).second).c_str());
    return 3;
  }
  std::fprintf(stderr, "next: dtsim calibrate %s -o calibration/profiles/NAME.json\n", opt.out.c_str());
  return 0;
}

} // namespace
} // namespace dtsim::probe

int main(int argc, char** argv) {
  using namespace dtsim::probe;
  bool help = false, version = false;
  Options opt;
  try {
    opt = parse(argc, argv, help, version);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "dtsim-probe: %s (dtsim-probe --help for usage)\n", e.what());
    return 2;
  }
  if (help) {
    usage(stdout);
    return 0;
  }
  if (version) {
    std::printf("dtsim-probe %s\n", kProbeVersion);
    return 0;
  }
  try {
    return run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim-probe: %s\n", e.what());
    return 1;
  }
}
