#pragma once
// Shipped data files (GPU profiles, frameworks, cloud instances, failure presets) compiled into the binary by
// tools/cmake/embed_json.cmake, so that dtsim runs from anywhere: each layer's embedded.hpp declares its list.
#include <string>

namespace dtsim::io {
struct EmbeddedFile {
  std::string stem; // file name without .json, e.g. "aws.p4d.24xlarge"
  std::string text;
};
} // namespace dtsim::io
