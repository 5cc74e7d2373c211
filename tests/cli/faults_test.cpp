// Faults a batch system or a user deals a long run: SIGTERM or SIGINT to the parent alone, the parent killed
// outright, and the run finished later with --resume. The children never outlive their parent, and a resumed run
// prints and writes exactly what an uninterrupted one does. An address-space limit is respected, not an abort.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Points that each take a second or so (a thousand single-GPU nodes, step fidelity), so that a run can be caught
// in the middle.
const std::string kSlow = R"({
  "version": 1,
  "name": "faults",
  "model": {"preset": "mlp-small", "batch_per_gpu": 16},
  "cluster": {"nodes": 2, "gpu": "v100", "nic": {"bandwidth": "10Gbps"}},
  "run": {"iterations": 2, "warmup_iterations": 0}
})";
const std::string kNodes = "256,512,768,1024";

// The processes whose parent is `pid` (from /proc/PID/stat's fourth field).
std::set<pid_t> children_of(pid_t pid) {
  std::set<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int parent = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &parent) == 2 && parent == pid)
      out.insert(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return stat && close != std::string::npos && text.size() > close + 2 && text[close + 2] != 'Z';
}

// dtsim started in the background; its pid, then its exit status once waited for.
struct Background {
  pid_t pid = -1;
  int wait() const {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

Background start_dtsim(const std::vector<std::string>& args, const fs::path& err) {
  std::vector<std::string> argv_text{DTSIM_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return {pid};
}

// Waits until `pid` has a child (a simulation started), at most 20 s.
std::set<pid_t> wait_for_children(pid_t pid) {
  for (int i = 0; i < 400; ++i) {
    if (auto kids = children_of(pid); !kids.empty()) return kids;
    std::this_thread::sleep_for(50ms);
  }
  return {};
}

bool all_gone_within(const std::set<pid_t>& pids, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    bool any = false;
    for (auto p : pids)
      any = any || alive(p);
    if (!any) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(Faults, SigtermToTheParentStopsEveryChildAndSaysSo) {
  for (int signal : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(signal);
    TempDir dir;
    const auto scenario = dir.write("s.json", kSlow);
    const auto err = dir.path() / "err.txt";
    const auto run = start_dtsim({"sweep", scenario.string(), "--nodes", kNodes, "--jobs", "2"}, err);
    const auto kids = wait_for_children(run.pid);
    ASSERT_FALSE(kids.empty());
    ::kill(run.pid, signal);
    // The parent dies of the same signal, as a shell expects of a job it interrupted: status 128 + the signal.
    EXPECT_EQ(run.wait(), 128 + signal);
    EXPECT_TRUE(all_gone_within(kids, 2s));
    const auto text = read_file(err);
    EXPECT_NE(text.find(signal == SIGTERM ? "interrupted by SIGTERM" : "interrupted by SIGINT"), std::string::npos)
        << text;
    EXPECT_NE(text.find("--resume DIR"), std::string::npos) << text;
  }
}

// Work that will take hours is said early, terminal or not: a million trials of a spot run (about 1 ms each here, so
// hours in all), projected from the pace of the first ten seconds, then stopped.
TEST(Faults, HoursOfWorkAreAnnouncedAtTheStart) {
  TempDir dir;
  const auto err = dir.path() / "err.txt";
  const auto run = start_dtsim({"train", std::string(DTSIM_SOURCE_DIR) + "/scenarios/resnet50-p3.2xlarge-spot.json",
                                "--trials", "1000000", "--jobs", "1"},
                               err);
  std::string text;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (text.find("warning: train: trials run:") == std::string::npos && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(200ms);
    text = read_file(err);
  }
  ::kill(run.pid, SIGINT);
  run.wait();
  EXPECT_NE(text.find("/1000000 done in"), std::string::npos) << text;
  EXPECT_NE(text.find("more at this pace"), std::string::npos) << text;
  // stderr is a file here, not a terminal: a progress line comes every five seconds, and the first before the warning
  // however slowly the trials come (the update that warns writes its line first).
  const auto line = text.find("train: trials run: ");
  ASSERT_NE(line, std::string::npos) << text;
  EXPECT_LT(line, text.find("warning: train:")) << text;
}

TEST(Faults, ChildrenDieWithAParentKilledOutright) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kSlow);
  const auto run = start_dtsim({"sweep", scenario.string(), "--nodes", kNodes, "--jobs", "2"}, dir.path() / "err");
  const auto kids = wait_for_children(run.pid);
  ASSERT_FALSE(kids.empty());
  ::kill(run.pid, SIGKILL); // no handler runs: only the kernel's PR_SET_PDEATHSIG can end the children
  EXPECT_EQ(run.wait(), 128 + SIGKILL);
  EXPECT_TRUE(all_gone_within(kids, 2s));
}

// Interrupted after its first point, then resumed: the same bytes on stdout and in the CSV as one uninterrupted run;
// a third run reads every point back and simulates none.
TEST(Faults, AResumedSweepEqualsAnUninterruptedOne) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kSlow);
  const auto keep = dir.path() / "kept";
  const auto whole = run_dtsim("sweep '" + scenario.string() + "' --nodes " + kNodes + " --csv '" +
                                   (dir.path() / "whole.csv").string() + "'",
                               dir);
  ASSERT_EQ(whole.status, 0) << whole.err;

