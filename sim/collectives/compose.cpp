// Building blocks shared by the algorithms: even splits, generated schedules, and the two combinators
// (groups side by side, schedules in sequence) that folding and the hierarchical all-reduce are made of, and the lanes
// of NCCL's channels (concurrent).
#include "sim/collectives/detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>

namespace dtsim::collectives::detail {

double part_offset(double total, int parts, int i) {
  if (i <= 0) return 0;
  if (i >= parts) return total;
  constexpr double kExactIntegers = 9007199254740992.0; // 2^53
  if (total >= 0 && total <= kExactIntegers && std::floor(total) == total) {
    // floor(t * i / p) without overflow: (t / p) * i + floor((t % p) * i / p).
    const auto t = static_cast<std::uint64_t>(total);
    const auto p = static_cast<std::uint64_t>(parts);
    const auto k = static_cast<std::uint64_t>(i);
    return static_cast<double>((t / p) * k + (t % p) * k / p);
  }
  return total * i / parts;
}

int pipeline_chunks(double bytes, double chunk_bytes) {
  const double chunks = std::ceil(bytes / chunk_bytes);
  return static_cast<int>(std::clamp(chunks, 1.0, static_cast<double>(kMaxPipelineChunks)));
}

int ceil_log2(int n) {
  int l = 0;
  while ((std::int64_t{1} << l) < n)
    ++l;
  return l;
}

int floor_log2(int n) {
  int q = 0;
  while ((std::int64_t{2} << q) <= n)
    ++q;
  return q;
}

SchedulePtr generated(int ranks, int steps, GeneratedSchedule::StepFn fn, std::vector<int> phases) {
  return std::make_shared<GeneratedSchedule>(ranks, steps, std::move(fn), std::move(phases));
}

SchedulePtr pipelined(int ranks, int steps, GeneratedSchedule::StepFn fn, std::vector<int> phases) {
  return std::make_shared<GeneratedSchedule>(ranks, steps, std::move(fn), std::move(phases), true);
}

std::vector<int> phases_every(int steps, int length) {
  std::vector<int> starts{0};
  for (int s = length; s < steps; s += length)
    starts.push_back(s);
  return starts;
}

SchedulePtr empty_schedule(int ranks) {
  return generated(ranks, 0, [](int, int) { return idle_step(); });
}

namespace {

class SideBySide final : public Schedule {
public:
  SideBySide(int ranks, std::vector<std::vector<int>> groups, std::vector<SchedulePtr> schedules)
      : ranks_(ranks), groups_(std::move(groups)), schedules_(std::move(schedules)), group_of_(ranks, -1),
        local_of_(ranks, -1) {
    if (groups_.size() != schedules_.size()) throw std::logic_error("side_by_side: one schedule per group");
    std::vector<int> phases;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      if (schedules_[g]->ranks() != static_cast<int>(groups_[g].size()))
        throw std::logic_error("side_by_side: a schedule's ranks differ from its group's size");
      for (std::size_t l = 0; l < groups_[g].size(); ++l) {
        const int p = groups_[g][l];
        if (p < 0 || p >= ranks_ || group_of_[p] >= 0) throw std::logic_error("side_by_side: groups overlap");
        group_of_[p] = static_cast<int>(g);
        local_of_[p] = static_cast<int>(l);
      }
      steps_ = std::max(steps_, schedules_[g]->step_count());
      if (schedules_[g]->step_count() > 0)
        for (int s : schedules_[g]->phase_starts())
          phases.push_back(s);
    }
    phases.push_back(0);
    std::sort(phases.begin(), phases.end());
    phases.erase(std::unique(phases.begin(), phases.end()), phases.end());
    phases_ = std::move(phases);
  }

  int ranks() const override { return ranks_; }
  int step_count() const override { return steps_; }
  std::vector<int> phase_starts() const override { return phases_; }

