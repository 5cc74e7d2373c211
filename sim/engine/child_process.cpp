#include "sim/engine/child_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim::engine {
namespace {

constexpr char kOk = 'K';
constexpr char kFailed = 'F';

void write_all(int fd, const std::string& bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; // the parent went away; nothing left to tell
    written += static_cast<std::size_t>(n);
  }
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
};

std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("simulation process was killed by signal {} ({})", WTERMSIG(status),
                       ::strsignal(WTERMSIG(status)));
  return fmt::format("simulation process exited with status {} before reporting a result", WEXITSTATUS(status));
}

ChildOutcome finish(Running& child) {
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (child.buffer.empty()) return {false, describe_exit(status)};
  return {child.buffer.front() == kOk, child.buffer.substr(1)};
}

Running start(const ChildJob& job, std::size_t index) {
  // Whatever the parent has buffered must not be written a second time by the child.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("cannot fork a simulation process: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    run_child(job, fds[1]);
  }
  ::close(fds[1]);
  return Running{index, pid, fds[0], {}};
}

} // namespace

std::vector<ChildOutcome> run_in_children(const std::vector<ChildJob>& jobs, int parallel,
                                          const ChildProgress& progress) {
  std::vector<ChildOutcome> outcomes(jobs.size());
  std::vector<Running> running;
  std::size_t next = 0;
  std::size_t done = 0;
  const std::size_t limit = static_cast<std::size_t>(std::max(1, parallel));
  char chunk[1 << 16];

  while (done < jobs.size()) {
    while (running.size() < limit && next < jobs.size()) {
      running.push_back(start(jobs[next], next));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const auto& r : running)
      fds.push_back({r.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("poll failed: {}", std::strerror(errno)));
    }
    for (std::size_t i = running.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(running[i].fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        running[i].buffer.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      outcomes[running[i].index] = finish(running[i]);
      ++done;
      if (progress) progress(done, jobs.size(), running[i].index);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return outcomes;
}

} // namespace dtsim::engine