  const auto first =
      start_dtsim({"sweep", scenario.string(), "--nodes", kNodes, "--jobs", "1", "--resume", keep.string()},
                  dir.path() / "first.err");
  // Stopped once a point is kept and before they all are.
  bool some_kept = false;
  for (int i = 0; i < 600 && !some_kept; ++i) {
    std::this_thread::sleep_for(50ms);
    some_kept = fs::exists(keep) && std::distance(fs::directory_iterator(keep), fs::directory_iterator{}) >= 1;
  }
  ASSERT_TRUE(some_kept);
  ::kill(first.pid, SIGTERM);
  EXPECT_EQ(first.wait(), 128 + SIGTERM);
  const auto kept = std::distance(fs::directory_iterator(keep), fs::directory_iterator{});
  EXPECT_GE(kept, 1);
  EXPECT_LT(kept, 4);
  EXPECT_NE(read_file(dir.path() / "first.err").find("kept in"), std::string::npos);

  const auto resumed = run_dtsim("sweep '" + scenario.string() + "' --nodes " + kNodes + " --resume '" + keep.string() +
                                     "' --csv '" + (dir.path() / "resumed.csv").string() + "'",
                                 dir);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(read_file(dir.path() / "resumed.csv"), read_file(dir.path() / "whole.csv"));
  // stdout ends with "Wrote PATH": the paths differ, everything before them must not.
  const auto body = [](const std::string& out) { return out.substr(0, out.rfind("Wrote ")); };
  EXPECT_EQ(body(resumed.out), body(whole.out));
  EXPECT_EQ(std::distance(fs::directory_iterator(keep), fs::directory_iterator{}), 4);

  // Everything kept: nothing runs (no child process at all), the same table again.
  const auto again =
      run_dtsim("sweep '" + scenario.string() + "' --nodes " + kNodes + " --resume '" + keep.string() + "'", dir);
  EXPECT_EQ(again.status, 0);
  EXPECT_EQ(body(again.out), body(whole.out));
}

// A two-point sweep of kSlow run once with --resume: its command, what it printed and the two points it kept.
struct KeptSweep {
  explicit KeptSweep(const TempDir& dir)
      : keep(dir.path() / "kept"),
        base("sweep '" + dir.write("s.json", kSlow).string() + "' --nodes 2,4 --resume '" + keep.string() + "'"),
        first(run_dtsim(base, dir)) {
    if (fs::exists(keep))
      for (const auto& e : fs::directory_iterator(keep))
        files.push_back(e.path());
  }
  // The first run succeeded and kept its two points.
  ::testing::AssertionResult ran() const {
    if (first.status != 0) return ::testing::AssertionFailure() << "the first run failed: " << first.err;
    if (files.size() != 2) return ::testing::AssertionFailure() << files.size() << " points kept, not 2";
    return ::testing::AssertionSuccess();
  }
  fs::path keep;
  std::string base;
  Invocation first;
  std::vector<fs::path> files;
};

