#pragma once
// FNV-1a, 64 bits (Fowler, Noll and Vo; the offset basis and prime of its published parameters): the one hash dtsim
// names things by (a resumed point's key, a result's scenario_hash). Not for security.
#include <cstdint>
#include <string_view>

namespace dtsim::io {

inline constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL; // 14695981039346656037
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;            // 1099511628211

// From `basis` (another basis gives an independent hash of the same text: two make 128 bits).
constexpr std::uint64_t fnv1a64(std::string_view text, std::uint64_t basis = kFnvOffsetBasis) {
  std::uint64_t hash = basis;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

} // namespace dtsim::io
