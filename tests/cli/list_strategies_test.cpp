// `dtsim list strategies`: the short names, then the systems of Kako et al. 2021 with what dtsim runs for each.
#include "cli_util.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace dtsim::testing {
namespace {

// The printed line that starts with `first`; empty if none.
std::string line_starting(const std::string& text, const std::string& first) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(first + " ")) return line;
  return {};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ListStrategies, ShortNamesThenPresets) {
  TempDir dir;
  const auto inv = run_dtsim("list strategies", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const std::string& out = inv.out;
  for (const auto* form : {"allreduce", "ps-sync", "ps-async", "ssp[:S]", "dpsgd", "adpsgd", "gossip[:P]",
                           "easgd[:TAU]", "local-sgd[:H]", "preset:NAME"})
    EXPECT_FALSE(line_starting(out, form).empty()) << form << "\n" << out;
  EXPECT_LT(out.find("ssp[:S]"), out.find("Petuum")); // short names first

  const auto petuum = line_starting(out, "Petuum");
  EXPECT_TRUE(has(petuum, "Xing et al., 2015")) << petuum;
  EXPECT_TRUE(has(petuum, "bounded asynchronous")) << petuum;
  EXPECT_TRUE(has(petuum, "ad hoc with eager scatter")) << petuum;
  EXPECT_TRUE(has(petuum, "ssp:3, 2 dedicated servers")) << petuum;

  const auto firecaffe = line_starting(out, "FireCaffe");
  EXPECT_TRUE(has(firecaffe, "binomial tree")) << firecaffe;
  EXPECT_TRUE(has(firecaffe, "allreduce, binomial-tree")) << firecaffe;

  const auto cots = line_starting(out, "COTS HPC");
  EXPECT_TRUE(has(cots, "Coates et al., 2013")) << cots;
  EXPECT_TRUE(has(cots, "allreduce, tensor parallel over every GPU")) << cots;

  EXPECT_TRUE(has(line_starting(out, "Parameter Server"), "W. Dai et al., 2015")) << out;
  EXPECT_TRUE(has(line_starting(out, "GoSGD"), "gossip:0.1")) << out;
  EXPECT_TRUE(has(line_starting(out, "Horovod"), "Sergeev & Del Balso, 2018")) << out;
  EXPECT_TRUE(has(line_starting(out, "BytePS"), "a server on every node, in-node reduce first")) << out;
}

TEST(ListStrategies, UnknownListNamesStrategies) {
  TempDir dir;
  const auto inv = run_dtsim("list strategy", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_TRUE(has(inv.err, "topologies, strategies, failures or frameworks")) << inv.err;
}

} // namespace
// The framework versions, each with the habits its file gives it (calibration/frameworks/*.json); "megatron" names
// the newest.
TEST(ListFrameworks, EachVersionWithItsHabits) {
  TempDir dir;
  const auto inv = run_dtsim("list frameworks", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto& out = inv.out;
  EXPECT_TRUE(has(line_starting(out, "megatron-2021 "), "unfused, softmax fused to 2048 keys")) << out;
  EXPECT_TRUE(has(line_starting(out, "megatron-2021 "), "when asked      no ")) << out;
  EXPECT_TRUE(has(line_starting(out, "megatron-2022 "), "4096 keys")) << out;
  EXPECT_TRUE(has(line_starting(out, "megatron "), "the same as megatron-core")) << out;
  EXPECT_TRUE(has(line_starting(out, "pytorch-fsdp-2023 "), "fp32")) << out;
}

} // namespace dtsim::testing
