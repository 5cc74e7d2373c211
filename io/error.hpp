#pragma once
// The base of every error dtsim reports to a person, carrying the exit status the command line gives it: 2 for input
// the user must change (a file, a field, a layout that cannot run, a limit the run would pass), 1 for a run that
// failed. The CLI reads the status from the error instead of knowing every error type.
#include <stdexcept>
#include <string>

namespace dtsim {

enum class ExitStatus : int { failed = 1, bad_input = 2 };

class Error : public std::runtime_error {
public:
  Error(const std::string& message, ExitStatus status) : std::runtime_error(message), status_(status) {}
  ExitStatus exit_status() const { return status_; }

private:
  ExitStatus status_;
};

// Input the user must change: exit status 2.
class InputError : public Error {
public:
  explicit InputError(const std::string& message) : Error(message, ExitStatus::bad_input) {}
};

// A run that could not finish on good input: exit status 1.
class RunError : public Error {
public:
  explicit RunError(const std::string& message) : Error(message, ExitStatus::failed) {}
};

} // namespace dtsim
