// The search's closed-form screen alone (plan/layout_price.hpp): every candidate of a scenario's search space priced
// on one core, as the first stage of `dtsim search` and `dtsim plan` does, the reference scenario built and each shape
// priced once included. Prints the candidates priced, the median wall time of REPEAT runs, the rate and the peak
// resident memory.
//   build/dtsim_bench_screen SCENARIO [REPEAT] [NODES]   (target dtsim_bench_screen; tools/bench/run.sh runs it)
#include "sim/studies/search.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} SCENARIO [REPEAT] [NODES]\n", argv[0]);
    return 2;
  }
  const int repeat = argc > 2 ? std::max(1, std::stoi(argv[2])) : 3;
  const auto base = dtsim::scenario::load_scenario(argv[1]);
  std::vector<int> nodes;
  if (argc > 3) nodes.push_back(std::stoi(argv[3]));
  const auto candidates = dtsim::studies::search::enumerate(dtsim::studies::search::space_of(base, nodes));
  std::vector<double> seconds;
  std::size_t priced = 0, fit = 0;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto prices = dtsim::studies::search::closed_form_prices(base, candidates, {});
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    priced = fit = 0;
    for (const auto& p : prices) {
      priced += p.has_value();
      fit += p && p->fits();
    }
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("{}: {} candidates, {} priced in closed form ({} fit), median of {}: {:.4f} s, {:.0f} candidates/s, "
             "peak RSS {:.1f} MiB\n",
             argv[1], candidates.size(), priced, fit, repeat, median, static_cast<double>(priced) / median,
             static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "error: {}\n", e.what());
  return 2;
}
