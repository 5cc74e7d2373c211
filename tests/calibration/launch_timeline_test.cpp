// The host issuing kernels ahead of the GPU (calibration/launch_timeline.hpp), by hand.
#include "calibration/launch_timeline.hpp"

#include <gtest/gtest.h>

namespace dtsim::calibration {
namespace {

TEST(LaunchTimeline, LongKernelsHideTheHost) {
  // The host takes 5 us per kernel, the GPU 20 us: after the first kernel's 5 us wait the host is always ahead.
  LaunchTimeline t;
  EXPECT_DOUBLE_EQ(t.run(5e-6, 20e-6), 25e-6); // the GPU waits for the first launch
  for (int i = 0; i < 10; ++i)
    EXPECT_DOUBLE_EQ(t.run(5e-6, 20e-6), 20e-6);
}

TEST(LaunchTimeline, TinyKernelsRunAtTheHostsPace) {
  // 1 us kernels issued every 6 us: the GPU finishes each before the next is issued, so n kernels take n x 6 us plus
  // the last kernel's 1 us.
  LaunchTimeline t;
  double total = 0;
  for (int i = 0; i < 100; ++i)
    total += t.run(6e-6, 1e-6);
  EXPECT_NEAR(total, 100 * 6e-6 + 1e-6, 1e-15);
}

TEST(LaunchTimeline, ALeadBuiltOnALongKernelCoversShortOnes) {
  // The host issues a kernel every 5 us. A 100 us kernel (issued at 5 us, done at 105 us) lets the host issue kernels
  // 2 to 20 (at 10 to 100 us) while it runs: those 19 kernels of 1 us run back to back, the GPU done at 124 us.
  LaunchTimeline t;
  double total = t.run(5e-6, 100e-6);
  for (int k = 2; k <= 20; ++k)
    total += t.run(5e-6, 1e-6);
  EXPECT_NEAR(total, 124e-6, 1e-15);
  // The host, issuing kernel k at 5k us, keeps ahead of the GPU (done with kernel k at 104 + k us) up to k = 25.
  // Kernel 26 is issued at 130 us, 1 us after the GPU went idle; from then on the GPU runs at the host's pace.
  for (int k = 21; k <= 25; ++k)
    EXPECT_NEAR(t.run(5e-6, 1e-6), 1e-6, 1e-15) << k;
  EXPECT_NEAR(t.run(5e-6, 1e-6), 2e-6, 1e-15);
  EXPECT_NEAR(t.run(5e-6, 1e-6), 5e-6, 1e-15);
}

TEST(LaunchTimeline, SynchronizingStartsBothTogether) {
  LaunchTimeline t;
  t.run(1e-3, 1e-6);
  t.synchronize();
  EXPECT_DOUBLE_EQ(t.run(2e-6, 3e-6), 5e-6);
}

} // namespace
} // namespace dtsim::calibration
