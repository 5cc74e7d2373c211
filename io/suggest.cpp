#include "io/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace dtsim::io {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += '"' + n + '"';
  }
  return out;
}

std::vector<std::string> close_matches(std::string_view word, const std::vector<std::string>& known,
                                       std::size_t min_edits) {
  const std::string w = lowercase(word);
  if (w.empty()) return {};
  // The name itself in other case ("H100-SXM" for "h100-sxm") before any name it abbreviates.
  for (const auto& k : known)
    if (lowercase(k) == w && k != word) return {k};
  std::vector<std::string> out;
  // Names that the word abbreviates ("a100" -> "a100-40gb", "a100-80gb"; "node" -> "nodes").
  if (w.size() >= 3)
    for (const auto& k : known)
      if (lowercase(k).starts_with(w) && lowercase(k) != w) out.push_back(k);
  if (!out.empty() && out.size() <= 3) return out;
  out.clear();
  // Otherwise names close in spelling (case ignored): 2 edits for long words, 1 for short ones, and only a
  // change of case for one or two letters.
  const std::size_t limit = std::max<std::size_t>(min_edits, w.size() <= 2 ? 0 : w.size() <= 4 ? 1 : 2);
  std::size_t best = limit + 1;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(w, lowercase(k));
    if (d < best) {
      best = d;
      out.clear();
    }
    if (d == best) out.push_back(k);
  }
  return out;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& known, std::size_t min_edits) {
  const auto matches = close_matches(word, known, min_edits);
  if (matches.empty()) return {};
  std::string out = "; did you mean ";
  for (std::size_t i = 0; i < matches.size(); ++i) {
    if (i > 0) out += i + 1 == matches.size() ? " or " : ", ";
    out += '"' + matches[i] + '"';
  }
  return out + "?";
}

} // namespace dtsim::io
