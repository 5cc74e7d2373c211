// The Chakra execution-trace reader on arbitrary bytes: the first byte picks a split point, the two parts are the
// files of rank 0 and rank 1 of a two-rank trace (or the whole input one rank's file). The reader either refuses
// the trace with a TraceError or gives a graph of that many ranks whose ops' dependencies point to earlier ops, whose
// collectives name groups that hold their rank, and whose times are finite and not negative.
#include "fuzz/harness.hpp"
#include "sim/chakra/chakra.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

// One folder per fuzzing process, where each input's files are written before they are read.
const std::filesystem::path& folder() {
  static const std::filesystem::path path = [] {
    auto p = std::filesystem::temp_directory_path() / ("dtsim-chakra-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return path;
}

void write(int rank, const std::string& bytes) {
  std::ofstream(folder() / ("fuzz." + std::to_string(rank) + ".et"), std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dtsim::fuzz::finding;
  namespace chakra = dtsim::chakra;
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const int ranks = data[0] % 2 == 0 ? 1 : 2;
  std::filesystem::remove(folder() / "fuzz.1.et");
  if (ranks == 1) {
    write(0, rest);
  } else {
    const std::size_t split = rest.empty() ? 0 : data[0] % rest.size();
    write(0, rest.substr(0, split));
    write(1, rest.substr(split));
  }
  chakra::ReadOptions options;
  options.compute_seconds = [](double flops, double bytes) { return flops * 1e-12 + bytes * 1e-9; };
  dtsim::graph::ExecutionGraph g;
  if (!dtsim::fuzz::reads_or_refuses<chakra::TraceError>(
          "read_trace", [&] { g = chakra::read_trace((folder() / "fuzz").string(), ranks, options); }))
    return 0;
  if (g.rank_count() != ranks) finding("read_trace gave another rank count");
  for (int r = 0; r < ranks; ++r) {
    const auto& ops = g.program_of(r).ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      for (auto d : ops[i].deps)
        if (d >= i) finding("an op depends on one that does not come before it");
      if (const auto* c = std::get_if<dtsim::graph::Compute>(&ops[i].body))
        if (!std::isfinite(c->seconds) || c->seconds < 0) finding("a compute op's time is not finite or negative");
      if (const auto* c = std::get_if<dtsim::graph::Collective>(&ops[i].body)) {
        if (c->group < 0 || c->group >= static_cast<int>(g.groups.size())) finding("a collective names no group");
        bool member = false;
        for (int m : g.groups[c->group])
          member = member || m == r;
        if (!member) finding("a collective's group does not hold its rank");
      }
    }
  }
  return 0;
}
