#pragma once
// The dtsim subcommands. main.cpp parses argv with CLI11 and calls these; they build a Scenario and call
// the library. Each returns the process exit status.
#include "io/error.hpp"
#include "io/table.hpp"
#include "sim/report/format.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/plan_report.hpp"
#include "sim/studies/resume.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::cli {

// Exit statuses: 0 success; 1 the simulation failed (deadlock, internal error); 2 bad input (scenario,
// overrides, command line, a plan that cannot run). An error carries its own (io/error.hpp).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = static_cast<int>(ExitStatus::failed);
inline constexpr int kExitBadInput = static_cast<int>(ExitStatus::bad_input);

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string json_out;
  std::string html_out;         // a self-contained HTML report with figures
  std::string trace_out;        // a Chrome trace (Perfetto); gzip-compressed when it ends in .gz
  std::string trace_ranks;      // "0-7,16": the ranks the trace keeps; empty: every one
  std::string trace_iterations; // "2" or "1-3" (0-based, the warm-up included); empty: every one
  std::string ops_out;          // the kernel table as CSV; "-": on stdout (the summary then goes to stderr)
  std::string max_memory;       // --max-memory SIZE; empty: 3/4 of this machine's memory
};
int run_command(const RunArgs& args);

// --shard K/N --out DIR of sweep, compare, search and plan: run a deterministic 1/N of the points, kept in DIR with a
// manifest (shard.json: the command line, K and N) that `dtsim merge` reads.
struct ShardArgs {
  std::string shard;                     // "K/N"; empty: every point
  std::string out;                       // the directory this shard's points are kept in
  int merge_shards = 0;                  // set by dtsim merge: every point must be kept already
  std::vector<std::string> command_line; // argv after "dtsim", for the manifest
};

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string nodes;
  std::string csv_out;
  std::string json_out;
  std::string html_out;
  int jobs = 0;           // 0: one per core
  std::string resume;     // --resume DIR: finished points kept there, and read back instead of simulated again
  std::string max_memory; // --max-memory SIZE; empty: 3/4 of this machine's memory
  ShardArgs sharding;
};
int sweep_command(const SweepArgs& args);

struct CompareArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string strategies; // "allreduce,ps-sync,ssp:3"
  // Training policies compared as whole runs instead (dtsim train's trials): "label: path=value, ...; label: ..."
  std::string policies;
  int trials = 100;
  std::optional<std::uint64_t> seed;
  std::string csv_out;
  std::string json_out;
  std::string html_out;
  int jobs = 0; // 0: one per core
  std::string resume;
  std::string max_memory; // --max-memory SIZE; empty: 3/4 of this machine's memory
  ShardArgs sharding;
};
int compare_command(const CompareArgs& args);
int compare_policies_command(const CompareArgs& args); // compare_policies.cpp: --policies

struct TrainArgs {
  std::string scenario;
  std::vector<std::string> sets;
  int trials = 100;
  std::optional<std::uint64_t> seed; // absent: the scenario's run.seed
  std::string iteration_time;        // a measured step time ("6.1s"); empty: simulated
  std::string csv_out;               // one row per trial
  std::string json_out;
  std::string html_out;
  int jobs = 0;
  std::string max_memory;
};
int train_command(const TrainArgs& args);

struct SearchArgs {
  std::string scenario;
  std::vector<std::string> sets;
  int top = 10;                // rows of each ranking
  std::string simulate = "20"; // the best K by the closed-form estimate are simulated, or "all"
  bool csv = false;            // every candidate as CSV on stdout instead of the rankings
  int jobs = 0;                // 0: one per core
  std::string nodes;           // "1,2,4" or "1..8": node counts to search over; empty: the scenario's
  std::string fidelity;        // step, aggregate or coarse; empty: coarse with model parallelism, aggregate without
  std::string json_out;        // every candidate, as the CSV has them
  std::string html_out;
  std::string resume;
  std::string max_memory; // --max-memory SIZE; empty: 3/4 of this machine's memory
  ShardArgs sharding;
};
int search_command(const SearchArgs& args);

