#pragma once
// gzip (RFC 1952) of a text in memory, for outputs written compressed (a trace named *.json.gz). The header carries no
// time or file name, so the same text always gives the same bytes.
#include <cstddef>
#include <string>
#include <string_view>

namespace dtsim::io {

std::string gzip(std::string_view text);
// The text back (for tests and readers); throws std::runtime_error on data that is not gzip, or that would inflate
// past `max_bytes` (a small file can hold gigabytes of zeros).
std::string gunzip(std::string_view compressed, std::size_t max_bytes = static_cast<std::size_t>(-1));

} // namespace dtsim::io
