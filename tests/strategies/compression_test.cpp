// Wire formats and compute costs of the gradient compressors, against figures worked out by hand.
#include "sim/strategies/compression.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtsim::strategies {
namespace {

using collectives::Operation;

CompressionSpec spec(CompressionKind kind) {
  CompressionSpec s;
  s.kind = kind;
  return s;
}

TEST(WireFormat, NoneIsDenseAllReduce) {
  const auto w = wire_format(spec(CompressionKind::none), 1e6, 4, 1000, 1000);
  EXPECT_DOUBLE_EQ(w.total(), 4e6);
  EXPECT_EQ(w.operation, Operation::all_reduce);
  EXPECT_DOUBLE_EQ(compression_ratio(w, 4e6), 1);
}

TEST(WireFormat, Fp16HalvesFp32AndLeaves16BitAlone) {
  const auto w = wire_format(spec(CompressionKind::fp16), 1e6, 4);
  EXPECT_DOUBLE_EQ(w.value_bytes, 2e6);
  EXPECT_DOUBLE_EQ(w.total(), 2e6);
  EXPECT_EQ(w.operation, Operation::all_reduce);
  EXPECT_DOUBLE_EQ(wire_format(spec(CompressionKind::fp16), 1e6, 2).total(), 2e6);
}

TEST(WireFormat, TopOnePercentSendsValuesAndIndices) {
  auto s = spec(CompressionKind::topk);
  s.ratio = 0.01;
  const auto w = wire_format(s, 1e6, 4);
  EXPECT_DOUBLE_EQ(w.value_bytes, 40'000); // 10,000 fp32 values
  EXPECT_DOUBLE_EQ(w.index_bytes, 40'000); // 10,000 int32 indices
  EXPECT_DOUBLE_EQ(w.scale_bytes, 0);
  EXPECT_DOUBLE_EQ(w.total(), 80'000);
  EXPECT_EQ(w.operation, Operation::all_gather);
  // 1% of the values plus their indices: 2% of the 4 MB dense tensor, 50x smaller.
  EXPECT_DOUBLE_EQ(compression_ratio(w, 4e6), 50);
}

TEST(WireFormat, TopKRoundsUpAndKeepsAtLeastOneValue) {
  auto s = spec(CompressionKind::topk);
  s.ratio = 0.001;
  EXPECT_DOUBLE_EQ(wire_format(s, 1500, 4).value_bytes, 2 * 4); // ceil(1.5)
  EXPECT_DOUBLE_EQ(wire_format(s, 10, 4).value_bytes, 4);       // ceil(0.01)
  EXPECT_DOUBLE_EQ(wire_format(s, 0, 4).total(), 0);
}

TEST(WireFormat, TopKIndicesWidenBeyondInt32) {
  auto s = spec(CompressionKind::topk);
  s.ratio = 0.5;
  EXPECT_DOUBLE_EQ(wire_format(s, 4e9, 2).index_bytes, 2e9 * 8);
}

TEST(WireFormat, SignIsOneBitPerValuePlusAScaleInACompressedAllReduce) {
  const auto w = wire_format(spec(CompressionKind::sign), 1e6, 4);
  EXPECT_DOUBLE_EQ(w.value_bytes, 125'000); // 1/32 of the 4 MB dense
  EXPECT_DOUBLE_EQ(w.scale_bytes, 4);
  EXPECT_DOUBLE_EQ(w.index_bytes, 0);
  EXPECT_DOUBLE_EQ(w.total(), 125'004);
  // 1-bit Adam's exchange: an all-to-all of the chunks, then an all-gather of the recompressed ones.
  EXPECT_EQ(w.operation, Operation::all_to_all);
  EXPECT_TRUE(w.recompressed);
  EXPECT_NEAR(compression_ratio(w, 4e6), 32, 0.01);
  EXPECT_DOUBLE_EQ(wire_format(spec(CompressionKind::sign), 9, 4).value_bytes, 2); // bits pack into whole bytes
}

TEST(WireFormat, RandomKHasNoIndicesAndAllReduces) {
  auto s = spec(CompressionKind::randomk);
  s.ratio = 0.01;
  const auto w = wire_format(s, 1e6, 4);
  EXPECT_DOUBLE_EQ(w.value_bytes, 40'000);
  EXPECT_DOUBLE_EQ(w.index_bytes, 0);
  EXPECT_DOUBLE_EQ(w.total(), 40'000);
  EXPECT_EQ(w.operation, Operation::all_reduce);
}

TEST(WireFormat, PowerSgdSendsTheFactorsOfAMatrix) {
  auto s = spec(CompressionKind::powersgd);
  s.rank = 4;
  const auto w = wire_format(s, 1024.0 * 1024, 4, 1024, 1024);
  EXPECT_DOUBLE_EQ(w.total(), 4.0 * (1024 + 1024) * 4);
  EXPECT_EQ(w.operation, Operation::all_reduce);
  EXPECT_DOUBLE_EQ(compression_ratio(w, 1024.0 * 1024 * 4), 128);
}

TEST(WireFormat, PowerSgdSendsVectorsAndSmallMatricesDense) {
  auto s = spec(CompressionKind::powersgd);
  s.rank = 4;
  EXPECT_DOUBLE_EQ(wire_format(s, 4096, 4, 4096, 1).total(), 4096 * 4);
  EXPECT_DOUBLE_EQ(wire_format(s, 4096, 2, 1, 4096).total(), 4096 * 2);
  EXPECT_EQ(wire_format(s, 4096, 4, 4096, 1).operation, Operation::all_reduce);
  // 4 x (8 + 8) = 64 = 8 x 8: the factors save nothing.
  EXPECT_DOUBLE_EQ(wire_format(s, 64, 4, 8, 8).total(), 64 * 4);
  EXPECT_DOUBLE_EQ(wire_format(s, 81, 4, 9, 9).total(), 4 * (9 + 9) * 4);
}

TEST(WireFormat, RejectsBadArguments) {
  auto topk = spec(CompressionKind::topk);
  topk.ratio = 0;
  EXPECT_THROW(wire_format(topk, 100, 4), std::invalid_argument);
  topk.ratio = 1.5;
  EXPECT_THROW(wire_format(topk, 100, 4), std::invalid_argument);
  auto power = spec(CompressionKind::powersgd);
  power.rank = 0;
  EXPECT_THROW(wire_format(power, 100, 4, 10, 10), std::invalid_argument);
  power.rank = 2;
  EXPECT_THROW(wire_format(power, 100, 4, 10, 20), std::invalid_argument); // shape does not hold the values
  EXPECT_THROW(wire_format(spec(CompressionKind::none), -1, 4), std::invalid_argument);
  EXPECT_THROW(wire_format(spec(CompressionKind::none), 1, 0), std::invalid_argument);
}

TEST(CompressionWork, NoneCostsNothing) {
  const auto w = compression_work(spec(CompressionKind::none), 1e6, 4);
  EXPECT_DOUBLE_EQ(w.flops, 0);
  EXPECT_DOUBLE_EQ(w.bytes, 0);
}

TEST(CompressionWork, Fp16CastsDownAndBackUp) {
  // Down: read 4e6, write 2e6. Up: read 2e6, write 4e6.
  const auto w = compression_work(spec(CompressionKind::fp16), 1e6, 4);
  EXPECT_DOUBLE_EQ(w.bytes, 12e6);
  EXPECT_DOUBLE_EQ(w.flops, 0);
  const auto already = compression_work(spec(CompressionKind::fp16), 1e6, 2);
  EXPECT_DOUBLE_EQ(already.bytes, 0);
}

TEST(CompressionWork, SignWithErrorFeedback) {
  // n workers, e = 1e6 fp32 values, bits and scale b = 125,004 bytes.
  // Compress: read g 4e6, residual read 4e6 + write 4e6, write b; flops: |p| sum e, residual add e, write-back e.
  // The worker's chunk: read the n contributions (b), write the averaged chunk (4e6 / n), write its bits (b / n),
  // its residual read and written (8e6 / n); flops e sums + e / n, and 2 e / n for the residual.
  // Decompress the gathered chunks: read b, write 4e6; e flops.
  const double b = 125'004;
  const auto bytes = [&](double n) { return 4e6 + 8e6 + b + (b + 4e6 / n + b / n + 8e6 / n) + (b + 4e6); };
  const auto flops = [&](double n) { return 3e6 + (1e6 + 1e6 / n + 2e6 / n) + 1e6; };
  const auto one = compression_work(spec(CompressionKind::sign), 1e6, 4);
  EXPECT_DOUBLE_EQ(one.bytes, bytes(1));
  EXPECT_DOUBLE_EQ(one.flops, flops(1));
  const auto eight = compression_work(spec(CompressionKind::sign), 1e6, 4, 1, 1, 8);
  EXPECT_DOUBLE_EQ(eight.bytes, bytes(8));
  EXPECT_DOUBLE_EQ(eight.flops, flops(8));
  // Without error feedback: neither residual.
  auto plain = spec(CompressionKind::sign);
  plain.error_feedback = false;
  const auto p = compression_work(plain, 1e6, 4, 1, 1, 8);
  EXPECT_DOUBLE_EQ(p.bytes, 4e6 + b + (b + 4e6 / 8 + b / 8) + (b + 4e6));
  EXPECT_DOUBLE_EQ(p.flops, 1e6 + (1e6 + 1e6 / 8) + 1e6);
}

TEST(CompressionWork, TopKReadsTheValuesTwice) {
  auto s = spec(CompressionKind::topk);
  s.ratio = 0.01;
  // Compress: two passes over 4e6 bytes, residual 8e6, pairs written 80,000; flops: 2 compares + 1 add per value.
  // Decompress once: dense result 4e6, pairs read 80,000; 10,000 adds.
  const auto w = compression_work(s, 1e6, 4);
  EXPECT_DOUBLE_EQ(w.bytes, 8e6 + 8e6 + 80'000 + 4e6 + 80'000);
  EXPECT_DOUBLE_EQ(w.flops, 3e6 + 10'000);
  const auto four = compression_work(s, 1e6, 4, 1, 1, 4);
  EXPECT_DOUBLE_EQ(four.bytes - w.bytes, 3 * 80'000);
  EXPECT_DOUBLE_EQ(four.flops - w.flops, 3 * 10'000);
}

TEST(CompressionWork, RandomKGathersItsValues) {
  auto s = spec(CompressionKind::randomk);
  s.ratio = 0.01;
  s.error_feedback = false;
  // Gather: read 40,000, write 40,000. Decompress: read 40,000, write the dense 4e6. Workers do not matter.
  const auto w = compression_work(s, 1e6, 4, 1, 1, 16);
  EXPECT_DOUBLE_EQ(w.bytes, 3 * 40'000 + 4e6);
  EXPECT_DOUBLE_EQ(w.flops, 0);
  // Error feedback reads the whole gradient and the residual and writes the residual: 12e6 more, 1e6 adds.
  s.error_feedback = true;
  const auto ef = compression_work(s, 1e6, 4);
  EXPECT_DOUBLE_EQ(ef.bytes, 3 * 40'000 + 4e6 + 12e6);
  EXPECT_DOUBLE_EQ(ef.flops, 1e6);
}

TEST(CompressionWork, PowerSgdCountsItsMatrixProducts) {
  auto s = spec(CompressionKind::powersgd);
  s.rank = 4;
  s.error_feedback = false;
  const double m = 1024, c = 512, r = 4, e = m * c;
  // P = M Q and Q = M^T P: 2 m c r each; Gram-Schmidt 2 m r^2; decompression P Q^T: 2 m c r.
  // Bytes: M read twice, the dense result written once.
  const auto w = compression_work(s, e, 4, 1024, 512);
  EXPECT_DOUBLE_EQ(w.flops, 3 * 2 * m * c * r + 2 * m * r * r);
  EXPECT_DOUBLE_EQ(w.bytes, 3 * e * 4);
  s.error_feedback = true;
  const auto ef = compression_work(s, e, 4, 1024, 512);
  EXPECT_DOUBLE_EQ(ef.bytes - w.bytes, 2 * e * 4);
  EXPECT_DOUBLE_EQ(ef.flops - w.flops, e);
  // A vector is sent dense: nothing to compute.
  const auto v = compression_work(s, 4096, 4, 4096, 1);
  EXPECT_DOUBLE_EQ(v.flops, 0);
  EXPECT_DOUBLE_EQ(v.bytes, 0);
}

TEST(ErrorFeedback, OneResidualWhereThereIsOne) {
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::sign), 1e6, 4), 8e6); // one worker: its chunk is all
  // 1-bit Adam keeps the worker's residual and that of the chunk it recompresses: 1 + 1/n gradients.
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::sign), 1e6, 4, 16), 4e6 * (1 + 1.0 / 16));
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::topk), 1e6, 2), 2e6);
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::randomk), 1e6, 4), 4e6);
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::powersgd), 1e6, 4), 4e6);
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::none), 1e6, 4), 0);
  EXPECT_DOUBLE_EQ(error_feedback_bytes(spec(CompressionKind::fp16), 1e6, 4), 0);
  auto plain = spec(CompressionKind::topk);
  plain.error_feedback = false;
  EXPECT_DOUBLE_EQ(error_feedback_bytes(plain, 1e6, 4), 0);
}

} // namespace
} // namespace dtsim::strategies
