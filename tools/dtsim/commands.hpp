#pragma once
// The dtsim subcommands. main.cpp parses argv with CLI11 and calls these; they build a Scenario and call
// the library. Each returns the process exit status.
#include <string>
#include <vector>

namespace dtsim::cli {

// Exit statuses: 0 success; 1 the simulation failed (deadlock, internal error); 2 bad input (scenario,
// overrides, command line, a plan that cannot run).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string json_out;
  std::string trace_out;
};
int run_command(const RunArgs& args);

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string nodes;
  std::string csv_out;
  int jobs = 0; // 0: one per core
};
int sweep_command(const SweepArgs& args);

// Shared by the commands.
struct OutputFile {
  std::string path;
  std::string content;
};
// Checks that each path can be written before any simulation runs (so bad paths fail fast).
void check_writable(const std::vector<std::string>& paths);
// Writes every file via a temporary and a rename, so no half-written file is ever left behind.
void write_files(const std::vector<OutputFile>& files);

} // namespace dtsim::cli
