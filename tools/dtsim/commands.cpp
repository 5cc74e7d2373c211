#include "tools/dtsim/commands.hpp"

#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <unistd.h>

namespace dtsim::cli {

namespace fs = std::filesystem;

void check_writable(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    if (path.empty()) continue;
    const auto parent = fs::absolute(path).parent_path();
    if (!fs::is_directory(parent))
      throw scenario::ScenarioError(path, "", fmt::format("cannot write here: {} is not a directory", parent.string()));
    if (fs::is_directory(path)) throw scenario::ScenarioError(path, "", "cannot write here: it is a directory");
    if (::access(parent.c_str(), W_OK) != 0)
      throw scenario::ScenarioError(path, "", fmt::format("cannot write here: {} is not writable", parent.string()));
  }
}

int finish_table(const std::string& csv_path, const std::string& csv_text, bool every_point_ok) {
  if (!csv_path.empty()) {
    write_files({{csv_path, csv_text}});
    std::cout << fmt::format("Wrote {}\n", csv_path);
  }
  return every_point_ok ? kExitOk : kExitFailed;
}

void write_files(const std::vector<OutputFile>& files) {
  for (const auto& file : files) {
    if (file.path.empty()) continue;
    const auto temporary = file.path + fmt::format(".tmp-{}", ::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << file.content;
      out.flush();
      if (!out) {
        std::remove(temporary.c_str());
        throw std::runtime_error(fmt::format("{}: write failed", file.path));
      }
    }
    fs::rename(temporary, file.path);
  }
}

scenario::Scenario load_with_overrides(const std::string& path, const std::vector<std::string>& sets) {
  std::vector<scenario::Override> overrides;
  for (const auto& s : sets)
    overrides.push_back(scenario::parse_override(s));
  return scenario::load_scenario(path, overrides);
}

int parallel_jobs(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ProgressLine::ProgressLine(std::string label) : label_(std::move(label)), terminal_(::isatty(STDERR_FILENO) != 0) {}

ProgressLine::~ProgressLine() {
  if (terminal_) std::cerr << "\r\033[K" << std::flush;
}

void ProgressLine::update(std::size_t done, std::size_t total) const {
  if (terminal_) std::cerr << fmt::format("\r{}: {}/{} done", label_, done, total) << std::flush;
}

int run_command(const RunArgs& args) {
  const auto scenario = load_with_overrides(args.scenario, args.sets);
  const bool ops_to_stdout = args.ops_out == "-";
  check_writable({args.json_out, args.trace_out, ops_to_stdout ? std::string() : args.ops_out});
  const auto sim = simulate(scenario, !args.trace_out.empty(), ::isatty(STDERR_FILENO) != 0);
  // With the kernel table on stdout, stdout carries only the CSV.
  std::ostream& report_stream = ops_to_stdout ? std::cerr : std::cout;
  report_stream << report::format_summary(sim.result);
  std::vector<OutputFile> files;
  if (!args.json_out.empty()) files.push_back({args.json_out, report::to_json(sim.result).dump(2) + "\n"});
  if (!args.trace_out.empty()) files.push_back({args.trace_out, sim.trace.dump() + "\n"});
  if (!args.ops_out.empty() && !ops_to_stdout) files.push_back({args.ops_out, report::kernels_csv(sim.result)});
  write_files(files);
  for (const auto& f : files)
    report_stream << fmt::format("Wrote {}\n", f.path);
  if (ops_to_stdout) std::cout << report::kernels_csv(sim.result);
  return kExitOk;
}

} // namespace dtsim::cli
