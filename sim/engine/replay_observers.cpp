#include "sim/engine/replay_observers.hpp"

#include <simgrid/plugins/load.h>

#include <algorithm>
#include <cstdio>

namespace dtsim::engine::detail {

void LinkLedger::keep_iterations(int iterations) {
  per_iteration_ = true;
  iteration_bytes_.assign(static_cast<std::size_t>(iterations), {});
  iteration_transfers_.assign(static_cast<std::size_t>(iterations), 0);
}

void LinkLedger::add(int link, double bytes, std::uint32_t it) {
  bytes_[static_cast<std::size_t>(link)] += bytes;
  if (!per_iteration_) return;
  auto& iteration = iteration_bytes_[it]; // taken when the iteration's first byte moves
  if (iteration.empty()) iteration.assign(bytes_.size(), 0.0);
  iteration[static_cast<std::size_t>(link)] += bytes;
}

void LinkSampler::start(const std::vector<simgrid::s4u::Link*>& links) {
  links_ = &links;
  for (const auto* link : links)
    sg_link_load_track(link);
  // At most 8 million numbers (64 MB) in all, and 16 to 2,048 samples.
  cap_ = std::clamp<std::size_t>(8'000'000 / std::max<std::size_t>(1, links.size()), 16, 2048) & ~std::size_t{1};
  sample();
}

void LinkSampler::sample(bool last) {
  auto& s = samples_;
  const double now = simgrid::s4u::Engine::get_clock();
  if (!s.times.empty() && (now == s.times.back() || (!last && now - s.times.back() < interval_))) return;
  const std::size_t links = links_->size();
  if (s.times.size() >= cap_) {
    // Full: keep samples 0, 2, 4, ... and sample half as often.
    for (std::size_t i = 0; 2 * i < s.times.size(); ++i) {
      s.times[i] = s.times[2 * i];
      std::copy_n(s.bytes.begin() + static_cast<std::ptrdiff_t>(2 * i * links), links,
                  s.bytes.begin() + static_cast<std::ptrdiff_t>(i * links));
    }
    s.times.resize((s.times.size() + 1) / 2);
    s.bytes.resize(s.times.size() * links);
    interval_ *= 2;
  }
  s.times.push_back(now);
  for (const auto* link : *links_)
    s.bytes.push_back(sg_link_get_cum_load(link));
}

void ReplayProgress::on_transfers(std::uint32_t iteration, std::uint64_t transfers) {
  if (!shown_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(500)) return;
  last_ = now;
  drawn_ = true;
  std::fprintf(stderr, "\rsimulating: iteration %u/%d, %.6f s simulated, %llu transfers", iteration + 1, iterations_,
               simgrid::s4u::Engine::get_clock(), static_cast<unsigned long long>(transfers));
  std::fflush(stderr);
}

void ReplayProgress::finish() {
  if (shown_ && drawn_) std::fputs("\r\033[K", stderr);
}

} // namespace dtsim::engine::detail
