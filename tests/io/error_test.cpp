// Every error dtsim reports carries the exit status the command line gives it (io/error.hpp): the readers' and the
// planner's errors are input the user must change (2), a replay that cannot finish is a failed run (1).
#include "io/error.hpp"
#include "io/json_text.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

TEST(Errors, CarryTheirExitStatus) {
  EXPECT_EQ(static_cast<int>(InputError("x").exit_status()), 2);
  EXPECT_EQ(static_cast<int>(RunError("x").exit_status()), 1);
  // A reader's error is input, and caught as dtsim::Error with its message intact.
  try {
    (void)io::parse_json("{\"a\": 1,}");
    FAIL() << "a trailing comma parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), ExitStatus::bad_input);
    EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace dtsim
