#include "tools/dtsim/commands.hpp"
#include "io/gzip.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/provenance.hpp"
#include "tools/dtsim/html_report.hpp"

#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/units.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/resume.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace dtsim::cli {

namespace fs = std::filesystem;

namespace {

// The file a path writes: a symlink's target, else the path itself, absolute.
fs::path target_of(const std::string& path) {
  std::error_code ec;
  auto absolute = fs::absolute(path);
  for (int hops = 0; hops < 40 && fs::is_symlink(absolute, ec); ++hops) { // a dangling link too
    const auto link = fs::read_symlink(absolute, ec);
    if (ec) break;
    absolute = link.is_absolute() ? link : absolute.parent_path() / link;
  }
  const auto target = fs::weakly_canonical(absolute, ec);
  return ec ? absolute : target;
}

} // namespace

void check_writable(const std::vector<std::string>& paths, const std::vector<std::string>& inputs) {
  std::vector<std::pair<fs::path, std::string>> seen; // target, as given
  for (const auto& input : inputs)
    if (!input.empty() && input != "-") seen.emplace_back(target_of(input), "");
  int to_stdout = 0;
  for (const auto& path : paths) {
    if (path.empty()) continue;
    if (path == "-") {
      if (++to_stdout > 1) throw scenario::ScenarioError(path, "", "two outputs both go to standard output");
      continue;
    }
    const auto target = target_of(path);
    for (const auto& [other, given] : seen)
      if (other == target)
        throw scenario::ScenarioError(path, "",
                                      given.empty() ? "is an input of this run; writing would destroy it"
                                                    : fmt::format("is also the output {}", given));
    seen.emplace_back(target, path);
    const auto parent = target.parent_path();
    if (!fs::is_directory(parent))
      throw scenario::ScenarioError(path, "", fmt::format("cannot write here: {} is not a directory", parent.string()));
    if (fs::is_directory(path)) throw scenario::ScenarioError(path, "", "cannot write here: it is a directory");
    if (::access(parent.c_str(), W_OK) != 0)
      throw scenario::ScenarioError(path, "", fmt::format("cannot write here: {} is not writable", parent.string()));
  }
}

std::string csv_of(const nlohmann::json& rows, const std::vector<std::string>& leading) {
  std::vector<std::string> columns = leading;
  for (const auto& row : rows)
    for (const auto& [key, value] : row.items())
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += csv_field(columns[c]);
  }
  out += "\n";
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ",";
      if (!row.contains(columns[c])) continue;
      const auto& v = row[columns[c]];
      if (v.is_string())
        out += csv_field(v.get<std::string>());
      else if (v.is_number_float())
        out += csv_number(v.get<double>());
      else if (v.is_number() || v.is_boolean())
        out += v.dump();
      else if (!v.is_null())
        out += csv_field(v.dump());
    }
    out += "\n";
  }
  return out;
}

std::ostream& report_stream(const std::vector<std::string>& outputs) {
  return std::find(outputs.begin(), outputs.end(), "-") != outputs.end() ? std::cerr : std::cout;
}

int finish_outputs(std::ostream& report, std::vector<OutputFile> files, const nlohmann::json& document,
                   const std::string& json_path, const std::string& html_path, int status) {
  if (!json_path.empty()) files.push_back({json_path, document.dump(2) + "\n"});
  if (!html_path.empty()) files.push_back({html_path, html_report(document)});
  std::erase_if(files, [](const OutputFile& f) { return f.path.empty(); });
  write_files(files);
  report << wrote(files);
  return status;
}

MemoryLimit memory_limit_of(const std::string& flag, int jobs) {
  if (flag.empty()) return memory_limit(0, jobs);
  const auto bytes = scenario::parse_quantity(flag, scenario::Dimension::bytes);
  // At least what an empty replay takes; at most what a 64-bit machine addresses.
  if (!bytes || *bytes < engine::kProcessBytes || *bytes > 0x1p62)
    throw scenario::ScenarioError("--max-memory", "",
                                  fmt::format("expected a size from 40 MiB up, such as \"16GiB\", got \"{}\"", flag));
  return memory_limit(*bytes, jobs);
}

