// A Chakra trace is read in this process before anything is planned, so the memory limit bounds its reading first:
// check_scenario_size counts its nodes from their length prefixes (without parsing one) and prices each at about 600
// bytes read and planned (chakra::reading_bytes). The trace here is written byte by byte as the protobuf wire format
// lays it out (a length, then the message: field 1 the id, 3 the type, 4 the packed control dependency, 7 the
// duration), so the test needs no generated classes.
#include "sim/chakra/chakra.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace dtsim {
namespace {

std::string varint(std::uint64_t n) {
  std::string out;
  for (; n >= 0x80; n >>= 7)
    out += static_cast<char>((n & 0x7f) | 0x80);
  return out + static_cast<char>(n);
}

std::string delimited(const std::string& message) {
  return varint(message.size()) + message;
}

// A chain of `nodes` compute nodes of 1 us, each depending on the one before.
std::string chain(std::uint64_t nodes) {
  std::string out = delimited("\x0a\x05"
                              "0.0.4"); // GlobalMetadata { version: "0.0.4" }
  for (std::uint64_t id = 1; id <= nodes; ++id) {
    std::string node = "\x08"; // id
    node += varint(id);
    node += "\x18\x04"; // type COMP_NODE
    if (id > 1) {       // ctrl_deps: [id - 1], packed
      node += '\x22';
      node += varint(varint(id - 1).size());
      node += varint(id - 1);
    }
    node += "\x38\x01"; // duration_micros: 1
    out += delimited(node);
  }
  return out;
}

// 200,000 nodes: 120 MB of nodes (600 bytes each) and the file, refused under 100 MiB, naming the trace; let through
// under 512 MiB, and then it runs: 200,000 us in a row.
TEST(ChakraMemory, ATraceIsReadWithinTheMemoryLimit) {
  const auto dir = std::filesystem::temp_directory_path() / ("dtsim-chakra-memory-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "chain.0.et", std::ios::binary) << chain(200'000);
  const double file = static_cast<double>(std::filesystem::file_size(dir / "chain.0.et"));
  EXPECT_DOUBLE_EQ(chakra::reading_bytes((dir / "chain").string()), file + 200'000 * 600.0);
  auto s = test::hand_scenario({}, 1);
  s.model.trace = scenario::TraceSpec{"chakra", (dir / "chain").string(), std::nullopt, ""};
  try {
    check_scenario_size(s, MemoryLimit{100.0 * (1 << 20), "100 MiB (--max-memory)"});
    ADD_FAILURE() << "a trace read in about 120 MB under a limit of 100 MiB";
  } catch (const engine::ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("reading the Chakra trace " + (dir / "chain").string()), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check_scenario_size(s, MemoryLimit{512.0 * (1 << 20), "512 MiB (--max-memory)"}));
  s.run.iterations = 1;
  s.run.warmup_iterations = 0;
  EXPECT_NEAR(simulate(s).result.iteration.mean, 200'000e-6, 1e-9);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dtsim
