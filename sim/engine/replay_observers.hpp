#pragma once
// Engine-private: what watches a replay without taking part in it. The replay notifies each of what happened (a
// transfer, bytes on a link, an op's end), as SimGrid notifies its plugins through signals; none of them changes what
// is simulated. LinkLedger counts transfers and each link's bytes (in all, and per iteration for the steady state),
// LinkSampler samples SimGrid's link-load plugin for the timeline's utilization counters, ReplayProgress keeps a
// terminal's progress line.
#include "sim/engine/engine.hpp"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace dtsim::engine::detail {

class LinkLedger {
public:
  void open(std::size_t links) { bytes_.assign(links, 0.0); }
  // Keeps each iteration's transfers and link bytes apart too: what SteadyState compares.
  void keep_iterations(int iterations);
  bool keeps_iterations() const { return per_iteration_; }

  // One more transfer in iteration `it`; returns the count so far.
  std::uint64_t count_transfer(std::uint32_t it) {
    if (per_iteration_) ++iteration_transfers_[it];
    return ++transfers_;
  }
  void add(int link, double bytes, std::uint32_t it);
  // An iteration no longer compared: its bytes are in the totals, its own copy is released.
  void forget_iteration(std::uint32_t it) { std::vector<double>().swap(iteration_bytes_[it]); }

  std::uint64_t transfers() const { return transfers_; }
  const std::vector<double>& bytes() const { return bytes_; } // per tracked link half
  // Per link half, empty until the iteration's first byte moved (with keep_iterations).
  const std::vector<double>& iteration_bytes(std::uint32_t it) const { return iteration_bytes_[it]; }
  std::uint64_t iteration_transfers(std::uint32_t it) const { return iteration_transfers_[it]; }

private:
  std::vector<double> bytes_;
  std::uint64_t transfers_ = 0;
  bool per_iteration_ = false;
  std::vector<std::vector<double>> iteration_bytes_;
  std::vector<std::uint64_t> iteration_transfers_;
};

// SimGrid's link-load plugin (sg_link_load_plugin_init must run before the platform's links exist), sampled at most
// every `interval` of simulated time; when the samples reach their cap, every other one is dropped (each stays exact:
// the loads are cumulative) and the interval doubles, so any run keeps between half the cap and the cap.
class LinkSampler {
public:
  void start(const std::vector<simgrid::s4u::Link*>& links);
  void sample(bool last = false);
  LinkSamples take() { return std::move(samples_); }

private:
  const std::vector<simgrid::s4u::Link*>* links_ = nullptr;
  LinkSamples samples_;
  double interval_ = 1e-6; // seconds; doubles with each thinning
  std::size_t cap_ = 0;    // samples kept at most (even)
};

// The progress line on stderr: simulated time reached, iteration, transfers so far, at most twice a second of wall
// time.
class ReplayProgress {
public:
  ReplayProgress(bool shown, int iterations) : shown_(shown), iterations_(iterations) {}
  // Told every 65,536 transfers (a clock read per transfer would cost more than the line is worth).
  void on_transfers(std::uint32_t iteration, std::uint64_t transfers);
  void finish(); // clears the line, if one was drawn

private:
  bool shown_;
  int iterations_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  bool drawn_ = false;
};

} // namespace dtsim::engine::detail
