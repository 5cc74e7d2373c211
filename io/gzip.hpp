#pragma once
// gzip (RFC 1952) of a text in memory, for outputs written compressed (a trace named *.json.gz). The header carries no
// time or file name, so the same text always gives the same bytes.
#include <string>
#include <string_view>

namespace dtsim::io {

std::string gzip(std::string_view text);
// The text back (for tests and readers); throws std::runtime_error on data that is not gzip.
std::string gunzip(std::string_view compressed);

} // namespace dtsim::io
