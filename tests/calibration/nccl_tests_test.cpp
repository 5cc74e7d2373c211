// nccl-tests output (calibration/nccl_tests.hpp): parsed as all_reduce_perf prints it, and fitted back to the alpha
// and beta it was written from.
#include "calibration/nccl_tests.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace dtsim::calibration {
namespace {

// all_reduce_perf -b 8 -e 8G -f 2 -g 8 on one 8-GPU H100 node, in nccl-tests 2.13's format (README.md and
// doc/PERFORMANCE.md of github.com/NVIDIA/nccl-tests: out-of-place then in-place, time in us, bandwidths in GB/s,
// busbw = algbw x 2 (n-1) / n), written from a known cost:
//   alpha = 30 us, beta = 1 / 180 GB/s = 5.5556e-12 s/byte (time = alpha + size x beta)
// with the in-place times 0.2% slower, printed at nccl-tests' precision (%7.2f below 100 us, %7.1f below 10 ms,
// %7.0f above).
constexpr double kAlpha = 30e-6;
constexpr double kBeta = 1 / 180e9;
constexpr const char* kAllReduce = R"(# nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41871 on  h100-node device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41871 on  h100-node device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  41871 on  h100-node device  2 [0x3a] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  41871 on  h100-node device  3 [0x5d] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid  41871 on  h100-node device  4 [0x9a] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid  41871 on  h100-node device  5 [0xab] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid  41871 on  h100-node device  6 [0xba] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid  41871 on  h100-node device  7 [0xdb] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2     float     sum      -1    30.00    0.00    0.00       0    30.06    0.00    0.00       0
          16             4     float     sum      -1    30.00    0.00    0.00       0    30.06    0.00    0.00       0
          32             8     float     sum      -1    30.00    0.00    0.00       0    30.06    0.00    0.00       0
          64            16     float     sum      -1    30.00    0.00    0.00       0    30.06    0.00    0.00       0
         128            32     float     sum      -1    30.00    0.00    0.01       0    30.06    0.00    0.01       0
         256            64     float     sum      -1    30.00    0.01    0.01       0    30.06    0.01    0.01       0
         512           128     float     sum      -1    30.00    0.02    0.03       0    30.06    0.02    0.03       0
        1024           256     float     sum      -1    30.01    0.03    0.06       0    30.07    0.03    0.06       0
        2048           512     float     sum      -1    30.01    0.07    0.12       0    30.07    0.07    0.12       0
        4096          1024     float     sum      -1    30.02    0.14    0.24       0    30.08    0.14    0.24       0
        8192          2048     float     sum      -1    30.05    0.27    0.48       0    30.11    0.27    0.48       0
       16384          4096     float     sum      -1    30.09    0.54    0.95       0    30.15    0.54    0.95       0
       32768          8192     float     sum      -1    30.18    1.09    1.90       0    30.24    1.08    1.90       0
       65536         16384     float     sum      -1    30.36    2.16    3.78       0    30.42    2.15    3.77       0
      131072         32768     float     sum      -1    30.73    4.27    7.46       0    30.79    4.26    7.45       0
      262144         65536     float     sum      -1    31.46    8.33   14.58       0    31.52    8.32   14.55       0
      524288        131072     float     sum      -1    32.91   15.93   27.88       0    32.98   15.90   27.82       0
     1048576        262144     float     sum      -1    35.83   29.27   51.22       0    35.90   29.21   51.12       0
     2097152        524288     float     sum      -1    41.65   50.35   88.11       0    41.73   50.25   87.94       0
     4194304       1048576     float     sum      -1    53.30   78.69  137.71       0    53.41   78.53  137.43       0
     8388608       2097152     float     sum      -1    76.60  109.51  191.64       0    76.76  109.29  191.25       0
    16777216       4194304     float     sum      -1    123.2  136.17  238.30       0    123.5  135.90  237.82       0
    33554432       8388608     float     sum      -1    216.4  155.05  271.33       0    216.8  154.74  270.79       0
    67108864      16777216     float     sum      -1    402.8  166.59  291.54       0    403.6  166.26  290.96       0
   134217728      33554432     float     sum      -1    775.7  173.04  302.82       0    777.2  172.69  302.21       0
   268435456      67108864     float     sum      -1   1521.3  176.45  308.79       0   1524.4  176.10  308.17       0
   536870912     134217728     float     sum      -1   3012.6  178.21  311.86       0   3018.6  177.85  311.24       0
  1073741824     268435456     float     sum      -1   5995.2  179.10  313.42       0   6007.2  178.74  312.80       0
  2147483648     536870912     float     sum      -1    11960  179.55  314.21       0    11984  179.19  313.58       0
  4294967296    1073741824     float     sum      -1    23891  179.77  314.60       0    23939  179.42  313.98       0
  8589934592    2147483648     float     sum      -1    47752  179.89  314.80       0    47847  179.53  314.17       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 113.044 
#
# Collective test concluded: all_reduce_perf
#
)";

