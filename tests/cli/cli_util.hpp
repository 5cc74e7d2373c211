#pragma once
// Runs the dtsim binary as a user would and captures what it printed.
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

} // namespace dtsim::testing
