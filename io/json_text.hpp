#pragma once
// Reading the text of an input file and parsing it as JSON, the same way for every reader (scenarios, GPU
// profiles, measurements, instances, validation cases), with the limits that keep hostile input from crashing or
// exhausting the machine: a size limit on the file, a nesting limit, numbers that fit a double, no duplicate keys.
// Each reader turns these errors into its own error type (file, JSON pointer, message).
#include "io/error.hpp"
#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dtsim::io {

// The largest input file read: scenarios and measurement files are kilobytes; a model listed layer by layer or a
// probe's output runs to a few megabytes.
inline constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;
// Scenarios nest a few levels; a document nested thousands deep would overflow the stack of everything that walks
// it (the error messages that quote a value included).
inline constexpr int kMaxJsonDepth = 64;

// Why a file could not be read; the message does not repeat the path.
class FileError : public InputError {
public:
  using InputError::InputError;
};

// Why a text is not acceptable JSON: the pointer of the offending value ("" for the document or a syntax error)
// and the message, which gives line and column where the text has them.
class JsonTextError : public InputError {
public:
  JsonTextError(std::string pointer, const std::string& message) : InputError(message), pointer_(std::move(pointer)) {}
  const std::string& pointer() const { return pointer_; }

private:
  std::string pointer_;
};

// The whole file, at most `max_bytes` (a larger one, /dev/zero included, is refused without reading it all).
// `what` names the kind of file in messages ("scenario", "GPU profile"). Throws FileError.
std::string read_text_file(const std::filesystem::path& path, std::string_view what,
                           std::size_t max_bytes = kMaxInputBytes);

// Parses a whole document. Throws JsonTextError for malformed JSON (with line and column), nesting deeper than
// kMaxJsonDepth, a number beyond the range of a double, or a key given twice in one object (with both lines).
nlohmann::json parse_json(std::string_view text);

// Parses a document whose bulk is one array (a Chrome trace's "traceEvents"), handing each of its elements to
// `on_element` (the element and its index) as soon as it is read and keeping none: memory stays that of one element,
// not of the document's tree (several times its text). The array is the root object's `array_key`, or the root itself
// when that is an array. Returns the rest of the document, the array left empty. Throws JsonTextError as parse_json
// does, for malformed JSON, too deep a nesting or a number beyond a double (a key given twice is not looked for), and
// whatever `on_element` throws.
nlohmann::json parse_json_streaming(std::string_view text, std::string_view array_key,
                                    const std::function<void(const nlohmann::json&, std::size_t)>& on_element);

// One JSON pointer reference token, escaped as RFC 6901 says (~ -> ~0, / -> ~1).
std::string escape_pointer_token(std::string_view token);
// "/a/b" extended by one reference token, escaped.
std::string append_pointer(const std::string& pointer, std::string_view token);

// Whether the bytes are valid UTF-8 (every JSON string dtsim reads or writes must be).
bool is_utf8(std::string_view text);

} // namespace dtsim::io
