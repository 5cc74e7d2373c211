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

namespace dtsim::studies {

// What a shard's run did once its points are kept. The study returns with the other shards' points empty, and the
// command prints this instead of a table: `dtsim merge` prints the whole.
struct ShardFinished {
  std::string dir;
  int index = 0, count = 0;
  std::size_t points = 0, simulated = 0;
};

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

  // --shard K/N: this run simulates (and keeps) only the points whose index is K - 1 modulo N; `dtsim merge` puts the
  // N directories together. Points are numbered in the order the command lists them, the same in every shard.
  void set_shard(int index, int count) { shard_index_ = index, shard_count_ = count; }
  bool sharded() const { return shard_index_ > 0; }
  bool in_shard(std::size_t point) const {
    return !sharded() || static_cast<int>(point % static_cast<std::size_t>(shard_count_)) == shard_index_ - 1;
  }
  std::string shard_text(std::size_t point) const; // "shard 3/4": the shard a point belongs to
  int shard_index() const { return shard_index_; }
  int shard_count() const { return shard_count_; }
  // `dtsim merge`: every point must be kept already; one that is not is an error naming its shard.
  void set_merge_only(int shards) { merge_only_ = true, shard_count_ = shards; }
  bool merge_only() const { return merge_only_; }
  // A shard's points run and kept: `points` of this shard, `simulated` of them now (the rest read back).
  void finish_shard(std::size_t points, std::size_t simulated) {
    finished_ = ShardFinished{dir_, shard_index_, shard_count_, points, simulated};
  }
  // Set once a sharded run's points are kept: what the command reports instead of its results.
  const std::optional<ShardFinished>& finished_shard() const { return finished_; }

private:
  std::string dir_;
  std::string version_;
  std::size_t reused_ = 0;
  int shard_index_ = 0; // 1 .. shard_count_ for a shard's run; 0: every point (a plain run, or a merge)
  int shard_count_ = 0; // N, of a shard's run or of the shards merged
  bool merge_only_ = false;
  std::optional<ShardFinished> finished_;
};

} // namespace dtsim::studies
