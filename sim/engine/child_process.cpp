#include "sim/engine/child_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim::engine {
namespace {

constexpr char kOk = 'K';
constexpr char kFailed = 'F';
constexpr int kForwarded[] = {SIGINT, SIGTERM};

// The self-pipe: the signal handler writes the signal's number, the poll loop reads it. Created once, kept.
int signal_pipe[2] = {-1, -1};
std::string interrupt_note;
bool interrupt_throws = false; // set_interrupt_throws

extern "C" void on_signal(int signal) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] const auto n = ::write(signal_pipe[1], &byte, 1); // full pipe: one byte is already waiting
  errno = saved;
}

void make_signal_pipe() {
  if (signal_pipe[0] >= 0) return;
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
}

// SIGINT and SIGTERM go to the self-pipe while children run; the previous dispositions come back after. A signal the
// process was started ignoring (a background job of a shell script ignores SIGINT) stays ignored.
class SignalGuard {
public:
  SignalGuard() {
    make_signal_pipe();
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) {
      struct sigaction action {};
      action.sa_handler = on_signal;
      ::sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      ::sigaction(kForwarded[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler == SIG_IGN) continue;
      ::sigaction(kForwarded[i], &action, nullptr);
      installed_[i] = true;
    }
  }
  ~SignalGuard() {
    for (std::size_t i = 0; i < std::size(kForwarded); ++i)
      if (installed_[i]) ::sigaction(kForwarded[i], &previous_[i], nullptr);
    // A signal that came after the last child finished is not lost: it gets its previous disposition now.
    unsigned char signal = 0;
    if (::read(signal_pipe[0], &signal, 1) == 1) ::raise(signal);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

private:
  struct sigaction previous_[std::size(kForwarded)]{};
  bool installed_[std::size(kForwarded)] = {};
};

void write_all(int fd, const std::string& bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; // the parent went away; nothing left to tell
    written += static_cast<std::size_t>(n);
  }
}

// The child's side of the fork: it must not outlive the parent, and a signal meant for the parent is not its own.
void become_child(pid_t parent, const sigset_t& mask) {
  // Killed with the parent, whatever kills it (SIGKILL, the OOM killer). The parent may have died before the
  // request: then the child was already adopted, and it goes at once.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(1);
  // A process group of its own: a terminal's ^C reaches the parent only, which stops the children itself (SimGrid
  // takes SIGINT as a request to list its actors, not to stop).
  ::setpgid(0, 0);
  for (int signal : kForwarded) {
    struct sigaction inherited {};
    ::sigaction(signal, nullptr, &inherited);
    if (inherited.sa_handler == on_signal) ::signal(signal, SIG_DFL);
  }
  ::close(signal_pipe[0]);
  ::close(signal_pipe[1]);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
}

[[noreturn]] void run_child(const ChildJob& job, int fd) {
  std::string frame;
  try {
    frame = kOk + job();
  } catch (const std::exception& e) {
    frame = kFailed + std::string(e.what());
  } catch (...) {
    frame = std::string(1, kFailed) + "unknown error";
  }
  write_all(fd, frame);
  ::close(fd);
  // Skip the parent's atexit handlers and static destructors (test frameworks, SimGrid's own).
  ::_exit(0);
}

struct Running {
  std::size_t index = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;
  double killed_at_bytes = 0; // > 0: the parent killed it for its memory
  std::string limit_text;
};

// A child's resident memory in bytes (/proc/PID/statm's second field is resident pages); 0 if it cannot be read.
double resident_bytes(pid_t pid) {
  std::FILE* f = std::fopen(fmt::format("/proc/{}/statm", pid).c_str(), "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  const bool read = std::fscanf(f, "%lu %lu", &size, &resident) == 2;
  std::fclose(f);
  return read ? static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGE_SIZE)) : 0;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "the simulation process was " + describe_signal(WTERMSIG(status));
  return fmt::format("the simulation process exited with status {} before reporting a result", WEXITSTATUS(status));
}

ChildOutcome finish(Running& child) {
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (child.killed_at_bytes > 0)
    return {false,
            fmt::format("stopped when its resident memory reached {:.1f} GiB, over the limit of {}: the estimate "
                        "before it ran was lower; give more with --max-memory, or simulate less (fewer nodes or "
                        "iterations, or run.fidelity \"coarse\")",
                        child.killed_at_bytes / double(1 << 30), child.limit_text),
            false, true};
  if (child.buffer.empty()) return {false, describe_exit(status), true, false};
  return {child.buffer.front() == kOk, child.buffer.substr(1), false, false};
}

Running start(const ChildJob& job, std::size_t index) {
  // Whatever the parent has buffered must not be written a second time by the child.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  // SIGINT and SIGTERM wait until the child is set up: a child must never run the parent's handler.
  sigset_t blocked, previous;
  ::sigemptyset(&blocked);
  for (int signal : kForwarded)
    ::sigaddset(&blocked, signal);
  ::sigprocmask(SIG_BLOCK, &blocked, &previous);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    become_child(parent, previous);
    run_child(job, fds[1]);
  }
  const int fork_error = errno;
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("cannot fork a simulation process: {}", std::strerror(fork_error)));
  }
  ::close(fds[1]);
  Running child;
  child.index = index;
  child.pid = pid;
  child.fd = fds[0];
  return child;
}

