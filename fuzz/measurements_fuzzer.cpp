// The measurement-file reader (docs/measurement-format.md) on arbitrary text: it either refuses the text with a
// CalibrationError or gives measurements that keep the rules the format states, which `dtsim calibrate` relies on
// when it divides by a median or counts runs.
#include "calibration/measurements.hpp"
#include "fuzz/harness.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using dtsim::calibration::TimingStats;
using dtsim::fuzz::finding;

void check(const TimingStats& s, const char* kind) {
  if (s.runs < 1) finding(std::string(kind) + ": accepted stats with runs " + std::to_string(s.runs) + " < 1");
  if (!(s.median > 0) || !std::isfinite(s.median))
    finding(std::string(kind) + ": accepted stats with median " + std::to_string(s.median) + ", not positive");
}

template <class Measurement> void check_all(const std::vector<Measurement>& list, const char* kind) {
  for (const auto& m : list)
    check(m.stats, kind);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::calibration::MeasurementFile file;
  if (!dtsim::fuzz::reads_or_refuses<dtsim::calibration::CalibrationError>(
          "parse_measurements", [&] { file = dtsim::calibration::parse_measurements(text, "fuzz.json"); }))
    return 0;
  if (file.version != dtsim::calibration::kMeasurementsVersion)
    finding("accepted version " + std::to_string(file.version));
  if (file.device.name.empty()) finding("accepted a file without device.name");
  if (file.device.sms < 1) finding("accepted device.sms " + std::to_string(file.device.sms));
  check_all(file.gemms, "gemm");
  check_all(file.memory, "memory");
  check_all(file.kernels, "kernel");
  check_all(file.attention, "attention");
  check_all(file.copies, "copy");
  check_all(file.collectives, "collective");
  for (const auto& launch : file.launches)
    check(launch, "launch");
  return 0;
}