// all_gather_perf under MPI (4 processes of one GPU each: nGpus says 1, the Rank lines say 4), in the older layout
// without redop and root columns and with no "Collective test starting" line.
constexpr const char* kAllGatherMpi =
    R"(# nThread 1 nGpus 1 minBytes 1048576 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  12001 on     node-a device  0 [0x07] NVIDIA A100-SXM4-80GB
#   Rank  1 Pid  12002 on     node-a device  1 [0x0f] NVIDIA A100-SXM4-80GB
#   Rank  2 Pid  31001 on     node-b device  0 [0x07] NVIDIA A100-SXM4-80GB
#   Rank  3 Pid  31002 on     node-b device  1 [0x0f] NVIDIA A100-SXM4-80GB
#
#                                             out-of-place                       in-place
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
     1048576        65536     float    105.2    9.97    7.48  0e+00    104.9   10.00    7.50  0e+00
     2097152       131072     float    180.4   11.62    8.72  0e+00    180.1   11.64    8.73  0e+00
     4194304       262144     float    330.8   12.68    9.51  0e+00    330.5   12.69    9.52  0e+00
     8388608       524288     float    631.6   13.28    9.96  0e+00    631.2   13.29    9.97  0e+00
    16777216      1048576     float   1233.2   13.60   10.20  0e+00   1232.8   13.61   10.21  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 9.18
)";

std::string error_of(const std::string& text) {
  try {
    parse_nccl_tests(text, "out.txt");
  } catch (const CalibrationError& e) {
    return e.what();
  }
  return "";
}

TEST(NcclTests, ParsesAllReducePerf) {
  const auto runs = parse_nccl_tests(kAllReduce, "all_reduce.txt");
  ASSERT_EQ(runs.size(), 1u);
  const auto& r = runs[0];
  EXPECT_EQ(r.test, "all_reduce_perf");
  EXPECT_EQ(r.operation, "all_reduce");
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.gpus, 8);
  EXPECT_EQ(r.ranks, 8);
  EXPECT_EQ(r.device, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(r.rows.size(), 31u); // 8 B .. 8 GiB
  EXPECT_DOUBLE_EQ(r.rows[0].bytes, 8);
  EXPECT_DOUBLE_EQ(r.rows[0].count, 2);
  EXPECT_EQ(r.rows[0].type, "float");
  EXPECT_EQ(r.rows[0].redop, "sum");
  EXPECT_EQ(r.rows[0].root, -1);
  EXPECT_NEAR(r.rows[0].time, 30.00e-6, 1e-12);
  const auto& last = r.rows.back();
  EXPECT_DOUBLE_EQ(last.bytes, 8589934592.0);
  EXPECT_NEAR(last.time, 47752e-6, 1e-9);
  EXPECT_NEAR(last.algbw, 179.89e9, 1);
  EXPECT_NEAR(last.busbw, 314.80e9, 1);
  ASSERT_TRUE(last.in_place);
  EXPECT_NEAR(last.time_in_place, 47847e-6, 1e-9);
  EXPECT_NEAR(last.busbw_in_place, 314.17e9, 1);
  ASSERT_TRUE(r.average_busbw.has_value());
  EXPECT_NEAR(*r.average_busbw, 113.044e9, 1e6);
}

