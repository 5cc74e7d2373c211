// The measurement file: records to JSON (nlohmann, keys in the order they were set) and an atomic write.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record.hpp"

namespace dtsim::probe {

using Json = nlohmann::ordered_json;

Json to_json(const Stats& stats);
Json to_json(const Record& record); // its fields, then "stats", then "check": "passed" when checked
Json to_json(const std::vector<Record>& records);

// Fails (ProbeError) now, before minutes of measuring, if `path`'s directory cannot take the file.
void check_writable(const std::string& path);
// Writes `text` to a temporary file in `path`'s directory, flushes it to disk and renames it over `path`: readers
// see the old file or the whole new one, never a part.
void write_atomically(const std::string& path, const std::string& text);

} // namespace dtsim::probe
