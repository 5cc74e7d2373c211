#pragma once
// Validation: dtsim's predictions against published and measured figures (calibration/validation/*.json, one case
// per file). A case is either one kernel priced by the cost model on a GPU profile (op level: against a published
// microbenchmark) or a scenario run (end to end: a file of scenarios/, optional overrides, one reported metric).
// `dtsim validate` runs them all and reports each signed error, and the median and maximum absolute error of each
// level apart. End-to-end figures are checks only: no constant is fitted to them.
#include "calibration/cost_model.hpp"
#include "calibration/measurements.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/points.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dtsim::studies::validate {

// What a case compares. Scenario metrics read the run's result; op metrics the priced kernel.
enum class Metric : std::uint8_t {
  throughput,        // samples/s (RunResult::throughput)
  tokens_per_second, // tokens/s (transformers)
  iteration_seconds, // mean measured iteration
  gpu_watts,         // one GPU's mean electrical draw over the iteration (RunResult::energy)
  tflops_per_gpu,    // model TFLOP/s per GPU as Megatron-LM counts them (recomputation excluded)
  epoch_seconds,     // one epoch (the scenario needs dataset.samples)
  seconds,           // op: the kernel's time
  tflops,            // op: its FLOPs over its time, TFLOP/s
  bytes_per_second,  // op: its bytes (read + written) over its time
  bus_bandwidth,     // collective: nccl-tests' bus bandwidth, bytes/s (algorithm bandwidth x its factor)
  collective_time,   // collective: nccl-tests' time of one call, seconds (small sizes, where busbw rounds to 0)
  // The run's throughput over its baseline's (ScenarioRun::baseline: the same scenario with other overrides), as a
  // publication states one system's speed-up over another's on the same cluster
  throughput_ratio,
};
std::string_view to_string(Metric m);
bool is_op_metric(Metric m);

// A scenario run: the file (relative to the repository root) and `--set`-style overrides.
struct ScenarioRun {
  std::string scenario;
  std::vector<std::string> sets; // "path=value", as written
  std::vector<scenario::Override> overrides;
  // throughput_ratio: the run it is divided by, the same scenario with these overrides instead ("baseline": {"set"})
  std::vector<std::string> baseline_sets;
  std::vector<scenario::Override> baseline_overrides;
};

// One kernel on a GPU profile: `batch` GEMMs C[m x n] = A[m x k] B[k x n] (FLOPs 2mnk each, bytes (mk + kn) x the
// precision's input element size + mn x its output's), a convolution's implicit GEMM moving `bytes`, a fused
// attention kernel over `batch` heads of `sequence` and `head_dim` (calibration::fused_attention_kernel; Q, K, V and
// O moved, and their gradients with `backward`), or a memory-bound kernel moving `bytes` (read + written).
// `sustained`: run in a loop long enough to hold the GPU's power limit (calibration/sustained_clock.hpp), not in a
// short burst.
struct KernelOp {
  std::string profile;                        // a shipped profile's name, or (with `gpu`) where the profile came from
  std::optional<calibration::GpuProfile> gpu; // the profile itself when it is not a shipped one (--profile FILE)
  calibration::KernelClass kind = calibration::KernelClass::gemm;
  calibration::Precision precision = calibration::Precision::fp32;
  double m = 0, n = 0, k = 0, batch = 1;
  double bytes = 0;
  double sequence = 0, head_dim = 0; // attention
  bool causal = true, backward = false;
  bool sustained = false;
  bool unaligned = false;  // a GEMM's leading dimension off 16 bytes (calibration::GemmDims::unaligned)
  bool winograd = false;   // convolution: 3x3, stride 1 (calibration::KernelCost::winograd)
  int kernels = 1;         // memory: launches, each paying the launch overhead
  double stream_share = 1; // memory: a framework's kernel at its measured share of the streaming rate
  calibration::KernelCost cost() const;
};

// One collective over `nodes` nodes of a cloud instance preset (with `--set`-style overrides), benchmarked as
// `dtsim collective` runs it (sim/collective_bench.hpp) at one size, against a published nccl-tests row.
struct CollectiveRun {
  std::string instance;
  int nodes = 1;
  collectives::Operation op = collectives::Operation::all_reduce;
  collectives::Algorithm algorithm = collectives::Algorithm::automatic; // NCCL_ALGO, when the row forced one
  collectives::Protocol protocol = collectives::Protocol::automatic;    // NCCL_PROTO
  double bytes = 0;
  std::vector<std::string> sets;
  std::vector<scenario::Override> overrides;
};

// Where a case stands: one kernel, one collective, or a whole training run.
enum class Level : std::uint8_t { op, collective, end_to_end };

