#pragma once
// The host issuing kernels ahead of the GPU. CUDA launches are asynchronous: the CPU enqueues a kernel and moves on,
// and the GPU starts it once it is enqueued and the kernel before it on the stream is done. Kernel i therefore starts
// at max(GPU free, host's issue time of i); while kernels are longer than what the host spends issuing them, the host
// runs ahead and its cost is hidden; a run of short kernels (a small micro-batch, many small ops) drains its lead and
// the GPU waits for the host (Horace He, "Making Deep Learning Go Brrrr From First Principles", 2022: "as long as
// PyTorch can 'run ahead' of the CUDA kernels, most of the framework overhead gets completely hidden").
//
// The timeline follows one rank's compute stream in program order from a synchronization point, where host and GPU
// start together. Time the GPU waits on communication would give the host more lead; the timeline does not see it, so
// where compute waits on communication it can overstate the wait for the host.
#include <algorithm>

namespace dtsim::calibration {

class LaunchTimeline {
public:
  // One kernel the host spends `host_seconds` issuing and the GPU `gpu_seconds` running. Returns the time it adds to
  // the GPU's stream: its run, plus the wait for the host when the host is behind.
  double run(double host_seconds, double gpu_seconds) {
    host_ += host_seconds;
    const double before = gpu_;
    gpu_ = std::max(gpu_, host_) + gpu_seconds;
    return gpu_ - before;
  }
  // The host waits for the GPU (a synchronizing read such as loss.item()); both start together again.
  void synchronize() { host_ = gpu_ = 0; }

private:
  double host_ = 0; // when the host has issued everything so far
  double gpu_ = 0;  // when the GPU has run everything so far
};

} // namespace dtsim::calibration
