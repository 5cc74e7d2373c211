#pragma once
// What changed between NCCL releases in what dtsim replays. The tuning model's constants (nccl_tuning.cpp) are
// 2.30.7's whatever the release; a scenario that names an older release (training.nccl) gets that release's
// algorithms, protocols and tree pipeline, each checked in NCCL's own history (github.com/NVIDIA/nccl, tags):
// - trees (the double binary tree all-reduce): from 2.4.2 (src/misc/trees.cu); before it every all-reduce is a ring
//   (the releases before 2.3.5, whose source was not published, are not offered);
// - LL128: from 2.5.6 (src/include/devcomm.h);
// - a tree's Simple chunks: from 2.4.2 to 2.19.4 enqueue's "Optimize chunkSize / nSteps" halves the 512 KiB slot
//   while a channel's bytes hold fewer than 8 x depth chunks (down to 128 KiB), 4 x depth (64 KiB) and depth
//   (32 KiB), so that a small all-reduce still fills the tree's pipeline; 2.20.3 dropped it, and a tree's chunk is
//   the slot whatever the size (computeCollChunkInfo), so a message of one slot crosses the tree hop by hop whole.
#include <string>
#include <string_view>

namespace dtsim::collectives {

// NCCL_VERSION_CODE of a release: major x 10000 + minor x 100 + patch (2.30.7: 23007).
inline constexpr int kNcclTuningVersion = 23007; // the release whose tuning constants dtsim carries (the default)
inline constexpr int kNcclFirstVersion = 20305;  // 2.3.5 (2018), the first NCCL 2 release whose source NVIDIA published

// "2.6.3" -> 20603; std::invalid_argument for anything but MAJOR.MINOR.PATCH from 2.3.5 up to the tuning's release.
int parse_nccl_version(std::string_view text);
std::string nccl_version_name(int version); // 20603 -> "2.6.3"

bool nccl_has_trees(int version);
bool nccl_has_ll128(int version);

// Chunks a tree of NCCL `version` cuts a channel's `channel_bytes` into, Simple protocol, on `nodes` nodes of
// `per_node` ranks each. The tree's depth is NCCL's own approximation (2.5 on: per_node - 1 + log2(nodes); 2.4:
// per_node + log2(nodes)); at most detail::kMaxPipelineChunks.
int nccl_tree_chunks(double channel_bytes, int per_node, int nodes, int version);

} // namespace dtsim::collectives