TEST(NcclTests, FitRecoversAlphaAndBetaAndTheProtocolEfficiency) {
  const auto runs = parse_nccl_tests(kAllReduce, "all_reduce.txt");
  const NcclTestsFit fit = fit_nccl_tests(runs[0], 450e9);
  EXPECT_NEAR(fit.cost.alpha, kAlpha, 0.02 * kAlpha);
  EXPECT_NEAR(fit.cost.beta, kBeta, 0.02 * kBeta);
  EXPECT_EQ(fit.cost.points, 62u); // out-of-place and in-place
  EXPECT_LT(fit.cost.max_error, 0.01);
  EXPECT_DOUBLE_EQ(fit.busbw_factor, 2.0 * 7 / 8);
  // Plateau: the 8 GiB rows' bus bandwidth, (314.80 + 314.17) / 2 GB/s; of a 450 GB/s link, 69.9%.
  EXPECT_DOUBLE_EQ(fit.plateau_bytes, 8589934592.0);
  EXPECT_NEAR(fit.plateau_busbw, 314.485e9, 1e6);
  ASSERT_TRUE(fit.protocol_efficiency.has_value());
  EXPECT_NEAR(*fit.protocol_efficiency, 314.485 / 450, 1e-6);
  // The bus bandwidth the fitted cost tends to: 2 (n-1)/n / beta = 1.75 x 180 GB/s = 315 GB/s.
  EXPECT_NEAR(fit.busbw_factor / fit.cost.beta, 315e9, 0.02 * 315e9);
  EXPECT_FALSE(fit_nccl_tests(runs[0], std::nullopt).protocol_efficiency.has_value());
}

TEST(NcclTests, RanksComeFromTheRankLinesAndColumnsFromTheHeader) {
  const auto runs = parse_nccl_tests(kAllGatherMpi, "all_gather.txt");
  ASSERT_EQ(runs.size(), 1u);
  const auto& r = runs[0];
  EXPECT_EQ(r.gpus, 1);
  EXPECT_EQ(r.ranks, 4); // four Rank lines
  EXPECT_EQ(r.test, "");
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].redop, ""); // no such column
  EXPECT_NEAR(r.rows[0].time, 105.2e-6, 1e-12);
  EXPECT_NEAR(r.rows[4].busbw_in_place, 10.21e9, 1);
  // Without the test's name the bus bandwidth factor is the output's own busbw / algbw: (4-1)/4.
  const NcclTestsFit fit = fit_nccl_tests(r, std::nullopt);
  EXPECT_NEAR(fit.busbw_factor, 0.75, 0.002);
  EXPECT_NEAR(fit.cost.bandwidth(), 13.9e9, 0.3e9);
}

TEST(NcclTests, SeveralRunsInOneFile) {
  const auto runs = parse_nccl_tests(std::string(kAllReduce) + "\n" + kAllGatherMpi, "both.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].ranks, 8);
  EXPECT_EQ(runs[1].ranks, 4);
  EXPECT_EQ(runs[1].rows.size(), 5u);
}

TEST(NcclTests, WrongResultsAndMalformedRowsAreRefused) {
  // A row whose in-place check found wrong values ("#wrong" of the newer layout).
  const std::string wrong = R"(# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.00    0.00    0.00       0    10.00    0.00    0.00       3
)";
  EXPECT_EQ(error_of(wrong).rfind("out.txt: line 4: #wrong is 3 (in-place)", 0), 0u) << error_of(wrong);
  const std::string oob =
      std::string(kAllGatherMpi).replace(std::string(kAllGatherMpi).find(": 0 OK"), 6, ": 2 FAILED");
  EXPECT_EQ(error_of(oob).rfind("out.txt: line 17: 2 values out of bounds", 0), 0u) << error_of(oob);
  // A row with a column missing.
  const std::string short_row =
      R"(#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    10.00    0.00    0.00       0    10.00    0.00
)";
  EXPECT_EQ(error_of(short_row), "out.txt: line 2: expected 13 columns, as the header at line 1 names them, got 11");
  EXPECT_EQ(
      error_of("           8             2     float     sum      -1    10.00    0.00    0.00       0\n"),
      "out.txt: line 1: a data row before the column header (\"#  size  count  type ... time  algbw  busbw ...\")");
  EXPECT_NE(error_of("# nThread 1 nGpus 8\nnothing here\n").find("no nccl-tests data rows found"), std::string::npos);
  EXPECT_THROW(load_nccl_tests("/nonexistent/out.txt"), CalibrationError);
}

} // namespace
} // namespace dtsim::calibration
