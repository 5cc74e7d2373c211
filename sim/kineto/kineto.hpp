#pragma once
// One GPU's training step as PyTorch's profiler recorded it (torch.profiler's Kineto trace: Chrome trace JSON, plain
// or gzip): the GPU's kernels and copies in stream order with their measured durations, the host time between them,
// each one's phase (forward, backward, optimizer) and the gradients in the order backward produced them, so that a
// planner can add the data-parallel communication PyTorch DDP would overlap with them.
//
// How the trace is read (the events torch.profiler writes):
//  - the step: the user annotation "ProfilerStep#N" (profile.step() opens one per step); a GPU activity belongs to the
//    step whose span holds its launch (the cuda_runtime event with the same args.correlation);
//  - GPU activities: events of category kernel, gpu_memcpy and gpu_memset. NCCL's kernels are left out (the
//    communication is the simulator's to model), and so is the time the GPU waited on them;
//  - the phase: the host ranges (cpu_op, user_annotation) open on the launching thread at the launch. Inside
//    "autograd::engine::evaluate_function: ..." (the autograd engine running a backward node) it is backward, inside
//    "Optimizer.step#..." or "Optimizer.zero_grad#..." (torch.optim's record_function) the optimizer, else forward;
//  - gradients: each "torch::autograd::AccumulateGrad" cpu_op stores one parameter's gradient (DDP's reducer hooks the
//    same node); with record_shapes=True its args carry the gradient's "Input Dims" and "Input type". The gradient is
//    ready once the GPU has run what was launched before the op ended;
//  - collectives: a distributed job's trace has a "record_param_comms" cpu_op for each c10d collective it launched
//    (PyTorch 2.1 and later), with "Collective name", "In msg nelems", "Out msg nelems" and "dtype": DDP's bucket
//    all-reduces during backward, its buffers' broadcasts before forward.
#include "io/error.hpp"
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::kineto {

// A trace that cannot be used: the message names the file and what is wrong; about_step() when the step asked for is
// not in it.
class ProfileError : public InputError {
public:
  explicit ProfileError(const std::string& message, bool about_step = false)
      : InputError(message), about_step_(about_step) {}
  bool about_step() const { return about_step_; }

private:
  bool about_step_;
};

enum class Phase : std::uint8_t { forward, backward, optimizer };
std::string_view to_string(Phase phase);

struct Activity {
  std::string name;
  Phase phase = Phase::forward;
  bool copy = false; // a memcpy or memset, not a kernel
  // Seconds the GPU was busy with it and nothing earlier: its duration, less any part an earlier activity on another
  // stream was already running in (concurrent streams count once).
  double seconds = 0;
  // Seconds the GPU ran nothing before it since the previous activity ended (the host had not launched it yet, or the
  // stream waited for a collective). The first activity's is 0: the step starts at its first activity.
  double gap_before = 0;
  double comm_wait = 0; // of gap_before, the seconds an NCCL kernel was running in (a wait for communication, maybe)
  double bytes = 0;     // a copy's bytes (args.bytes), else 0
};

struct Gradient {
  double bytes = 0;
  // Index into ProfiledStep::activities: the gradient is ready once that activity is done (none: before the first).
  std::optional<std::size_t> ready_after;
};

// A collective the traced job launched (record_param_comms), as the trace names it: "allreduce", "broadcast",
// "allgather", "reduce_scatter", "all_to_all", "barrier", ...
struct Collective {
  std::string name;
  double bytes = 0; // the larger of its input and output, nelems x dtype size (nccl-tests' size)
  // Index into ProfiledStep::activities: launched after that activity's launch (none: before the first).
  std::optional<std::size_t> ready_after;
  Phase phase = Phase::forward; // launched during backward (DDP's buckets), or blocking the stream elsewhere
};

struct ProfiledStep {
  std::string step;                    // "ProfilerStep#4"; empty when the trace has no step annotations (all of it)
  std::vector<Activity> activities;    // in the order the GPU started them
  std::vector<Gradient> gradients;     // in the order backward produced them; empty without AccumulateGrad ops
  std::vector<Collective> collectives; // in launch order; empty in a one-GPU job's trace ("wait" entries left out)
  int parameter_tensors = 0;           // AccumulateGrad ops in the step
  bool shapes = false;                 // every one of them gave its gradient's shape and type
  // Host time between this step's last activity and the next step's first (the data loader, the Python loop), NCCL's
  // kernels' time taken out; 0 when no step follows.
  double gap_after = 0;
  int communication_kernels = 0; // NCCL kernels left out
  // With profile_memory=True: the step's peak bytes in PyTorch's CUDA caching allocator ("[memory]" events' "Total
  // Allocated", tensors) and what it held from the device ("Total Reserved"); unset without such events.
  std::optional<double> peak_allocated, peak_reserved;
  // The GPU the trace was recorded on, as torch.profiler names it ("deviceProperties": "NVIDIA A100-SXM4-80GB"); empty
  // when the trace does not say.
  std::string device;

  double busy_seconds() const;   // the activities' seconds
  double gap_seconds() const;    // every gap (comm waits included), gap_after included
  double gradient_bytes() const; // the gradients' bytes
};

struct ReadOptions {
  // The step to take: N of "ProfilerStep#N". Unset: the last step another step follows (so that the host time to the
  // next one is measured), or the only one.
  std::optional<std::int64_t> step;
};

// Reads a trace file (.json, or .json.gz as torch.profiler's tensorboard_trace_handler(use_gzip=True) writes it).
ProfiledStep read_profile(const std::filesystem::path& file, const ReadOptions& options = {});
// The memory reading `file` takes at its peak, bytes: the text and the events kept from it, 2.1 times the text
// (measured: a synthetic trace of 10^6 kernels, their launches and ops, 478 MB of text, peaked at 1.0 GB resident
// with its plan), and the compressed copy of a gzipped file. 0 where the file cannot be read (read_profile says why).
double reading_bytes(const std::filesystem::path& file);
// The same from the file's text; `file` names it in errors.
ProfiledStep parse_profile(const std::string& text, const std::string& file, const ReadOptions& options = {});

} // namespace dtsim::kineto
