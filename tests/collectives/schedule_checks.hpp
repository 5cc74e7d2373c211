#pragma once
// Helpers shared by the collectives tests: the requests every (operation, algorithm) is tested with, the
// pair-matching check every schedule must pass, byte totals, and a lock-step reference executor.
#include "sim/collectives/schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::collectives::checks {

inline constexpr Operation kOperations[] = {Operation::all_reduce,   Operation::reduce_scatter, Operation::all_gather,
                                            Operation::broadcast,    Operation::reduce,         Operation::all_to_all,
                                            Operation::all_to_all_v, Operation::barrier,        Operation::send_recv};

struct Case {
  Operation op;
  Algorithm algorithm;
};

inline std::vector<Case> supported_cases() {
  std::vector<Case> cases;
  for (auto op : kOperations)
    for (auto a : supported_algorithms(op))
      if (a != Algorithm::in_switch) // its peers are switches, not positions: in_switch_test.cpp
        cases.push_back({op, a});
  return cases;
}

inline std::string name_of(const Case& c) {
  std::string s = std::string(to_string(c.op)) + "_" + std::string(to_string(c.algorithm));
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

// Positions per node used for hierarchical requests: the largest of 8, 4, 2 that divides n with more than one
// node, else 1.
inline int gpus_per_node(int n) {
  for (int g : {8, 4, 2})
    if (n % g == 0 && n > g) return g;
  return 1;
}

// Node indices in a scrambled order: position p is on node (p mod N), which gets index 7 (p mod N) + 3 when
// p mod N is even and 1000 - (p mod N) otherwise, so nodes are neither contiguous nor numbered in order.
inline std::vector<int> scrambled_nodes(int n, int per_node) {
  const int nodes = n / per_node;
  std::vector<int> node_of(n);
  for (int p = 0; p < n; ++p) {
    const int k = p % nodes;
    node_of[p] = k % 2 == 0 ? 7 * k + 3 : 1000 - k;
  }
  return node_of;
}

// A deterministic uneven matrix with empty entries (all-to-all-v).
inline std::vector<double> uneven_matrix(int n, double scale) {
  std::vector<double> m(static_cast<std::size_t>(n) * n);
  std::uint64_t x = 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(n);
  for (auto& v : m) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto r = static_cast<double>((x >> 33) % 1000);
    v = r < 200 ? 0 : std::floor(r / 1000 * scale);
  }
  return m;
}

inline Request request_for(const Case& c, int n, double bytes, int root = 0) {
  Request r;
  r.op = c.op;
  r.algorithm = c.algorithm;
  r.ranks = n;
  r.bytes = bytes;
  r.root = root % n;
  if (c.algorithm == Algorithm::hierarchical) r.node_of = scrambled_nodes(n, gpus_per_node(n));
  if (c.op == Operation::all_to_all_v) r.matrix = uneven_matrix(n, bytes);
  return r;
}

// Every ordered pair (a, b): the bytes a sends to b, in posting order, equal the bytes b receives from a, and
// each match happens in the same step on both sides (so running steps in lock step never deadlocks).
inline ::testing::AssertionResult pairs_match(const Schedule& s) {
  using Key = std::pair<int, int>;
  std::map<Key, std::vector<std::pair<int, double>>> sent, received;
  const int n = s.ranks();
  for (int k = 0; k < s.step_count(); ++k)
    for (int p = 0; p < n; ++p) {
      const Step st = s.step(p, k);
      for (const auto& t : st.sends) {
        if (t.peer < 0 || t.peer >= n || t.peer == p)
          return ::testing::AssertionFailure() << "position " << p << " step " << k << " sends to " << t.peer;
        sent[{p, t.peer}].push_back({k, t.bytes});
      }
      for (const auto& t : st.recvs) {
        if (t.peer < 0 || t.peer >= n || t.peer == p)
          return ::testing::AssertionFailure() << "position " << p << " step " << k << " receives from " << t.peer;
        received[{t.peer, p}].push_back({k, t.bytes});
      }
    }
  for (const auto& [key, sends] : sent) {
    const auto& recvs = received[key];
    if (sends.size() != recvs.size())
      return ::testing::AssertionFailure() << key.first << " -> " << key.second << ": " << sends.size() << " sends but "
                                           << recvs.size() << " receives";
    for (std::size_t i = 0; i < sends.size(); ++i)
      if (sends[i] != recvs[i])
        return ::testing::AssertionFailure() << key.first << " -> " << key.second << " transfer " << i << ": sent "
                                             << sends[i].second << " bytes in step " << sends[i].first << ", received "
                                             << recvs[i].second << " in step " << recvs[i].first;
  }
  for (const auto& [key, recvs] : received)
    if (!recvs.empty() && sent.find(key) == sent.end())
      return ::testing::AssertionFailure() << key.first << " -> " << key.second << ": receives without sends";
  return ::testing::AssertionSuccess();
}

struct Totals {
  std::vector<double> sent, received, reduced;
  std::vector<int> latency_terms;
  double sent_total = 0, reduced_total = 0;
  std::map<std::pair<int, int>, double> pair_bytes; // (from, to) -> bytes
  bool integral = true;                             // every transfer a whole number of bytes
};

inline Totals totals(const Schedule& s) {
  Totals t;
  const int n = s.ranks();
  t.sent.assign(n, 0);
  t.received.assign(n, 0);
  t.reduced.assign(n, 0);
  t.latency_terms.assign(n, 0);
  for (int k = 0; k < s.step_count(); ++k)
    for (int p = 0; p < n; ++p) {
      const Step st = s.step(p, k);
      for (const auto& x : st.sends) {
        t.sent[p] += x.bytes;
        t.pair_bytes[{p, x.peer}] += x.bytes;
        t.integral = t.integral && std::floor(x.bytes) == x.bytes;
      }
      for (const auto& x : st.recvs)
        t.received[p] += x.bytes;
      t.reduced[p] += st.reduce_bytes;
      t.latency_terms[p] += st.latency_terms;
    }
  for (int p = 0; p < n; ++p) {
    t.sent_total += t.sent[p];
    t.reduced_total += t.reduced[p];
  }
  return t;
}

// Lock-step reference executor: all positions run step k together; the step lasts as long as its slowest
// position, alpha (when it posts a transfer) + max(max(bytes sent, bytes received) / B, reduced bytes * gamma):
// the reduction overlaps the step's receives (NCCL's recvReduceSend reduces slices as they arrive).
inline double lock_step_time(const Schedule& s, double alpha, double bandwidth, double gamma) {
  double total = 0;
  for (int k = 0; k < s.step_count(); ++k) {
    double slowest = 0;
    for (int p = 0; p < s.ranks(); ++p) {
      const Step st = s.step(p, k);
      double out = 0, in = 0;
      for (const auto& x : st.sends)
        out += x.bytes;
      for (const auto& x : st.recvs)
        in += x.bytes;
      const bool posts = !st.sends.empty() || !st.recvs.empty();
      slowest =
          std::max(slowest, (posts ? alpha : 0) + std::max(std::max(out, in) / bandwidth, st.reduce_bytes * gamma));
    }
    total += slowest;
  }
  return total;
}

} // namespace dtsim::collectives::checks
