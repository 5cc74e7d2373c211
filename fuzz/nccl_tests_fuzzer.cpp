// The nccl-tests output parser on arbitrary text: it either refuses the text with a CalibrationError or gives runs
// with at least one row, and fitting each run (what `dtsim calibrate` does next) either gives a finite cost or is
// refused with a CalibrationError.
#include "calibration/nccl_tests.hpp"
#include "fuzz/harness.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dtsim::calibration::CalibrationError;
  using dtsim::fuzz::finding;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<dtsim::calibration::NcclTestsRun> runs;
  if (!dtsim::fuzz::reads_or_refuses<CalibrationError>(
          "parse_nccl_tests", [&] { runs = dtsim::calibration::parse_nccl_tests(text, "fuzz.txt"); }))
    return 0;
  if (runs.empty()) finding("parse_nccl_tests accepted output with no run");
  for (const auto& run : runs) {
    if (run.rows.empty()) finding("parse_nccl_tests accepted a run with no data row");
    // With and without a link bandwidth: the protocol efficiency divides by it.
    for (const std::optional<double> link : {std::optional<double>{}, std::optional<double>{100e9}}) {
      dtsim::calibration::NcclTestsFit fit;
      if (!dtsim::fuzz::reads_or_refuses<CalibrationError>(
              "fit_nccl_tests", [&] { fit = dtsim::calibration::fit_nccl_tests(run, link, "fuzz.txt"); }))
        continue;
      if (!std::isfinite(fit.cost.alpha) || !std::isfinite(fit.cost.beta) || !std::isfinite(fit.busbw_factor) ||
          !std::isfinite(fit.plateau_busbw))
        finding("fit_nccl_tests gave a cost that is not finite: alpha " + std::to_string(fit.cost.alpha) + ", beta " +
                std::to_string(fit.cost.beta) + ", busbw factor " + std::to_string(fit.busbw_factor) + ", plateau " +
                std::to_string(fit.plateau_busbw));
    }
  }
  return 0;
}
