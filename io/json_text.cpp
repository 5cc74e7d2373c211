#include "io/json_text.hpp"

#include <functional>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

namespace dtsim::io {
namespace {

using nlohmann::json;

// 1-based line and column of the byte at `index` (clamped to the text).
std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t index) {
  index = std::min(index, text.size());
  const auto before = text.substr(0, index);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const auto line_start = before.rfind('\n');
  return {line, index - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1};
}

// nlohmann reports the byte after the last one it read; point at the end of the offending token rather than at the
// whitespace the lexer read past it.
std::string describe_parse_error(std::string_view text, const json::parse_error& e) {
  std::size_t end = std::min<std::size_t>(e.byte, text.size());
  while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  std::size_t index = end > 0 ? end - 1 : 0;
  if (e.byte > text.size()) index = end; // unexpected end of input: just after the last character
  const auto [line, column] = line_and_column(text, index);
  std::string reason = e.what();
  if (const auto colon = reason.find(": "); colon != std::string::npos)
    reason = reason.substr(colon + 2); // drop "[json.exception.parse_error.101] parse error at ...: "
  return fmt::format("malformed JSON at line {}, column {}: {}", line, column, reason);
}

// An input iterator over the text that records how far the parser has read, so that the parse callback knows the
// position of the key it is shown (nlohmann's callback is given no position).
struct TrackedChars {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* at = nullptr;
  const char** furthest = nullptr;

  reference operator*() const { return *at; }
  TrackedChars& operator++() {
    *furthest = ++at;
    return *this;
  }
  TrackedChars operator++(int) {
    auto copy = *this;
    ++*this;
    return copy;
  }
  bool operator==(const TrackedChars& other) const { return at == other.at; }
};

// One open object or array while parsing: the next element's index or key, and the keys seen so far with the offset
// just after each (a list: objects hold a few keys, and a list is faster to search than a tree). Its pointer is built
// only for an error, from the open containers' current tokens (a trace of a million events would otherwise build a
// million pointer strings).
struct Container {
  bool array = false;
  std::size_t index = 0;
  std::string key;
  std::vector<std::pair<std::string, std::size_t>> keys;
};

// nlohmann's SAX events, passed on to its own DOM builder, with the checks dtsim adds: nesting depth and keys given
// twice. (Its parse callback does the same checks but builds the document about fifteen times slower: a 35 MB trace
// took 14 s.)
class Tracker {
public:
  Tracker(json& root, std::string_view text, const char** furthest) : dom_(root), text_(text), furthest_(furthest) {}

