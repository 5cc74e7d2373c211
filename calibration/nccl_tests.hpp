#pragma once
// nccl-tests output (github.com/NVIDIA/nccl-tests: all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf, broadcast_perf, ...): parsed into rows, and fitted to an alpha-beta cost per operation.
//
// What is read: the parameter line "# nThread 1 nGpus 8 minBytes 8 maxBytes ...", the device lines
// "#  Rank  0 Group  0 Pid ... on host device  0 [0x..] NVIDIA H100 80GB HBM3" (their count is the number of ranks:
// under MPI each process reports nThread 1 nGpus 1), "# Collective test starting: all_reduce_perf" (newer versions),
// the two column-header lines and the data rows
//   size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong
// (out-of-place, then in-place; which columns a row has is read from the header, as versions and collectives
// differ), "# Out of bounds values : N OK" and "# Avg bus bandwidth : X". Several runs in one file (a job that ran
// several tests) come back as several runs. Times are in microseconds and bandwidths in GB/s (1e9 bytes/s) as
// nccl-tests prints them; the values here are in seconds and bytes/s.
#include "calibration/error.hpp"
#include "calibration/fit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

struct NcclTestsRow {
  double bytes = 0; // the size column
  double count = 0; // elements
  std::string type; // float, half, bfloat16, ...
  std::string redop;
  int root = -1;
  // Out-of-place and in-place: time (seconds), algorithm and bus bandwidth (bytes/s). In-place absent ("N/A" or
  // missing columns) leaves in_place false.
  double time = 0, algbw = 0, busbw = 0;
  bool in_place = false;
  double time_in_place = 0, algbw_in_place = 0, busbw_in_place = 0;
};

struct NcclTestsRun {
  std::string test;          // "all_reduce_perf" ("" when the output does not say)
  std::string operation;     // "all_reduce" (the test without _perf / _perf_mpi)
  int threads = 0, gpus = 0; // from the parameter line (0: absent)
  int ranks = 0;             // the Rank lines, else threads x gpus
  std::string device;        // the first Rank line's device name
  std::vector<NcclTestsRow> rows;
  std::optional<double> average_busbw; // bytes/s, "# Avg bus bandwidth"
};

// Parses nccl-tests output; `origin` names the file in errors. Throws CalibrationError (where = "line N") on a row
// that does not match its header, on wrong results (#wrong or out-of-bounds values not 0: a broken run must not
// report a time) and on output with no data row.
std::vector<NcclTestsRun> parse_nccl_tests(const std::string& text, const std::string& origin);
std::vector<NcclTestsRun> load_nccl_tests(const std::string& path);

struct NcclTestsFit {
  AlphaBeta cost;                            // time = alpha + bytes x beta, over every out-of-place and in-place time
  double busbw_factor = 0;                   // bus bandwidth / algorithm bandwidth (2 (n-1) / n for all-reduce)
  double plateau_busbw = 0;                  // bytes/s: the mean bus bandwidth of the largest size's rows
  double plateau_bytes = 0;                  // that size
  std::optional<double> protocol_efficiency; // plateau_busbw / link bandwidth, when the caller gave one
};
// Throws CalibrationError if the run has fewer than two sizes to fit.
NcclTestsFit fit_nccl_tests(const NcclTestsRun& run, std::optional<double> link_bandwidth,
                            const std::string& origin = "nccl-tests output");

} // namespace dtsim::calibration
