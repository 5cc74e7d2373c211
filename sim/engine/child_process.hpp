#pragma once
// Running work in forked child processes. SimGrid keeps one engine per process, so every simulation
// runs in a child of its own; independent simulations (sweep points) run side by side this way.
#include "io/error.hpp"
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::engine {

// What a child produced: its output bytes, or the reason it failed.
struct ChildOutcome {
  bool ok = false;
  std::string output; // the job's return value when ok; the error text otherwise
  // The child died without reporting (killed by a signal, the OOM killer, an exit of its own): the outcome says
  // nothing about the job itself, and running it again may succeed.
  bool abnormal = false;
  // Stopped by the parent for going past its memory limit (ChildLimits): the input is too large for the limit.
  bool over_memory = false;
};

// What each child may take: its resident memory in bytes (0: no limit), watched every 100 ms; a child past it is
// killed and its outcome says so. `memory_text` describes the limit in that message.
struct ChildLimits {
  double memory = 0;
  std::string memory_text;
};

using ChildJob = std::function<std::string()>; // runs in the child; may throw (the message is returned)
using ChildProgress = std::function<void(std::size_t done, std::size_t total, std::size_t finished_index)>;
// Told each outcome as its child finishes, before the progress callback (to keep it before anything else happens).
using ChildFinished = std::function<void(std::size_t finished_index, const ChildOutcome& outcome)>;

// Runs every job in its own child process, at most `parallel` at a time, and returns the outcomes in
// job order. The parent stays single-threaded (poll on the children's pipes).
//
// Children die with the parent: each asks the kernel for SIGKILL when its parent goes (PR_SET_PDEATHSIG), so a
// parent killed outright leaves none running. While children run, SIGINT and SIGTERM sent to the parent alone (as a
// batch system or a terminal's ^C sends them) are forwarded to every live child; the parent reaps them, prints one
// line on stderr ("dtsim: interrupted by SIGTERM ..." and the interrupt_note, if set) and dies of the same signal, so
// its status is the conventional 128 + the signal's number (or, with set_interrupt_throws, throws Interrupted).
std::vector<ChildOutcome> run_in_children(const std::vector<ChildJob>& jobs, int parallel,
                                          const ChildProgress& progress = {}, const ChildFinished& finished = {},
                                          const ChildLimits& limits = {});

// A sentence the interruption line ends with, such as how to finish the work later; empty: none. Set by the command.
void set_interrupt_note(std::string note);

// run_in_children interrupted by a signal, in a process that asked to go on (set_interrupt_throws): its children are
// stopped and reaped, and the signal's previous disposition is back.
class Interrupted : public RunError {
public:
  Interrupted(const std::string& message, int signal) : RunError(message), signal_(signal) {}
  int signal() const { return signal_; }

private:
  int signal_;
};

// true: an interrupted run_in_children throws Interrupted instead of dying of the signal (a library in a process that
// must live on: the Python module turns it into KeyboardInterrupt). Default false: the command-line tool dies.
void set_interrupt_throws(bool throws);

// "SIGKILL", "SIGSEGV", ...; "signal N" for one without a name.
std::string signal_name(int signal);

// Why a child killed by `signal` died, in words: "killed (SIGKILL: out of memory or killed by an operator)".
std::string describe_signal(int signal);

} // namespace dtsim::engine