struct PlanArgs {
  std::string scenario;
  std::vector<std::string> sets;
  studies::planning::Request request; // --tokens, --steps, --deadline, --budget, --instances, --nodes, --capacity,
                                      // --clusters, --layouts, --trials (its sets and seed are filled from these)
  std::optional<std::uint64_t> seed;  // absent: the scenario's run.seed
  std::string csv_out;
  std::string json_out;
  std::string html_out;
  int jobs = 0;
  std::string max_memory;
  std::string resume; // --resume DIR: the simulated layouts kept there, and read back instead of simulated again
  ShardArgs sharding;
};
int plan_command(const PlanArgs& args);

struct CollectiveArgs {
  std::string scenario;                // the cluster to run on: a scenario file, or
  std::optional<std::string> instance; // a cloud instance preset (--instance) on
  std::optional<int> nodes;            // this many nodes (--nodes, only with --instance; 1 when not given)
  std::vector<std::string> sets;
  std::string op = "all-reduce";
  std::string algorithm = "auto";
  std::string protocol = "auto";
  std::string fidelity = "step";
  int ranks = 0;
  std::string sizes;                             // empty: 8B..1GiB, or nccl-tests' -b/-e/-f when given
  std::string min_bytes, max_bytes, step_factor; // nccl-tests' -b, -e, -f
  std::string csv_out;
  std::string json_out;
  std::string html_out;
  int jobs = 0;
  std::string max_memory; // --max-memory SIZE; empty: 3/4 of this machine's memory
};
int collective_command(const CollectiveArgs& args);

struct ExplainArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string path; // "A,B": the route between GPUs A and B
  std::string json_out;
  std::string max_memory; // --max-memory SIZE: the limit the simulation's estimate is held to; empty: 3/4 of this
                          // machine's memory
};
int explain_command(const ExplainArgs& args);

// instances, gpus, models, algorithms, topologies, strategies, failures; with json_out or csv_out, the same as data
// `dtsim export --chakra DIR SCENARIO`: the scenario's graph as Chakra execution traces (sim/chakra).
struct ExportArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string chakra_dir; // the folder the files go to (created)
  std::string name;       // the files' NAME in NAME.RANK.et; empty: the scenario's name
};
int export_command(const ExportArgs& args);

int list_command(const std::string& what, const std::string& json_out = "", const std::string& csv_out = "");

struct CalibrateArgs {
  std::string measurements;   // dtsim-probe's measurement file (docs/measurement-format.md), or
  std::string nccl_tests;     // nccl-tests output (--nccl-tests)
  std::string output;         // -o: the profile to write
  std::string base;           // --base: the profile peaks and capacities come from; empty: by the device's name
  std::string name;           // --name: the profile's name; empty: the output file's stem
  std::string link_bandwidth; // --link-bandwidth "450GB/s" (with --nccl-tests): for the protocol efficiency
};
int calibrate_command(const CalibrateArgs& args);

struct ValidateArgs {
  bool csv = false;         // every case as CSV on stdout instead of the table
  std::string filter;       // only the cases whose name or file name contains it (case-insensitive)
  int jobs = 0;             // 0: one per core
  std::string root;         // the repository root; empty: found from the current directory or the executable
  std::string measurements; // dtsim-probe's measurement file: its held-back points become op cases too
  std::string profile;      // the profile those are predicted on (a shipped name or a profile file); empty: the
                            // shipped profile of the measured device
  bool every_point = false; // every GEMM and memory point of the measurements, not only the held-back ones
  std::string max_memory;   // --max-memory SIZE; empty: 3/4 of this machine's memory
  std::string json_out;     // every case with its figures
};
int validate_command(const ValidateArgs& args);

// Shared by the commands.
scenario::Scenario load_with_overrides(const std::string& path, const std::vector<std::string>& sets);
int parallel_jobs(int requested); // 0: one per core

