#pragma once
// Runs the dtsim binary as a user would and captures what it printed.
#include "tests/shipped_scenarios.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim::testing {

struct Invocation {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory per test, removed at the end.
class TempDir {
public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("dtsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

// `args` is appended to the binary's path as it is (quote it yourself).
inline Invocation run_dtsim(const std::string& args, const TempDir& dir) {
  const auto out = dir.path() / "stdout.txt";
  const auto err = dir.path() / "stderr.txt";
  const std::string command =
      std::string(DTSIM_BINARY) + " " + args + " > '" + out.string() + "' 2> '" + err.string() + "' < /dev/null";
  const int raw = std::system(command.c_str());
  Invocation inv;
  inv.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  inv.out = read_file(out);
  inv.err = read_file(err);
  return inv;
}

// The header and the first row of `dtsim collective --csv`.
struct CollectiveRow {
  std::string header, text;
  double size = 0, time = 0, algbw = 0, busbw = 0;
  std::string algorithm, protocol;
  int channels = 0;
  bool parsed = false; // all seven leading fields read
};
inline CollectiveRow collective_row(const std::filesystem::path& csv) {
  CollectiveRow r;
  std::istringstream lines(read_file(csv));
  std::getline(lines, r.header);
  std::getline(lines, r.text);
  char algorithm[32] = {}, protocol[16] = {};
  r.parsed = std::sscanf(r.text.c_str(), "%lf,%31[^,],%15[^,],%d,%lf,%lf,%lf", &r.size, algorithm, protocol,
                         &r.channels, &r.time, &r.algbw, &r.busbw) == 7;
  r.algorithm = algorithm;
  r.protocol = protocol;
  return r;
}

} // namespace dtsim::testing
