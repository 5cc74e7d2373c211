#pragma once
// Suggestions for a mistyped name: a scenario's field or preset, a subcommand, an option. Names the word abbreviates,
// else names within a small edit distance (Levenshtein), case ignored.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::io {

// The text with ASCII letters in lower case (names compared case ignored).
std::string lowercase(std::string_view text);
// "\"a\", \"b\", \"c\"".
std::string quoted_list(const std::vector<std::string>& names);
// Known names within a small edit distance of `word` (or extending it), best first; empty if none is close. The
// distance allowed grows with the word (a change of case for one or two letters, 1 edit up to four, 2 beyond), and is
// at least `min_edits`: a command line's few short names ("rn" for "run") take 1.
std::vector<std::string> close_matches(std::string_view word, const std::vector<std::string>& known,
                                       std::size_t min_edits = 0);
// "; did you mean \"x\"?" or "; did you mean \"x\" or \"y\"?" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& known, std::size_t min_edits = 0);

} // namespace dtsim::io