struct Case {
  std::string file; // where it was read from (as given to parse_case)
  std::string name;
  std::string source; // the publication or measurement: table, figure, section
  std::string note;   // assumptions (may be empty)
  double measured = 0;
  std::string unit; // the measured value's unit; the prediction is converted to it
  Metric metric = Metric::throughput;
  std::variant<ScenarioRun, KernelOp, CollectiveRun> what;
  // The profile took a constant from this very measurement ("anchor": true), so the case checks the model's
  // arithmetic on it, not a prediction; reported, but left out of the op-level statistics.
  bool anchor = false;
  // Why another source contradicts the measurement itself ("disputed": "..."; empty: none): a figure the hardware
  // cannot have produced as described. Shown, with the reason, and left out of the statistics of its level.
  std::string disputed;
  // The measurement file it came from with many others (shape_cases: "H100 SXM at training shapes"); empty for a case
  // of its own. Reports may summarize a group in one line.
  std::string group;
  bool op_level() const { return std::holds_alternative<KernelOp>(what); }
  bool counted() const { return !anchor && disputed.empty(); } // in its level's statistics
  Level level() const {
    return op_level() ? Level::op : std::holds_alternative<CollectiveRun>(what) ? Level::collective : Level::end_to_end;
  }
};

// A case file that cannot be read: names the file, the JSON pointer of the field ("/measured/value") and what was
// expected. A ScenarioError, so the CLI treats it as bad input.
class CaseError : public scenario::ScenarioError {
public:
  using ScenarioError::ScenarioError;
};

// Parses one case. Unknown fields are refused (a misspelt "note" would otherwise vanish). Throws CaseError.
Case parse_case(const std::string& json_text, const std::string& file);
// Every *.json in `directory`, in file-name order (a file of kernels at training shapes expanded, shape_cases, its
// timings left out added to `left_out` when given). Throws CaseError (a file that does not parse) or
// std::runtime_error (no such directory).
std::vector<Case> load_cases(const std::filesystem::path& directory, std::vector<std::string>* left_out = nullptr);
// Cases whose name or file name contains `text` (case-insensitive); all of them for an empty text.
std::vector<Case> filter_cases(const std::vector<Case>& cases, const std::string& text);

// The points a fit of the measurement file holds back (calibration/fit.hpp: sorted by size, every
// CurveFitOptions::hold_back_every-th point of each group it fits, here the GEMMs of each precision and the memory
// kernels), as op cases predicted on `profile` (named `profile_label`), metric "seconds" in microseconds. The fit
// never saw them, so with a profile fitted from the same file they measure how well its curves generalize.
// `every_point`: every GEMM and memory point instead, named "measured: ..." (for a profile not fitted from the file,
// such as a shipped one derived from datasheets, every point is out of sample).
std::vector<Case> held_back_cases(const calibration::MeasurementFile& m, const calibration::GpuProfile& profile,
                                  const std::string& profile_label, bool every_point = false);

// A case file of kernels at training shapes, each timed in a burst and sustained at the power limit
// (calibration/shape_timings.hpp), named by "measurements": {"file": path relative to the case file, "profile": a
// shipped profile, "anchors": [case names whose measurement set a constant of the profile]}: one op case per timing,
// metric tflops (a copy: bytes_per_second). Left out, and said so in `skipped`: bursts shorter than 50 us (the GPU
// just out of an idle pause, the events between them costing as much as the kernel) or more than 1.2 times slower than
// the kernel held at the power limit (where the clock can only be lower: a disturbed burst), copies replayed from a
// CUDA graph, and attention back-ends the cost model has no kernel for. Throws CaseError.
struct ShapeCases {
  std::vector<Case> cases;
  std::vector<std::string> skipped;
};
ShapeCases shape_cases(const nlohmann::json& document, const std::string& file);

// The units a metric's measured value may be written in, and the factor from each to the metric's base unit
// (samples/s, tokens/s, seconds, TFLOP/s, bytes/s).
std::vector<std::pair<std::string, double>> accepted_units(Metric m);

struct Outcome {
  bool ok = false;
  std::string error;    // why the case did not run
  double predicted = 0; // in the case's unit
  double error_percent = 0;
};

// Signed relative error in percent: (predicted - measured) / measured x 100.
double error_percent(double predicted, double measured);

// Runs the cases: scenario cases each in a child process, `jobs` at a time (scenario paths relative to `root`);
// op cases here with calibration::kernel_time. Outcomes come back in the cases' order.
std::vector<Outcome> run_cases(const std::vector<Case>& cases, const std::filesystem::path& root, int jobs,
                               const SweepProgress& progress = {}, const MemoryLimit& limit = {});

// Over the signed errors (percent) of the cases that ran: the median and maximum of their absolute values, and the
// index of the case with the largest (the first of equals). count 0: no statistics.
struct ErrorStats {
  std::size_t count = 0;
  double median_abs = 0;
  double max_abs = 0;
  std::size_t max_index = 0;
};
ErrorStats error_stats(const std::vector<double>& signed_errors_percent);

// The folder of the cases under a repository root.
std::filesystem::path cases_directory(const std::filesystem::path& root);
// The repository root: the first of `starts`, or of their parent folders, that holds calibration/validation/.
// Throws std::runtime_error naming where it looked.
std::filesystem::path find_root(const std::vector<std::filesystem::path>& starts);

} // namespace dtsim::studies::validate
