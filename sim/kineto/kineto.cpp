#include "sim/kineto/kineto.hpp"
#include "sim/kineto/reader.hpp"

#include "io/gzip.hpp"
#include "io/json_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

namespace dtsim::kineto {

std::string_view to_string(Phase phase) {
  switch (phase) {
  case Phase::forward:
    return "forward";
  case Phase::backward:
    return "backward";
  case Phase::optimizer:
    return "optimizer";
  }
  return "?";
}

double ProfiledStep::busy_seconds() const {
  return std::accumulate(activities.begin(), activities.end(), 0.0,
                         [](double sum, const Activity& a) { return sum + a.seconds; });
}

double ProfiledStep::gap_seconds() const {
  return std::accumulate(activities.begin(), activities.end(), gap_after,
                         [](double sum, const Activity& a) { return sum + a.gap_before; });
}

double ProfiledStep::gradient_bytes() const {
  return std::accumulate(gradients.begin(), gradients.end(), 0.0,
                         [](double sum, const Gradient& g) { return sum + g.bytes; });
}

namespace detail {

void Reader::choose_step() {
  std::sort(steps_.begin(), steps_.end(), [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  if (steps_.empty()) {
    if (options_.step)
      fail(fmt::format("no step {}: the trace has no \"ProfilerStep#N\" annotations (call profiler.step() each "
                       "iteration), so its whole span is one step",
                       *options_.step),
           true);
    return;
  }
  std::size_t chosen = steps_.size() >= 2 ? steps_.size() - 2 : 0;
  if (options_.step) {
    const auto it =
        std::find_if(steps_.begin(), steps_.end(), [&](const StepSpan& s) { return s.number == *options_.step; });
    if (it == steps_.end()) {
      std::vector<std::int64_t> numbers;
      for (const auto& s : steps_)
        numbers.push_back(s.number);
      fail(fmt::format("no step {} in the trace; it has {}", *options_.step, fmt::join(numbers, ", ")), true);
    }
    chosen = static_cast<std::size_t>(it - steps_.begin());
  }
  window_ = {steps_[chosen].start, steps_[chosen].end};
  step_name_ = steps_[chosen].name;
  if (chosen + 1 < steps_.size()) next_window_ = {steps_[chosen + 1].start, steps_[chosen + 1].end};
}

// Microseconds in [from, to] that an NCCL kernel ran in.
double Reader::nccl_overlap(double from, double to) const {
  double covered = 0;
  for (const auto& [start, end] : nccl_)
    covered += std::max(0.0, std::min(end, to) - std::max(start, from));
  return covered;
}

// The phase at each (thread, time) from the host ranges open on that thread then: a sweep per thread with a stack of
// open ranges (a thread's ranges nest).
std::vector<Phase> Reader::phases_at(const std::vector<std::pair<std::string, double>>& asked) const {
  std::vector<Phase> phases(asked.size(), Phase::forward);
  std::map<std::string, std::vector<const HostRange*>> by_thread;
  for (const auto& r : ranges_)
    by_thread[r.thread].push_back(&r);
  std::map<std::string, std::vector<std::size_t>> queries;
  for (std::size_t i = 0; i < asked.size(); ++i)
    if (!asked[i].first.empty()) queries[asked[i].first].push_back(i);
  for (auto& [thread, indices] : queries) {
    auto& ranges = by_thread[thread];
    std::sort(ranges.begin(), ranges.end(), [](const HostRange* a, const HostRange* b) {
      return a->start != b->start ? a->start < b->start : a->end > b->end;
    });
    std::sort(indices.begin(), indices.end(),
              [&](std::size_t a, std::size_t b) { return asked[a].second < asked[b].second; });
    std::vector<const HostRange*> open;
    int backward = 0, optimizer = 0;
    const auto count = [&](const HostRange* r, int by) {
      if (r->marking) (r->marks == Phase::backward ? backward : optimizer) += by;
    };
    const auto close_before = [&](double t) {
      while (!open.empty() && open.back()->end < t) {
        count(open.back(), -1);
        open.pop_back();
      }
    };
    std::size_t next = 0;
    for (std::size_t q : indices) {
      const double t = asked[q].second;
      for (; next < ranges.size() && ranges[next]->start <= t; ++next) {
        close_before(ranges[next]->start);
        open.push_back(ranges[next]);
        count(ranges[next], +1);
      }
      close_before(t);
      phases[q] = optimizer > 0 ? Phase::optimizer : backward > 0 ? Phase::backward : Phase::forward;
    }
  }
  return phases;
}

void Reader::assign_phases(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const {
  std::vector<std::pair<std::string, double>> asked;
  for (const auto* g : kept)
    asked.emplace_back(g->thread, g->launch);
  const auto phases = phases_at(asked);
  for (std::size_t i = 0; i < kept.size(); ++i)
    out.activities[i].phase = phases[i];
}

std::vector<std::optional<std::size_t>> Reader::launched_by(const std::vector<GpuEvent*>& kept,
                                                            const std::vector<double>& times) const {
  std::vector<std::size_t> by_launch(kept.size());
  std::iota(by_launch.begin(), by_launch.end(), 0);
  std::stable_sort(by_launch.begin(), by_launch.end(),
                   [&](std::size_t a, std::size_t b) { return kept[a]->launch < kept[b]->launch; });
  std::vector<std::size_t> latest(by_launch.size()); // the last activity in GPU order among the first k launched
  for (std::size_t k = 0; k < by_launch.size(); ++k)
    latest[k] = std::max(by_launch[k], k ? latest[k - 1] : 0);
  std::vector<std::optional<std::size_t>> out;
  for (double t : times) {
    const auto launched = std::upper_bound(by_launch.begin(), by_launch.end(), t,
                                           [&](double time, std::size_t i) { return time < kept[i]->launch; }) -
                          by_launch.begin();
    out.push_back(launched > 0 ? std::optional(latest[static_cast<std::size_t>(launched) - 1]) : std::nullopt);
  }
  return out;
}

// A collective waits for what its stream was given before it: the activities launched before it.
void Reader::place_collectives(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const {
  std::vector<const CommLaunch*> step;
  for (const auto& c : comms_)
    if (in_step(c.start)) step.push_back(&c);
  if (step.empty()) // an older trace: the sizes are on ProcessGroupNCCL's ranges
    for (const auto& c : annotated_comms_)
      if (in_step(c.start)) step.push_back(&c);
  std::stable_sort(step.begin(), step.end(), [](const auto* a, const auto* b) { return a->start < b->start; });
  std::vector<std::pair<std::string, double>> asked;
  std::vector<double> times;
  for (const auto* c : step) {
    asked.emplace_back(c->thread, c->start);
    times.push_back(c->start);
  }
  const auto phases = phases_at(asked);
  const auto after = launched_by(kept, times);
  for (std::size_t i = 0; i < step.size(); ++i) {
    Collective c = step[i]->collective;
    c.phase = phases[i];
    c.ready_after = after[i];
    out.collectives.push_back(std::move(c));
  }
}

// A gradient is ready once the GPU has run everything launched before its AccumulateGrad ended.
void Reader::place_gradients(const std::vector<GpuEvent*>& kept, ProfiledStep& out) const {
  std::vector<AccumulateGrad> step;
  for (const auto& a : accumulates_)
    if (in_step(a.start)) step.push_back(a);
  std::stable_sort(step.begin(), step.end(), [](const auto& a, const auto& b) { return a.end < b.end; });
  out.parameter_tensors = static_cast<int>(step.size());
  out.shapes =
      !step.empty() && std::all_of(step.begin(), step.end(), [](const auto& a) { return a.bytes.has_value(); });
  if (!out.shapes) return;
  std::vector<double> ends;
  for (const auto& a : step)
    ends.push_back(a.end);
  const auto after = launched_by(kept, ends);
  for (std::size_t i = 0; i < step.size(); ++i) {
    Gradient g;
    g.bytes = *step[i].bytes;
    g.ready_after = after[i];
    out.gradients.push_back(g);
  }
}

ProfiledStep Reader::finish(const json& rest) {
  if (rest.is_object()) {
    if (!rest.contains("traceEvents") || !rest["traceEvents"].is_array())
      fail("no \"traceEvents\" array; expected a Chrome trace as torch.profiler's export_chrome_trace writes it");
  } else if (!rest.is_array()) {
    fail("expected a Chrome trace: an object with \"traceEvents\", or an array of events");
  }
  choose_step();
  std::sort(nccl_.begin(), nccl_.end());
  std::string device;
  if (rest.is_object())
    if (const auto p = rest.find("deviceProperties"); p != rest.end() && p->is_array() && !p->empty())
      if (const auto name = p->front().find("name"); name != p->front().end() && name->is_string()) device = *name;

  std::vector<GpuEvent*> kept;
  std::optional<double> next_first; // the next step's first activity
  for (auto& g : gpu_) {
    g.launch = g.start;
    if (g.correlation)
      if (const auto it = launches_.find(*g.correlation); it != launches_.end()) {
        g.launch = it->second.first;
        g.thread = it->second.second;
      }
    if (in_step(g.launch))
      kept.push_back(&g);
    else if (next_window_ && g.launch >= next_window_->first && g.launch <= next_window_->second)
      next_first = std::min(next_first.value_or(g.start), g.start);
  }
  if (kept.empty())
    fail(step_name_.empty() ? std::string("no GPU kernels, copies or sets besides NCCL's")
                            : fmt::format("no GPU kernels, copies or sets launched in {}", step_name_));
  std::stable_sort(kept.begin(), kept.end(), [](const GpuEvent* a, const GpuEvent* b) {
    return a->start != b->start ? a->start < b->start : a->launch < b->launch;
  });
  ProfiledStep out;
  out.device = device;
  out.step = step_name_;
  double cursor = kept.front()->start;
  for (const auto* g : kept) {
    Activity a;
    a.name = g->name;
    a.copy = g->copy;
    a.bytes = g->bytes;
    if (g->start > cursor) {
      a.gap_before = (g->start - cursor) * kMicro;
      a.comm_wait = nccl_overlap(cursor, g->start) * kMicro;
    }
    a.seconds = std::max(0.0, g->end - std::max(g->start, cursor)) * kMicro;
    cursor = std::max(cursor, g->end);
    out.activities.push_back(std::move(a));
  }
  // A loop that launches the next step before this one's work is done (TorchRec's pipelined training, for one) has
  // steps that overlap on the GPU: one step replayed after another would be slower than the job. A sliver (a last
  // kernel on a side stream) is let go.
  if (next_first && cursor - *next_first > 0.01 * (*next_first - kept.front()->start))
    fail(fmt::format("{}'s GPU work runs {:.2f} ms into the next step's (its last ends at {:.2f} ms, the next step's "
                     "first starts at {:.2f} ms, from its own first): a pipelined training loop, whose steps dtsim "
                     "cannot replay one at a time",
                     step_name_, (cursor - *next_first) / 1e3, (cursor - kept.front()->start) / 1e3,
                     (*next_first - kept.front()->start) / 1e3));
  if (next_first && *next_first > cursor)
    out.gap_after = (*next_first - cursor - nccl_overlap(cursor, *next_first)) * kMicro;
  for (const auto& [start, end] : nccl_)
    if (end > kept.front()->start && start < cursor) ++out.communication_kernels;
  assign_phases(kept, out);
  place_gradients(kept, out);
  place_collectives(kept, out);
  for (const auto& m : memory_)
    if (in_step(m.time)) {
      out.peak_allocated = std::max(out.peak_allocated.value_or(0), m.allocated);
      out.peak_reserved = std::max(out.peak_reserved.value_or(0), m.reserved);
    }
  return out;
}

} // namespace detail

// The events are collected as the parser reads them, never held as one tree: a step of a large model is hundreds of
// megabytes of JSON, whose tree would take ten times that.
ProfiledStep parse_profile(const std::string& text, const std::string& file, const ReadOptions& options) {
  detail::Reader reader(file, options);
  nlohmann::json rest;
  try {
    rest = io::parse_json_streaming(
        text, "traceEvents", [&](const nlohmann::json& event, std::size_t index) { reader.collect(event, index); });
  } catch (const io::JsonTextError& e) {
    throw ProfileError(fmt::format("{}: not a JSON trace: {}", file, e.what()));
  }
  return reader.finish(rest);
}

// A step of a large model is tens to hundreds of megabytes of JSON; its parsed form takes several times that.
constexpr std::size_t kMaxTraceBytes = std::size_t{512} << 20;

double reading_bytes(const std::filesystem::path& file) {
  std::error_code error;
  const auto size = static_cast<double>(std::filesystem::file_size(file, error));
  if (error) return 0;
  if (const auto text = io::gzip_text_size(file)) return size + 2.1 * static_cast<double>(*text);
  return 2.1 * size;
}

ProfiledStep read_profile(const std::filesystem::path& file, const ReadOptions& options) {
  std::string text;
  try {
    text = io::read_text_file(file, "PyTorch profiler trace", kMaxTraceBytes);
  } catch (const io::FileError& e) {
    throw ProfileError(fmt::format("{}: {}", file.string(), e.what()));
  }
  if (io::is_gzip(text)) {
    try {
      text = io::gunzip(text, kMaxTraceBytes);
    } catch (const std::runtime_error& e) {
      throw ProfileError(fmt::format("{}: {}", file.string(), e.what()));
    }
  }
  try {
    return parse_profile(text, file.string(), options);
  } catch (const std::bad_alloc&) { // under an address-space limit (ulimit -v) tighter than --max-memory's
    throw ProfileError(fmt::format("{}: reading it needs more memory than this process may take", file.string()));
  }
}

} // namespace dtsim::kineto
