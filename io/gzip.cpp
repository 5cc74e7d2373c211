#include "io/gzip.hpp"

#include <fstream>

#include <zlib.h>

#include <stdexcept>

namespace dtsim::io {
namespace {

// zlib's window bits: 15 (32 KiB) + 16 asks deflate for a gzip wrapper, + 32 lets inflate read zlib or gzip.
constexpr int kGzipWindow = 15 + 16;
constexpr int kAnyWindow = 15 + 32;

} // namespace

std::string gzip(std::string_view text) {
  if (text.size() > 0xffffffffu) throw std::runtime_error("gzip: over 4 GiB in one piece");
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: zlib could not start");
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data())); // zlib's API is not const-correct
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH); // one call: the output holds deflateBound's worst case
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("gzip: compression did not finish");
  return out;
}

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::optional<std::uint64_t> gzip_text_size(const std::filesystem::path& file) {
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  std::ifstream in(file, std::ios::binary);
  char head[2] = {0, 0};
  if (error || size < 18 || !in.read(head, 2) || !is_gzip(std::string_view(head, 2))) return std::nullopt;
  unsigned char isize[4] = {0, 0, 0, 0}; // little-endian, the file's last four bytes
  in.seekg(static_cast<std::streamoff>(size) - 4);
  if (!in.read(reinterpret_cast<char*>(isize), 4)) return std::nullopt;
  return std::uint64_t{isize[0]} | std::uint64_t{isize[1]} << 8 | std::uint64_t{isize[2]} << 16 |
         std::uint64_t{isize[3]} << 24;
}

std::string gunzip(std::string_view compressed, std::size_t max_bytes) {
  if (compressed.size() > 0xffffffffu) throw std::runtime_error("gunzip: over 4 GiB in one piece");
  z_stream z{};
  if (inflateInit2(&z, kAnyWindow) != Z_OK) throw std::runtime_error("gunzip: zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[1 << 16];
  int status = Z_OK;
  while (status == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      throw std::runtime_error("gunzip: inflates past the size limit");
    }
    if (status == Z_BUF_ERROR && z.avail_in == 0) break; // truncated input
  }
  inflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("gunzip: not gzip data, or truncated");
  return out;
}

} // namespace dtsim::io