std::unique_ptr<studies::ResumeStore> open_resume(const std::string& resume_dir, const ShardArgs& sharding) {
  if (!sharding.shard.empty() || sharding.merge_shards > 0) {
    const auto& dir = sharding.merge_shards > 0 ? resume_dir : sharding.out;
    if (dir.empty()) throw scenario::ScenarioError("--shard", "", "needs --out DIR, where the shard's points are kept");
    if (sharding.merge_shards == 0 && !resume_dir.empty())
      throw scenario::ScenarioError("--resume", "",
                                    "a shard keeps its points in --out DIR (and reads back those it kept): give --out "
                                    "alone");
    if (sharding.merge_shards > 0) {
      auto store = std::make_unique<studies::ResumeStore>(dir, DTSIM_VERSION);
      store->set_merge_only(sharding.merge_shards);
      return store;
    }
    // Checked before the store makes its directory: a refused shard leaves nothing behind.
    int index = 0, count = 0;
    char slash = 0;
    std::istringstream in(sharding.shard);
    if (!(in >> index >> slash >> count) || slash != '/' || !in.eof() || count < 1 || count > 100000 || index < 1 ||
        index > count)
      throw scenario::ScenarioError(
          "--shard", "",
          fmt::format("expected K/N with 1 <= K <= N <= 100000, such as 2/8, got \"{}\"", sharding.shard));
    auto store = std::make_unique<studies::ResumeStore>(dir, DTSIM_VERSION);
    store->set_shard(index, count);
    write_shard_manifest(sharding);
    return store;
  }
  const auto& dir = resume_dir;
  if (dir.empty()) {
    engine::set_interrupt_note("Run it with --resume DIR to keep finished points across an interruption.");
    return nullptr;
  }
  auto store = std::make_unique<studies::ResumeStore>(dir, DTSIM_VERSION);
  engine::set_interrupt_note(
      fmt::format("The finished points are kept in {}: run the same command again to finish the rest.", dir));
  return store;
}

std::optional<int> shard_finished(const studies::ResumeStore* store) {
  if (!store || !store->finished_shard()) return std::nullopt;
  const auto& done = *store->finished_shard();
  std::cout << fmt::format("shard {}/{}: {} points kept in {} ({} simulated now); put the shards together with "
                           "dtsim merge\n",
                           done.index, done.count, done.points, done.dir, done.simulated);
  return kExitOk;
}

void write_files(const std::vector<OutputFile>& files) {
  for (const auto& file : files) {
    if (file.path.empty()) continue;
    if (file.path == "-") {
      std::cout << file.content << std::flush;
      continue;
    }
    const auto target = target_of(file.path);
    if (fs::exists(target) && !fs::is_regular_file(target)) { // a device or a FIFO: written in place
      std::ofstream out(target, std::ios::binary);
      out << file.content;
      if (!out.flush()) throw std::runtime_error(fmt::format("{}: write failed", file.path));
      continue;
    }
    const auto temporary = target.string() + fmt::format(".tmp-{}", ::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << file.content;
      out.flush();
      if (!out) {
        std::remove(temporary.c_str());
        throw std::runtime_error(fmt::format("{}: write failed", file.path));
      }
    }
    fs::rename(temporary, target);
  }
}

std::string wrote(const std::vector<OutputFile>& files) {
  std::string out;
  for (const auto& f : files)
    if (!f.path.empty() && f.path != "-") out += fmt::format("Wrote {}\n", f.path);
  return out;
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
  constexpr double kPaceSeconds = 10, kLongSeconds = 600;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (!first_) first_ = std::make_pair(now, done);
  if (terminal_) {
    std::cerr << fmt::format("\r{}: {}/{} done", label_, done, total) << std::flush;
  } else {
    // Piped or logged (a batch job's output): a line every few seconds instead of a line redrawn, so that a long run
    // is seen to move, and the last point's (N/N) where any line came before it or the work took that long. Lines
    // come as points finish; a single long simulation shows none until it ends (a ticking thread would share the
    // process with the forks that run the simulations).
    constexpr auto kLineEvery = std::chrono::seconds(5);
    const bool last = done >= total && !ended_ && (wrote_line_ || now - start_ >= kLineEvery);
    ended_ = ended_ || last;
    if (last || (done < total && now - last_line_ >= kLineEvery)) {
      last_line_ = now;
      wrote_line_ = true;
      std::cerr << fmt::format("{}: {}/{} done in {}\n", label_, done, total, report::format_seconds(elapsed));
    }
  }
  // The forecast, after the line (a log shows the progress first, however slowly the points come): the work left at
  // the pace of the points done since the first update, once that has run a while.
  const double observed = std::chrono::duration<double>(now - first_->first).count();
  const std::size_t finished = done - std::min(done, first_->second);
  if (!warned_ && finished > 0 && done < total && observed >= kPaceSeconds) {
    warned_ = true;
    const double left = observed * static_cast<double>(total - done) / static_cast<double>(finished);
    if (left > kLongSeconds)
      std::cerr << (terminal_ ? "\r\033[K" : "")
                << fmt::format("warning: {}: {}/{} done in {}; the rest will take about {} more at this pace (Ctrl-C "
                               "stops it; ask for less to finish sooner)\n",
                               label_, done, total, report::format_seconds(elapsed), report::format_seconds(left));
  }
}