// Stops and reaps every running child, says so, and dies of `signal` as if it had not been caught (or throws
// Interrupted, where the process asked to go on).
[[noreturn]] void interrupted(std::vector<Running>& running, int signal, std::size_t done, std::size_t total) {
  // SIGTERM, whatever the parent got: SIGINT would only make a child's SimGrid list its actors.
  for (const auto& child : running)
    ::kill(child.pid, SIGTERM);
  for (auto& child : running) {
    int status = 0;
    // A child that outlives SIGTERM for 2 s (busy in a handler of its own) is killed outright.
    for (int tries = 0; tries < 200 && ::waitpid(child.pid, &status, WNOHANG) == 0; ++tries)
      ::usleep(10'000);
    if (::waitpid(child.pid, &status, WNOHANG) == 0) {
      ::kill(child.pid, SIGKILL);
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    ::close(child.fd);
  }
  if (interrupt_throws)
    throw Interrupted(fmt::format("interrupted by {}: {} of {} simulation(s) finished, {} stopped", signal_name(signal),
                                  done, total, running.size()),
                      signal);
  std::cout.flush();
  const std::string erase = ::isatty(STDERR_FILENO) ? "\r\033[K" : "";
  std::cerr << fmt::format("{}dtsim: interrupted by {}: {} of {} simulation(s) finished, {} stopped.{}{}\n", erase,
                           signal_name(signal), done, total, running.size(), interrupt_note.empty() ? "" : " ",
                           interrupt_note)
            << std::flush;
  std::fflush(nullptr);
  ::signal(signal, SIG_DFL);
  sigset_t unblock;
  ::sigemptyset(&unblock);
  ::sigaddset(&unblock, signal);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  ::raise(signal);
  ::_exit(128 + signal); // not reached: the default action of SIGINT and SIGTERM ends the process
}

} // namespace

void set_interrupt_note(std::string note) {
  interrupt_note = std::move(note);
}

void set_interrupt_throws(bool throws) {
  interrupt_throws = throws;
}

std::string signal_name(int signal) {
  if (const char* abbrev = ::sigabbrev_np(signal)) return std::string("SIG") + abbrev;
  return fmt::format("signal {}", signal);
}

std::string describe_signal(int signal) {
  // SIGKILL is what the kernel's OOM killer sends; otherwise someone sent it on purpose.
  if (signal == SIGKILL) return "killed (SIGKILL: out of memory or killed by an operator)";
  const char* text = ::strsignal(signal);
  return fmt::format("killed ({}: {})", signal_name(signal), text ? text : "unknown signal");
}

std::vector<ChildOutcome> run_in_children(const std::vector<ChildJob>& jobs, int parallel,
                                          const ChildProgress& progress, const ChildFinished& finished,
                                          const ChildLimits& limits) {
  std::vector<ChildOutcome> outcomes(jobs.size());
  std::vector<Running> running;
  std::size_t next = 0;
  std::size_t done = 0;
  const std::size_t limit = static_cast<std::size_t>(std::max(1, parallel));
  char chunk[1 << 16];
  const SignalGuard guard;

  while (done < jobs.size()) {
    while (running.size() < limit && next < jobs.size()) {
      running.push_back(start(jobs[next], next));
      ++next;
    }
    // The self-pipe first, then one descriptor per running child.
    std::vector<pollfd> fds{{signal_pipe[0], POLLIN, 0}};
    for (const auto& r : running)
      fds.push_back({r.fd, POLLIN, 0});
    // With a memory limit the parent wakes every 100 ms to look at each child's resident memory.
    if (::poll(fds.data(), fds.size(), limits.memory > 0 ? 100 : -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("poll failed: {}", std::strerror(errno)));
    }
    if (fds[0].revents & POLLIN) {
      unsigned char signal = 0;
      if (::read(signal_pipe[0], &signal, 1) == 1) interrupted(running, signal, done, jobs.size());
    }
    if (limits.memory > 0)
      for (auto& child : running)
        if (const double bytes = resident_bytes(child.pid); child.killed_at_bytes == 0 && bytes > limits.memory) {
          child.killed_at_bytes = bytes;
          child.limit_text = limits.memory_text;
          ::kill(child.pid, SIGKILL); // its pipe closes: the loop below finishes it
        }
    for (std::size_t i = running.size(); i-- > 0;) {
      if (!(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(running[i].fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        running[i].buffer.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      outcomes[running[i].index] = finish(running[i]);
      ++done;
      if (finished) finished(running[i].index, outcomes[running[i].index]);
      if (progress) progress(done, jobs.size(), running[i].index);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return outcomes;
}

} // namespace dtsim::engine