// "label: 3/8 done" on stderr: on a terminal rewritten in place and erased when it goes out of scope; otherwise a line
// "label: 3/8 done in 12.3 s" every five seconds at most, as points finish. Terminal or not, work that will take long
// is said once, early: when what is left would take over ten minutes at the pace of the first ten seconds (a million
// trials, a sweep of huge points), a warning with the projected time.
class ProgressLine {
public:
  explicit ProgressLine(std::string label);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void update(std::size_t done, std::size_t total) const;

private:
  std::string label_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable bool warned_ = false;
  mutable std::chrono::steady_clock::time_point last_line_ = start_; // not a terminal: the last line written
  mutable bool wrote_line_ = false, ended_ = false;
  // The first update: the pace is measured from there, so that the work before the first point (a search's screen)
  // does not count as the points' time.
  mutable std::optional<std::pair<std::chrono::steady_clock::time_point, std::size_t>> first_;
};

using report::csv_field;

// A CSV number in full precision, or an empty field where the figure does not apply (a cost without a price).
inline std::string csv_number(double value, bool applies = true) {
  return applies ? fmt::format("{:.9g}", value) : std::string();
}

// An array of JSON objects as CSV: a column per key (`leading` first, in its order, then the rest of the union of the
// objects' keys, in order), numbers in full precision, null as an empty field, nested arrays and objects as their
// JSON text.
std::string csv_of(const nlohmann::json& rows, const std::vector<std::string>& leading = {});

struct OutputFile {
  std::string path;
  std::string content;
};
// Every output flag takes a path or `-` (standard output). Before anything runs: each path can be written, no two
// outputs name one file, and no output names one of the run's `inputs` (writing would destroy it).
void check_writable(const std::vector<std::string>& paths, const std::vector<std::string>& inputs = {});
// Writes each file: `-` to standard output; a symlink's target (the link stays); a device or FIFO in place; a regular
// file via a temporary in its directory and a rename, so no half-written file is ever left behind.
void write_files(const std::vector<OutputFile>& files);
using io::aligned_table;

// "Wrote PATH" for every file written to a path (not for standard output).
std::string wrote(const std::vector<OutputFile>& files);

// The exit status of a command whose points each succeed or fail: kExitFailed when a point failed in the simulation
// (or its process died), else kExitBadInput when a point's input cannot run (invalid at that point, does not fit in
// GPU memory), else kExitOk.
template <class Points> int points_status(const Points& points) {
  bool failed = false;
  bool bad_input = false;
  for (const auto& p : points)
    if (!p.ok) (p.bad_input ? bad_input : failed) = true;
  return failed ? kExitFailed : bad_input ? kExitBadInput : kExitOk;
}

// Where a command prints its report: standard error when one of its `outputs` goes to standard output (`-`), so that
// standard output carries that output alone.
std::ostream& report_stream(const std::vector<std::string>& outputs);

// The end of a command: writes `files` (those with a path), the JSON `document` to `json_path` and its HTML report
// (html_report.hpp) to `html_path` where given, says which files it wrote on `report`, and returns `status`.
int finish_outputs(std::ostream& report, std::vector<OutputFile> files, const nlohmann::json& document,
                   const std::string& json_path, const std::string& html_path, int status);

// --max-memory: each simulation's memory limit, the flag's size (or 3/4 of this machine's memory) shared by `jobs`
// simulations at once. A bad size is bad input.
MemoryLimit memory_limit_of(const std::string& flag, int jobs);

// --resume DIR: the store of finished points (none without the flag), and what an interruption says about it.
std::unique_ptr<studies::ResumeStore> open_resume(const std::string& dir, const ShardArgs& sharding = {});

// A shard's run ends with what it kept, not with the command's results (`dtsim merge` prints those): the line that
// says so, on stdout, and the exit status; nullopt when the run was not a shard's.
std::optional<int> shard_finished(const studies::ResumeStore* store);

// `dtsim merge DIR...`: the shards of one sharded command put together, printed and written as the unsharded command
// prints and writes them (it runs that command again with the shards' points read back; nothing is simulated).
struct MergeArgs {
  std::vector<std::string> dirs;
  std::string csv_out;  // replaces the command's --csv FILE
  std::string json_out; // replaces the command's --json FILE
  std::string html_out; // replaces the command's --html FILE
};
int merge_command(const MergeArgs& args);

// Writes DIR/shard.json for a sharded run: the command line without its --shard, --out and --resume, the working
// directory its paths are relative to, K and N.
void write_shard_manifest(const ShardArgs& sharding);

} // namespace dtsim::cli