namespace {

// A trace keeps at most this many GPUs unless --trace-ranks says which: every op of a thousand GPUs makes a trace that
// viewers open slowly or not at all, and 64 of them, spread over the job, show each stage and group's pattern.
constexpr std::size_t kDefaultTracedRanks = 64;

// "0-7,16" -> 0..7, 16 (ascending, each below `count`); `option` names the flag in errors.
std::vector<int> parse_index_list(const std::string& text, int count, const std::string& option, const char* what) {
  std::vector<int> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    int a = -1, b = -1;
    char dash = 0, extra = 0;
    const int n = std::sscanf(part.c_str(), "%d%c%d%c", &a, &dash, &b, &extra);
    if (n == 1) b = a;
    if (!((n == 1) || (n == 3 && dash == '-')) || a < 0 || b < a || b >= count)
      throw scenario::ScenarioError(
          option, "", fmt::format("expected {} from 0 to {} as \"0-7,16\", got \"{}\"", what, count - 1, text));
    for (int i = a; i <= b; ++i)
      out.push_back(i);
  }
  if (out.empty())
    throw scenario::ScenarioError(option, "", fmt::format("expected {} as \"0-7,16\", got nothing", what));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

} // namespace

int run_command(const RunArgs& args) {
  const auto scenario = load_with_overrides(args.scenario, args.sets);
  check_writable({args.json_out, args.html_out, args.trace_out, args.ops_out}, {args.scenario});
  const auto limit = memory_limit_of(args.max_memory, 1);
  report::TraceOptions trace;
  if (args.trace_ranks.empty())
    trace.max_ranks = kDefaultTracedRanks;
  else if (args.trace_ranks != "all")
    trace.ranks = parse_index_list(args.trace_ranks, scenario.cluster.gpu_count(), "--trace-ranks", "GPU ranks");
  if (!args.trace_iterations.empty())
    trace.iterations = parse_index_list(args.trace_iterations, scenario.run.iterations + scenario.run.warmup_iterations,
                                        "--trace-iterations", "iterations (the warm-up first)");
  Simulation sim;
  try {
    sim = simulate(scenario, !args.trace_out.empty() || !args.html_out.empty(), ::isatty(STDERR_FILENO) != 0, limit,
                   trace);
  } catch (const plan::PlanError& e) { // does not fit, cannot be planned: the scenario's to change, so it is named
    throw scenario::ScenarioError(args.scenario, "", e.what());
  }
  // With an output on stdout, stdout carries only it; the report goes to stderr.
  std::ostream& out = report_stream({args.json_out, args.html_out, args.trace_out, args.ops_out});
  out << report::format_summary(sim.result);
  auto document = studies::run_document(sim.result);
  std::vector<OutputFile> files;
  if (!args.json_out.empty()) files.push_back({args.json_out, document.dump(2) + "\n"});
  if (!args.trace_out.empty()) {
    // The trace says what made it: dtsim's version and commit, the scenario and the hash --json carries.
    auto& about = sim.trace["otherData"];
    about.update(studies::provenance(sim.result.scenario)); // dtsim_version, git_commit, scenario_hash
    about["scenario"] = scenario.name;
    const auto traced = about.value("ranks_traced", std::size_t{0}), simulated = about.value("ranks_simulated", traced);
    if (traced < simulated && args.trace_ranks.empty())
      std::cerr << fmt::format("note: the trace keeps {} of the {} simulated GPUs, spread over the job (--trace-ranks "
                               "all keeps every one; --trace-ranks 0-7,16 names them)\n",
                               traced, simulated);
  }
  if (!args.trace_out.empty()) // Perfetto opens a .json.gz as it is
    files.push_back({args.trace_out,
                     args.trace_out.ends_with(".gz") ? io::gzip(sim.trace.dump() + "\n") : sim.trace.dump() + "\n"});
  if (!args.ops_out.empty()) files.push_back({args.ops_out, report::kernels_csv(sim.result)});
  if (!args.html_out.empty()) {
    document["command"] = "run";
    document["timeline"] = report::timeline_sample(sim.trace);
  }
  return finish_outputs(out, files, document, "", args.html_out, kExitOk);
}

} // namespace dtsim::cli