  bool null() { return value(dom_.null()); }
  bool boolean(bool v) { return value(dom_.boolean(v)); }
  bool number_integer(json::number_integer_t v) { return value(dom_.number_integer(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(dom_.number_unsigned(v)); }
  bool number_float(json::number_float_t v, const std::string& s) { return value(dom_.number_float(v, s)); }
  bool string(json::string_t& v) { return value(dom_.string(v)); }
  bool binary(json::binary_t& v) { return value(dom_.binary(v)); }
  bool start_object(std::size_t n) { return open(false) && dom_.start_object(n); }
  bool start_array(std::size_t n) { return open(true) && dom_.start_array(n); }
  bool end_object() { return close() && dom_.end_object(); }
  bool end_array() { return close() && dom_.end_array(); }
  bool key(json::string_t& k) {
    on_key(k);
    return dom_.key(k);
  }
  template <class Exception> bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e); // throws it
  }

private:
  bool value(bool ok) {
    next_element();
    return ok;
  }
  bool open(bool array) {
    if (open_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      throw JsonTextError(pointer_of(open_.size()), fmt::format("arrays and objects nested more than {} deep; a dtsim "
                                                                "input needs a few",
                                                                kMaxJsonDepth));
    open_.push_back({array, 0, {}, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    next_element();
    return true;
  }
  // The pointer of the element the first `depth` open containers lead to (their current index or key).
  std::string pointer_of(std::size_t depth) const {
    std::string pointer;
    for (std::size_t i = 0; i < depth; ++i)
      pointer = append_pointer(pointer, open_[i].array ? std::to_string(open_[i].index) : open_[i].key);
    return pointer;
  }
  void next_element() {
    if (!open_.empty() && open_.back().array) ++open_.back().index;
  }
  void on_key(const std::string& key) {
    auto& object = open_.back();
    const std::size_t offset = static_cast<std::size_t>(*furthest_ - text_.data());
    object.key = key;
    const auto it = std::find_if(object.keys.begin(), object.keys.end(), [&](const auto& k) { return k.first == key; });
    if (it == object.keys.end()) {
      object.keys.emplace_back(key, offset);
      return;
    }
    // The offset is just past the closing quote: step back inside the key for its line.
    const auto first = line_and_column(text_, it->second - 1).first;
    const auto again = line_and_column(text_, offset - 1).first;
    throw JsonTextError(pointer_of(open_.size()),
                        fmt::format("the key \"{}\" is given twice in one object (line {} and line {}); JSON keeps "
                                    "only one, so say it once",
                                    key, first, again));
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::string_view text_;
  const char** furthest_;
  std::vector<Container> open_;
};

} // namespace

std::string read_text_file(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw FileError(fmt::format("cannot read the {}: it is a directory", what));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(fmt::format("cannot read the {}: {}", what, std::strerror(errno)));
  // Read at most one byte more than the limit: enough to know the file is too large, whatever its size.
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (text.size() <= max_bytes) {
    in.read(chunk.data(), static_cast<std::streamsize>(std::min(chunk.size(), max_bytes + 1 - text.size())));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (!in) break;
  }
  if (in.bad()) throw FileError(fmt::format("cannot read the {}: a read error", what));
  if (text.size() > max_bytes)
    throw FileError(fmt::format("the {} is larger than {} MiB; dtsim inputs are kilobytes to a few megabytes", what,
                                max_bytes >> 20));
  return text;
}

json parse_json(std::string_view text) {
  const char* furthest = text.data();
  json root;
  Tracker tracker(root, text, &furthest);
  try {
    json::sax_parse(TrackedChars{text.data(), &furthest}, TrackedChars{text.data() + text.size(), &furthest}, &tracker);
    return root;
  } catch (const json::parse_error& e) {
    throw JsonTextError("", describe_parse_error(text, e));
  } catch (const json::out_of_range&) { // 406: a number literal beyond the range of a double (1e400)
    // The lexer has read one character past the number (and maybe whitespace): step back to the number itself.
    const auto in_number = [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || std::strchr("+-.eE", c);
    };
    const char* end = furthest;
    while (end > text.data() && !in_number(end[-1]))
      --end;
    const char* start = end;
    while (start > text.data() && in_number(start[-1]))
      --start;
    const auto [line, column] = line_and_column(text, static_cast<std::size_t>(start - text.data()));
    throw JsonTextError("", fmt::format("a number beyond the range of a double (about 1.8e308) at line {}, column {}: "
                                        "{}",
                                        line, column, std::string_view(start, static_cast<std::size_t>(end - start))));
  }
}

json parse_json_streaming(std::string_view text, std::string_view array_key,
                          const std::function<void(const json&, std::size_t)>& on_element) {
  // nlohmann's parser callback: depth is the depth of the event's container (0: the root). An element of the streamed
  // array ends at depth 2 under the root object's `array_key`, or at depth 1 in a root array; it is handed over and
  // dropped (the callback returning false), so the tree never holds more than one.
  std::string key_at_root;
  bool root_is_array = false;
  std::size_t index = 0;
  const auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    using Event = json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxJsonDepth)
      throw JsonTextError(
          "", fmt::format("arrays and objects nested more than {} deep; a dtsim input needs a few", kMaxJsonDepth));
    if (depth == 0 && event == Event::array_start) root_is_array = true;
    if (depth == 1 && event == Event::key) key_at_root = parsed.get<std::string>();
    const int element_depth = root_is_array ? 1 : 2;
    const bool in_array = root_is_array || key_at_root == array_key;
    const bool element_ends =
        depth == element_depth && (event == Event::object_end || event == Event::array_end || event == Event::value);
    if (!in_array || !element_ends) return true;
    on_element(parsed, index++);
    return false;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    throw JsonTextError("", describe_parse_error(text, e));
  } catch (const json::out_of_range&) { // 406: a number literal beyond the range of a double (1e400)
    throw JsonTextError("", "a number beyond the range of a double (about 1.8e308)");
  }
}

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string append_pointer(const std::string& pointer, std::string_view token) {
  return pointer + "/" + escape_pointer_token(token);
}

bool is_utf8(std::string_view text) {
  // nlohmann checks UTF-8 when it serializes a string: the same check dtsim's JSON output would fail later.
  try {
    (void)json(std::string(text)).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

} // namespace dtsim::io
