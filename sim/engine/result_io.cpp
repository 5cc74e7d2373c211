// Binary encoding of ReplayResult: the child process writes it, the parent reads it. Both ends are
// the same binary, so the encoding is plain native-endian values with length prefixes.
#include "sim/engine/engine.hpp"

#include <cstring>
#include <type_traits>

namespace dtsim::engine {
namespace {

class Writer {
public:
  template <class T> void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T> void values(const std::vector<T>& v) {
    value<std::uint64_t>(v.size());
    if (!v.empty()) out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void text(const std::string& s) {
    value<std::uint64_t>(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class Reader {
public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <class T> T value() {
    T v;
    need(sizeof v);
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  template <class T> std::vector<T> values() {
    const auto n = value<std::uint64_t>();
    if (n > (in_.size() - pos_) / sizeof(T)) need(in_.size() + 1); // n * sizeof(T) would overflow or overrun
    std::vector<T> v(n);
    // An empty vector's data() may be null, and memcpy from or to null is undefined even for 0 bytes.
    if (n > 0) std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }
  std::string text() {
    auto n = value<std::uint64_t>();
    need(n);
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

private:
  void need(std::size_t n) const {
    if (n > in_.size() - pos_) throw std::runtime_error("truncated simulation result from the child process");
  }
  const std::string& in_;
  std::size_t pos_ = 0;
};

} // namespace

std::string encode(const ReplayResult& result) {
  Writer w;
  w.value(result.simulated_seconds);
  w.value(result.transfers);
  w.value(result.replayed_iterations);
  w.value(result.repeat_period);
  w.value<std::uint64_t>(result.ranks.size());
  for (const auto& rank : result.ranks) {
    w.value(rank.simulated);
    w.values(rank.iteration_end);
    w.values(rank.bytes_sent);
    for (const auto& stream : rank.streams)
      w.values(stream);
    w.value(rank.bytes_received);
    w.value(rank.pushes_sent);
    w.value(rank.pushes_received);
  }
  w.value<std::uint64_t>(result.servers.size());
  for (const auto& server : result.servers) {
    w.value(server.endpoint);
    w.value(server.bytes_received);
    w.value(server.bytes_sent);
    w.value(server.pushes);
    w.value(server.dropped);
    w.values(server.round_ends);
    w.values(server.updates);
  }
  w.value<std::uint64_t>(result.links.size());
  for (const auto& link : result.links) {
    w.text(link.name);
    w.value(link.bandwidth);
    w.value(link.bytes);
  }
  w.values(result.link_samples.times);
  w.values(result.link_samples.bytes);
  return w.take();
}

ReplayResult decode(const std::string& bytes) {
  Reader r(bytes);
  ReplayResult result;
  result.simulated_seconds = r.value<double>();
  result.transfers = r.value<std::uint64_t>();
  result.replayed_iterations = r.value<int>();
  result.repeat_period = r.value<int>();
  result.ranks.resize(r.value<std::uint64_t>());
  for (auto& rank : result.ranks) {
    rank.simulated = r.value<bool>();
    rank.iteration_end = r.values<double>();
    rank.bytes_sent = r.values<double>();
    for (auto& stream : rank.streams)
      stream = r.values<Interval>();
    rank.bytes_received = r.value<double>();
    rank.pushes_sent = r.value<std::uint64_t>();
    rank.pushes_received = r.value<std::uint64_t>();
  }
  result.servers.resize(r.value<std::uint64_t>());
  for (auto& server : result.servers) {
    server.endpoint = r.value<int>();
    server.bytes_received = r.value<double>();
    server.bytes_sent = r.value<double>();
    server.pushes = r.value<std::uint64_t>();
    server.dropped = r.value<std::uint64_t>();
    server.round_ends = r.values<double>();
    server.updates = r.values<AppliedUpdate>();
  }
  result.links.resize(r.value<std::uint64_t>());
  for (auto& link : result.links) {
    link.name = r.text();
    link.bandwidth = r.value<double>();
    link.bytes = r.value<double>();
  }
  result.link_samples.times = r.values<double>();
  result.link_samples.bytes = r.values<double>();
  return result;
}

} // namespace dtsim::engine
