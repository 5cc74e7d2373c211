#pragma once
// Running work in forked child processes. SimGrid keeps one engine per process, so every simulation
// runs in a child of its own; independent simulations (sweep points) run side by side this way.
#include <functional>
#include <string>
#include <vector>

namespace dtsim::engine {

// What a child produced: its output bytes, or the reason it failed.
struct ChildOutcome {
  bool ok = false;
  std::string output; // the job's return value when ok; the error text otherwise
};

using ChildJob = std::function<std::string()>; // runs in the child; may throw (the message is returned)
using ChildProgress = std::function<void(std::size_t done, std::size_t total, std::size_t finished_index)>;

// Runs every job in its own child process, at most `parallel` at a time, and returns the outcomes in
// job order. The parent stays single-threaded (poll on the children's pipes).
std::vector<ChildOutcome> run_in_children(const std::vector<ChildJob>& jobs, int parallel,
                                          const ChildProgress& progress = {});

} // namespace dtsim::engine
