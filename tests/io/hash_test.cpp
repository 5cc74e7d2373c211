// FNV-1a, 64 bits, against the published test vectors (Fowler, Noll and Vo, "FNV hash" test suite: the offset basis
// for the empty string, 0xaf63dc4c8601ec8c for "a", 0x85944171f73967e8 for "foobar").
#include "io/hash.hpp"

#include <gtest/gtest.h>

namespace dtsim::io {
namespace {

TEST(Fnv1a64, PublishedTestVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  static_assert(fnv1a64("") == kFnvOffsetBasis);
}

// Another basis is another hash of the same text (the resume keys' second half).
TEST(Fnv1a64, AnotherBasisAnotherHash) {
  EXPECT_NE(fnv1a64("a", 0x84222325cbf29ce4ULL), fnv1a64("a"));
}

} // namespace
} // namespace dtsim::io
