#include "json_out.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include "errors.hpp"

namespace dtsim::probe {

Json to_json(const Stats& s) {
  Json j;
  j["runs"] = s.runs;
  j["median"] = s.median;
  j["mean"] = s.mean;
  j["min"] = s.min;
  j["max"] = s.max;
  j["stddev"] = s.stddev;
  return j;
}

Json to_json(const Record& r) {
  Json j = Json::object();
  for (const auto& [key, value] : r.fields)
    std::visit([&, k = key](const auto& v) { j[k] = v; }, value);
  if (r.stats) j["stats"] = to_json(*r.stats);
  if (r.checked) j["check"] = "passed";
  return j;
}

Json to_json(const std::vector<Record>& records) {
  Json j = Json::array();
  for (const auto& r : records)
    j.push_back(to_json(r));
  return j;
}

namespace {

std::string temp_name(const std::string& path) {
  const std::filesystem::path p(path);
  const auto dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::string name = ".";
  name += p.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  return (dir / name).string();
}

std::string errno_text() {
  return std::strerror(errno);
}

} // namespace

void check_writable(const std::string& path) {
  if (path.empty()) throw ProbeError("--out needs a file name");
  if (std::filesystem::is_directory(path)) throw ProbeError("--out " + path + " is a directory");
  const std::string tmp = temp_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) throw ProbeError("cannot write next to " + path + ": " + tmp + ": " + errno_text());
  ::close(fd);
  ::unlink(tmp.c_str());
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = temp_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw ProbeError("cannot create " + tmp + ": " + errno_text());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw ProbeError("cannot write " + tmp + ": " + err);
    }
    done += static_cast<std::size_t>(n);
  }
  const int synced = ::fsync(fd);
  const std::string sync_err = synced != 0 ? errno_text() : "";
  if (::close(fd) != 0 || synced != 0) {
    const std::string err = synced != 0 ? sync_err : errno_text();
    ::unlink(tmp.c_str());
    throw ProbeError("cannot write " + tmp + ": " + err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = errno_text();
    ::unlink(tmp.c_str());
    throw ProbeError("cannot rename " + tmp + " to " + path + ": " + err);
  }
}

} // namespace dtsim::probe
