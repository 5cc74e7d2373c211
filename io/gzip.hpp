#pragma once
// gzip (RFC 1952) of a text in memory, for outputs written compressed (a trace named *.json.gz). The header carries no
// time or file name, so the same text always gives the same bytes.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dtsim::io {

std::string gzip(std::string_view text);
// Whether the bytes begin as gzip does (its magic number 1f 8b, RFC 1952 section 2.3.1).
bool is_gzip(std::string_view bytes);
// The length of the text a gzip file holds, from its trailer's ISIZE (the length modulo 2^32: exact under 4 GiB)
// without inflating it; nullopt where the file is not gzip or cannot be read.
std::optional<std::uint64_t> gzip_text_size(const std::filesystem::path& file);
// The text back (for tests and readers); throws std::runtime_error on data that is not gzip, or that would inflate
// past `max_bytes` (a small file can hold gigabytes of zeros).
std::string gunzip(std::string_view compressed, std::size_t max_bytes = static_cast<std::size_t>(-1));

} // namespace dtsim::io
