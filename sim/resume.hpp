#pragma once
// `--resume DIR` of sweep, compare and search: every finished point's outcome (its result, or why it failed) kept in
// DIR as it finishes, so that a run cut short (a batch system's time limit, ^C, a crash) is finished later by running
// the same command again: the points already kept are read back, not simulated again.
//
// A point is kept under a hash of what decides its outcome: dtsim's version, the command, and the point's scenario in
// canonical form (scenario::to_json) with the resolved GPU profile. A changed scenario, --set or option gives other
// keys, so nothing stale is reused. One file per point, <hash>.json, written through a temporary file in DIR and a
// rename: a run killed mid-write leaves the previous file or none, never half of one. A file that is not one dtsim
// wrote for that key (truncated, edited, another version's) is ignored, said on stderr, and its point simulated again.
// Outcomes that say nothing about the point (its process was killed, by the OOM killer for instance) are not kept.
#include "sim/engine/child_process.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dtsim {

class ResumeStore {
public:
  // Creates `dir` (and its parents) if missing. Throws scenario::ScenarioError naming --resume when it cannot.
  ResumeStore(std::string dir, std::string version);

  // The key of one point: a hash of the version, the command ("sweep") and the point's canonical text.
  std::string key(std::string_view command, std::string_view canonical) const;

  // Says why a kept outcome cannot be used (empty: it can), beyond the file's own form.
  using Check = std::function<std::string(const engine::ChildOutcome&)>;
  // The kept outcome of a point, or none (not kept yet, or a file that is not valid: said on stderr, naming `label`).
  std::optional<engine::ChildOutcome> load(const std::string& key, const std::string& label, const Check& check);
  // Keeps a finished point's outcome; one whose process died without reporting is not kept.
  void save(const std::string& key, const std::string& label, const engine::ChildOutcome& outcome) const;

  const std::string& dir() const { return dir_; }
  std::size_t reused() const { return reused_; }

private:
  std::string dir_;
  std::string version_;
  std::size_t reused_ = 0;
};

} // namespace dtsim