// A kept point that is not what dtsim wrote (truncated by a crash mid-write of another tool, edited) is said and
// simulated again; a changed scenario does not reuse the old points.
TEST(Faults, ResumeIgnoresDamagedAndStalePoints) {
  TempDir dir;
  const KeptSweep sweep(dir);
  ASSERT_TRUE(sweep.ran());
  const auto& [keep, base, first, files] = sweep;
  std::ofstream(files[0], std::ios::trunc) << "{\"format\": \"dtsim-resume-1\", \"ok\": tr";
  // A well-formed file whose result is not: said in words, not as the JSON library's exception.
  auto kept = nlohmann::json::parse(read_file(files[1]));
  kept["output"] = "R{\"iteration\": tr";
  std::ofstream(files[1], std::ios::trunc) << kept.dump();
  const auto second = run_dtsim(base, dir);
  EXPECT_EQ(second.status, 0);
  EXPECT_NE(second.err.find("--resume: ignoring"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("its result is not valid JSON"), std::string::npos) << second.err;
  EXPECT_EQ(second.err.find("json.exception"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("simulated again"), std::string::npos) << second.err;
  EXPECT_EQ(second.out, first.out);
  // Another scenario (the NIC changed): new keys, the old files stay and are not read.
  const auto third = run_dtsim(base + " --set cluster.nic.bandwidth=25Gbps", dir);
  EXPECT_EQ(third.status, 0);
  EXPECT_EQ(third.err.find("--resume: ignoring"), std::string::npos) << third.err;
  EXPECT_NE(third.out, first.out);
  EXPECT_EQ(std::distance(fs::directory_iterator(keep), fs::directory_iterator{}), 4);
}

// Kept points are inputs like any other: one whose iteration no simulation gives (-1e300 s, which would win every
// ranking) and one of 100 MiB (sparse: no disk spent) are said and simulated again, the second without being read.
TEST(Faults, ResumeRefusesPlantedPoints) {
  TempDir dir;
  const KeptSweep sweep(dir);
  ASSERT_TRUE(sweep.ran());
  const auto& [keep, base, first, files] = sweep;
  auto kept = nlohmann::json::parse(read_file(files[0]));
  auto result = nlohmann::json::parse(kept["output"].get<std::string>().substr(1));
  result["iteration_seconds"]["mean"] = -1e300;
  kept["output"] = "R" + result.dump();
  std::ofstream(files[0], std::ios::trunc) << kept.dump();
  fs::resize_file(files[1], std::uintmax_t{100} << 20);
  const auto second = run_dtsim(base, dir);
  EXPECT_EQ(second.status, 0) << second.err;
  EXPECT_NE(second.err.find("its figures are not physical"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("the kept point is larger than 64 MiB"), std::string::npos) << second.err;
  EXPECT_EQ(second.out, first.out);
}

// compare and search keep and read back their points as a sweep does: a second run with the same store simulates
// nothing and prints the same bytes.
TEST(Faults, CompareAndSearchResumeToTheSameBytes) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kSlow);
  for (const std::string& command : {"compare '" + scenario.string() + "' --strategies allreduce,ps-sync",
                                     "search '" + scenario.string() + "' --nodes 2,4"}) {
    SCOPED_TRACE(command);
    const auto keep = dir.path() / ("kept-" + command.substr(0, 6));
    const auto first = run_dtsim(command + " --resume '" + keep.string() + "'", dir);
    ASSERT_EQ(first.status, 0) << first.err;
    const auto kept = std::distance(fs::directory_iterator(keep), fs::directory_iterator{});
    EXPECT_GE(kept, 2);
    const auto second = run_dtsim(command + " --resume '" + keep.string() + "'", dir);
    EXPECT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(second.out, first.out);
    EXPECT_EQ(std::distance(fs::directory_iterator(keep), fs::directory_iterator{}), kept);
  }
}

// Under an address-space limit (ulimit -v, as batch schedulers set) each actor's stack reserves its size whether used
// or not: 128 ranks' streams at SimGrid's default 8 MiB each reserve 7 GiB, and the run aborted (SIGABRT) under 1.5
// GiB. Stacks are sized to share half the limit, and the run completes.
TEST(Faults, AnAddressSpaceLimitIsRespectedNotAborted) {
  TempDir dir;
  const auto scenario = fs::path(DTSIM_SOURCE_DIR) / "scenarios" / "resnet50-p3.16xlarge-x4.json";
  const auto out = dir.path() / "out.txt", err = dir.path() / "err.txt";
  const std::string command = "bash -c \"ulimit -v 1572864 && '" + std::string(DTSIM_BINARY) + "' run '" +
                              scenario.string() + "' --set cluster.nodes=16\" > '" + out.string() + "' 2> '" +
                              err.string() + "' < /dev/null";
  const int raw = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 0) << read_file(err);
  EXPECT_NE(read_file(out).find("Simulated"), std::string::npos) << read_file(err);
}

} // namespace
} // namespace dtsim::testing
