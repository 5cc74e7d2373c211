#pragma once
// Bad calibration input (a profile, a measurement file, nccl-tests output): names the file, where in it (the JSON
// pointer of the offending field, or "line N" in a text file) and what was expected. Like scenario::ScenarioError,
// its what() reads "file: where: message".
#include "io/error.hpp"
#include <stdexcept>
#include <string>

namespace dtsim::calibration {

class CalibrationError : public InputError {
public:
  CalibrationError(std::string file, std::string where, std::string message)
      : InputError(compose(file, where, message)), file_(std::move(file)), where_(std::move(where)),
        detail_(std::move(message)) {}
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return where_; } // JSON pointer ("/" for the document), or "line N"
  const std::string& detail() const { return detail_; }

private:
  static std::string compose(const std::string& file, const std::string& where, const std::string& message) {
    std::string out = file.empty() ? std::string("<input>") : file;
    out += ": ";
    if (!where.empty()) out += where + ": ";
    return out + message;
  }
  std::string file_, where_, detail_;
};

// The whole of a text file (a profile, a measurement file, nccl-tests output); `what` names it in the message when it
// cannot be read ("the measurement file").
std::string read_input_file(const std::string& path, const std::string& what);

} // namespace dtsim::calibration