  Step step(int position, int k) const override {
    const int g = group_of_[position];
    if (g < 0 || k >= schedules_[g]->step_count()) return idle_step();
    Step s = schedules_[g]->step(local_of_[position], k);
    const auto& members = groups_[g];
    for (auto& t : s.sends)
      if (t.peer >= 0) // switch endpoints (negative) are not positions
        t.peer = members[t.peer];
    for (auto& t : s.recvs)
      if (t.peer >= 0) t.peer = members[t.peer];
    return s;
  }

private:
  int ranks_;
  std::vector<std::vector<int>> groups_;
  std::vector<SchedulePtr> schedules_;
  std::vector<int> group_of_;
  std::vector<int> local_of_;
  int steps_ = 0;
  std::vector<int> phases_;
};

class Sequence final : public Schedule {
public:
  Sequence(int ranks, std::vector<Part> parts) : ranks_(ranks) {
    for (auto& part : parts) {
      if (part.schedule->ranks() != ranks_) throw std::logic_error("in_sequence: parts differ in ranks");
      const int steps = part.schedule->step_count();
      if (steps == 0) continue;
      if (part.as_one_phase)
        phases_.push_back(steps_);
      else
        for (int s : part.schedule->phase_starts())
          phases_.push_back(steps_ + s);
      starts_.push_back(steps_);
      parts_.push_back(std::move(part.schedule));
      steps_ += steps;
    }
    if (phases_.empty()) phases_.push_back(0);
  }

  int ranks() const override { return ranks_; }
  int step_count() const override { return steps_; }
  std::vector<int> phase_starts() const override { return phases_; }

  Step step(int position, int k) const override {
    const auto i = static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), k) - starts_.begin()) - 1;
    return parts_[i]->step(position, k - starts_[i]);
  }

private:
  int ranks_;
  int steps_ = 0;
  std::vector<int> starts_;
  std::vector<SchedulePtr> parts_;
  std::vector<int> phases_;
};

} // namespace

namespace {

class Concurrent final : public Schedule {
public:
  explicit Concurrent(std::vector<SchedulePtr> lanes) : lanes_(std::move(lanes)) {
    for (const auto& lane : lanes_) {
      if (lane->ranks() != lanes_.front()->ranks()) throw std::logic_error("concurrent: lanes differ in ranks");
      steps_ = std::max(steps_, lane->step_count());
    }
  }
  int ranks() const override { return lanes_.front()->ranks(); }
  int step_count() const override { return steps_; }
  std::vector<int> phase_starts() const override {
    std::set<int> starts;
    for (const auto& lane : lanes_)
      for (int s : lane->phase_starts())
        starts.insert(s);
    return {starts.begin(), starts.end()};
  }
  std::vector<SchedulePtr> lanes() const override { return lanes_; }
  Step step(int p, int k) const override {
    Step out = idle_step();
    const auto add = [](std::vector<Transfer>& to, const Transfer& t) {
      for (auto& have : to)
        if (have.peer == t.peer) {
          have.bytes += t.bytes;
          return;
        }
      to.push_back(t);
    };
    for (const auto& lane : lanes_) {
      if (k >= lane->step_count()) continue;
      const Step s = lane->step(p, k);
      for (const auto& t : s.sends)
        add(out.sends, t);
      for (const auto& t : s.recvs)
        add(out.recvs, t);
      out.reduce_bytes += s.reduce_bytes;
      out.latency_terms = std::max(out.latency_terms, s.latency_terms);
      if (&lane == &lanes_.front()) out.latency_hop = s.latency_hop; // the lanes run side by side: one's chain
    }
    return out;
  }

private:
  std::vector<SchedulePtr> lanes_;
  int steps_ = 0;
};

} // namespace

SchedulePtr concurrent(std::vector<SchedulePtr> lanes) {
  if (lanes.size() == 1) return lanes.front();
  return std::make_shared<Concurrent>(std::move(lanes));
}

SchedulePtr side_by_side(int ranks, std::vector<std::vector<int>> groups, std::vector<SchedulePtr> schedules) {
  return std::make_shared<SideBySide>(ranks, std::move(groups), std::move(schedules));
}

SchedulePtr in_sequence(int ranks, std::vector<Part> parts) {
  return std::make_shared<Sequence>(ranks, std::move(parts));
}

} // namespace dtsim::collectives::detail
