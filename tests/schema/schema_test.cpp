// docs/scenario.schema.json, the JSON Schema that editors check scenario files against, held to dtsim's reader: every
// shipped scenario validates, every case of tests/schema/bad_scenarios.json meets the schema as its array says, and the
// reader (the dtsim binary) agrees with each case, so that the schema can drift from neither the files nor the reader.
//
// bad_scenarios.json: "valid" cases pass the schema and the reader; "invalid" cases (one structural defect each) fail
// both, the schema with an error at "pointer" and the reader naming "pointer"; "reader_only" cases pass the schema and
// fail the reader at "pointer", for the reason in "why": what a schema cannot express (arithmetic across fields, the
// GPU profile's contents, the range of a unit string).
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1 // an unreadable schema throws, and fails its test, instead of aborting the run
#endif

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
// valijson's JSON pointer code trips GCC 12's -Wrestrict false positive (GCC bug 105651) when inlined at -O3.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef DTSIM_SOURCE_DIR
#error "DTSIM_SOURCE_DIR must name the repository root (-DDTSIM_SOURCE_DIR='\"/path/to/dtsim\"')"
#endif
#ifndef DTSIM_BINARY
#error "DTSIM_BINARY must name the built dtsim binary (-DDTSIM_BINARY='\"/path/to/build/dtsim\"')"
#endif

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRoot = DTSIM_SOURCE_DIR;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return json::parse(in);
}

// The schema parsed once: every test validates against the same valijson::Schema.
const valijson::Schema& schema() {
  static const auto parsed = [] {
    auto s = std::make_unique<valijson::Schema>(); // a Schema cannot be copied or moved
    const json document = read_json(kRoot / "docs/scenario.schema.json");
    valijson::SchemaParser(valijson::SchemaParser::kDraft7)
        .populateSchema(valijson::adapters::NlohmannJsonAdapter(document), *s);
    return s;
  }();
  return *parsed;
}

// One JSON pointer token (RFC 6901): ~ and / escaped.
std::string escape_token(const std::string& token) {
  std::string out;
  for (const char c : token)
    out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// `pointer` with one more token. Appended in two steps: "/" + token as one expression trips GCC 12's -Wrestrict false
// positive (GCC bug 105651), as in sim/scenario/strategy.cpp.
std::string child(std::string pointer, const std::string& token) {
  pointer += '/';
  pointer += escape_token(token);
  return pointer;
}

struct SchemaError {
  std::string pointer; // where valijson puts it
  std::string description;
};

// The name quoted after `prefix` in a valijson message, or "".
std::string quoted_after(const std::string& description, const std::string& prefix) {
  const auto at = description.find(prefix);
  if (at == std::string::npos) return {};
  const auto start = at + prefix.size();
  return description.substr(start, description.find('\'', start) - start);
}

// The pointers the errors stand for, as the reader names them. valijson reports a missing property and an unknown one
// at the object that should hold it, naming the property; and a property whose schema is false (a key the rest of the
// object rules out) only as "Failed to validate against schema associated with property name 'X'" at the object,
// with no error of its own below it.
std::set<std::string> pointers_of(const std::vector<SchemaError>& errors) {
  std::set<std::string> out;
  for (const auto& e : errors) {
    out.insert(e.pointer);
    for (const char* prefix : {"Missing required property '", "'additionalProperties' constraints: '"})
      if (const auto name = quoted_after(e.description, prefix); !name.empty()) out.insert(child(e.pointer, name));
  }
  for (const auto& e : errors) {
    const auto name = quoted_after(e.description, "associated with property name '");
    if (name.empty()) continue;
    const std::string property = child(e.pointer, name);
    const bool below = std::any_of(errors.begin(), errors.end(), [&](const SchemaError& other) {
      return other.pointer == property || other.pointer.starts_with(property + "/");
    });
    if (!below) out.insert(property);
  }
  return out;
}

// valijson's context is {"<root>", "[cluster]", "[nic]", "[0]", ...}: a JSON pointer without its escapes.
std::string pointer_of(const std::vector<std::string>& context) {
  std::string out;
  for (const auto& part : context)
    if (part != "<root>") out = child(out, part.size() >= 2 ? part.substr(1, part.size() - 2) : part);
  return out;
}

std::vector<SchemaError> validate(const json& document) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  std::vector<SchemaError> errors;
  if (validator.validate(schema(), valijson::adapters::NlohmannJsonAdapter(document), &results)) return errors;
  valijson::ValidationResults::Error e;
  while (results.popError(e))
    errors.push_back({pointer_of(e.context), e.description});
  if (errors.empty()) errors.push_back({"", "invalid, with no error reported"});
  return errors;
}

std::string describe(const std::vector<SchemaError>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += "\n  " + (e.pointer.empty() ? std::string("(root)") : e.pointer) + ": " + e.description;
  return out;
}

// `--set path=value` as sim/scenario/overrides.cpp applies it: dotted keys (array elements by number), intermediate
// objects created, the value JSON where it parses as JSON, else a string.
void apply_override(json& document, const std::string& assignment) {
  const auto eq = assignment.find('=');
  ASSERT_NE(eq, std::string::npos) << assignment;
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;
  json* at = &document;
  std::istringstream keys(path);
  for (std::string key; std::getline(keys, key, '.');)
    at = at->is_array() ? &at->at(std::stoul(key)) : &(*at)[key];
  *at = std::move(value);
}

// The scenario JSON the repository ships: scenarios/, tools/bench/ (the benchmarks' scenarios), any scenario file
// under docs/ and tests/data/, and the scenario each validation case of calibration/validation/ runs, with its
// overrides applied (a case names a scenario file and "set" overrides; collective and op cases run none).
std::vector<std::pair<std::string, json>> shipped_scenarios() {
  std::vector<std::pair<std::string, json>> out;
  const auto looks_like_a_scenario = [](const json& j) {
    return j.is_object() && j.contains("version") && j.contains("model") && j.contains("cluster");
  };
  for (const char* folder : {"scenarios", "tools/bench"})
    for (const auto& entry : fs::directory_iterator(kRoot / folder))
      if (entry.path().extension() == ".json")
        out.emplace_back(fs::relative(entry.path(), kRoot).string(), read_json(entry.path()));
  for (const char* folder : {"docs", "tests/data"})
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder))
      if (entry.path().extension() == ".json")
        if (auto j = read_json(entry.path()); looks_like_a_scenario(j))
          out.emplace_back(fs::relative(entry.path(), kRoot).string(), std::move(j));
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "calibration/validation")) {
    if (entry.path().extension() != ".json") continue;
    const json validation_case = read_json(entry.path());
    if (!validation_case.contains("scenario")) continue;
    json scenario = read_json(kRoot / validation_case["scenario"].get<std::string>());
    std::string name =
        fs::relative(entry.path(), kRoot).string() + " (" + validation_case["scenario"].get<std::string>();
    for (const auto& assignment : validation_case.value("set", json::array())) {
      apply_override(scenario, assignment.get<std::string>());
      name += " --set " + assignment.get<std::string>();
    }
    out.emplace_back(name + ")", std::move(scenario));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// The complete example of docs/scenario-format.md (its first jsonc block), its // notes removed.
json documented_example() {
  std::ifstream in(kRoot / "docs/scenario-format.md");
  std::string line, text;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```jsonc") {
      inside = true;
    } else if (inside && line == "```") {
      break;
    } else if (inside) {
      // A note starts at the first // outside a string (the example's strings hold no quotes of their own).
      bool in_string = false;
      std::size_t cut = line.size();
      for (std::size_t i = 0; i + 1 < line.size(); ++i) {
        if (line[i] == '"') in_string = !in_string;
        if (!in_string && line[i] == '/' && line[i + 1] == '/') {
          cut = i;
          break;
        }
      }
      text += line.substr(0, cut) + "\n";
    }
  }
  return json::parse(text);
}

const json& cases() {
  static const json parsed = read_json(kRoot / "tests/schema/bad_scenarios.json");
  return parsed;
}

struct Outcome {
  int status = -1;
  std::string output; // stdout and stderr together
};

// Runs a shell command line: its exit status and its output (stdout and stderr together).
Outcome capture(const std::string& command_line) {
  Outcome out;
  if (FILE* pipe = popen((command_line + " 2>&1").c_str(), "r")) {
    std::array<char, 4096> buffer{};
    for (std::size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
      out.output.append(buffer.data(), n);
    const int status = pclose(pipe);
    out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return out;
}

// Runs `dtsim COMMAND FILE` on the scenario, written to a file of its own.
Outcome run_dtsim(const std::string& command, const json& scenario) {
  std::string folder = (fs::temp_directory_path() / "dtsim-schema-test-XXXXXX").string();
  if (mkdtemp(folder.data()) == nullptr) return {-1, "mkdtemp failed"};
  const fs::path file = fs::path(folder) / "scenario.json";
  std::ofstream(file) << scenario.dump(2);
  const Outcome out = capture("'" DTSIM_BINARY "' " + command + " '" + file.string() + "'");
  fs::remove_all(folder);
  return out;
}

// Each case through the binary, eight at a time: a refusal takes a process start, and there are over a hundred.
std::vector<Outcome> run_all(const std::string& command, const std::vector<json>& scenarios) {
  std::vector<Outcome> out(scenarios.size());
  constexpr std::size_t kBatch = 8;
  for (std::size_t first = 0; first < scenarios.size(); first += kBatch) {
    std::vector<std::future<Outcome>> running;
    for (std::size_t i = first; i < std::min(first + kBatch, scenarios.size()); ++i)
      running.push_back(std::async(std::launch::async, run_dtsim, command, std::cref(scenarios[i])));
    for (std::size_t i = 0; i < running.size(); ++i)
      out[first + i] = running[i].get();
  }
  return out;
}

std::vector<json> scenarios_of(const std::initializer_list<const char*> arrays) {
  std::vector<json> out;
  for (const char* array : arrays)
    for (const auto& c : cases()[array])
      out.push_back(c["scenario"]);
  return out;
}

TEST(ScenarioSchema, IsADraft07SchemaValijsonReads) {
  const json document = read_json(kRoot / "docs/scenario.schema.json");
  EXPECT_EQ(document.value("$schema", ""), "http://json-schema.org/draft-07/schema#");
  EXPECT_EQ(document.value("$id", ""), "https://dtsim.dev/scenario.schema.json");
  EXPECT_FALSE(document.value("title", "").empty());
  EXPECT_FALSE(document.value("description", "").empty());
  // populateSchema throws on anything it cannot read: an unknown type, a $ref that resolves to nothing.
  EXPECT_NO_THROW(schema());
  // A schema that accepted anything would pass every shipped file.
  EXPECT_FALSE(validate(json::object()).empty());
  EXPECT_FALSE(validate(json::array()).empty());
}

// Editors show the description on hover: every property has one, outside the if/then/else and not of cross-field
// rules (which restate properties described where they are defined).
TEST(ScenarioSchema, EveryPropertyHasADescription) {
  std::vector<std::string> missing;
  const std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& at) {
    if (node.is_array())
      for (std::size_t i = 0; i < node.size(); ++i)
        walk(node[i], child(at, std::to_string(i)));
    if (!node.is_object()) return;
    if (const auto p = node.find("properties"); p != node.end() && p->is_object())
      for (const auto& [key, property] : p->items())
        if (property.is_object() && !property.contains("description"))
          missing.push_back(child(child(at, "properties"), key));
    for (const auto& [key, value] : node.items())
      if (key != "if" && key != "then" && key != "else" && key != "not") walk(value, child(at, key));
  };
  walk(read_json(kRoot / "docs/scenario.schema.json"), "#");
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

// `dtsim list WHAT`: the names a scenario can use, the first word of each row after the header, up to the first blank
// line; sorted, each once (a failure preset has a row per source).
std::vector<std::string> listed(const std::string& what) {
  std::istringstream lines(capture("'" DTSIM_BINARY "' list " + what).output);
  std::set<std::string> names;
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && !line.empty())
    names.insert(line.substr(0, line.find(' ')));
  return {names.begin(), names.end()};
}

// `dtsim list algorithms`' all-reduce row ("all-reduce       ring, double-binary-tree, ..."), and "auto".
std::vector<std::string> listed_all_reduce_algorithms() {
  std::istringstream lines(capture("'" DTSIM_BINARY "' list algorithms").output);
  std::set<std::string> names{"auto"};
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("all-reduce ")) {
      std::istringstream row(line.substr(line.find_first_not_of(' ', std::string("all-reduce").size())));
      for (std::string name; std::getline(row, name, ',');)
        names.insert(name.substr(name.find_first_not_of(' ')));
    }
  return {names.begin(), names.end()};
}

std::vector<std::string> sorted_strings(const json& array) {
  auto out = array.get<std::vector<std::string>>();
  std::sort(out.begin(), out.end());
  return out;
}

// The schema's lists of names are the ones dtsim knows: a profile, instance, model, failure preset or algorithm added
// to dtsim and not to the schema (or removed from dtsim and not from it) fails here rather than in someone's editor.
TEST(ScenarioSchema, NamesAreThoseDtsimLists) {
  const json document = read_json(kRoot / "docs/scenario.schema.json");
  const json& top = document["properties"];
  EXPECT_EQ(sorted_strings(document["definitions"]["gpu"]["anyOf"][0]["enum"]), listed("gpus"));
  EXPECT_EQ(sorted_strings(top["cluster"]["properties"]["instance"]["enum"]), listed("instances"));
  EXPECT_EQ(sorted_strings(top["model"]["properties"]["preset"]["enum"]), listed("models"));
  EXPECT_EQ(sorted_strings(top["failures"]["properties"]["preset"]["enum"]), listed("failures"));
  EXPECT_EQ(sorted_strings(top["training"]["properties"]["algorithm"]["enum"]), listed_all_reduce_algorithms());
}

TEST(ScenarioSchema, ShippedScenariosValidate) {
  const auto shipped = shipped_scenarios();
  std::set<std::string> names;
  for (const auto& [name, scenario] : shipped) {
    names.insert(name);
    const auto errors = validate(scenario);
    EXPECT_TRUE(errors.empty()) << name << ":" << describe(errors);
  }
  // The globs found the files (a wrong DTSIM_SOURCE_DIR would find none and pass).
  EXPECT_TRUE(names.count("scenarios/quickstart.json")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("tools/bench/resnet50-64-nodes.json")) << ::testing::PrintToString(names);
  EXPECT_GE(std::count_if(names.begin(), names.end(),
                          [](const std::string& n) { return n.starts_with("calibration/validation/"); }),
            10);
}

TEST(ScenarioSchema, DocumentedCompleteExampleValidates) {
  const json example = documented_example();
  ASSERT_TRUE(example.contains("cluster")) << example.dump(2);
  const auto errors = validate(example);
  EXPECT_TRUE(errors.empty()) << describe(errors);
}

TEST(ScenarioSchema, CaseFileIsWellFormed) {
  ASSERT_TRUE(cases().is_object());
  EXPECT_EQ(cases().size(), 3u) << "expected \"valid\", \"invalid\" and \"reader_only\"";
  EXPECT_GE(cases()["invalid"].size(), 20u);
  std::set<std::string> names;
  for (const char* array : {"valid", "invalid", "reader_only"})
    for (const auto& c : cases()[array]) {
      const std::string name = c.value("name", "");
      EXPECT_TRUE(names.insert(name).second) << "case named twice: " << name;
      EXPECT_TRUE(c.contains("scenario") && c["scenario"].is_object()) << name;
      if (std::string(array) != "valid") {
        EXPECT_TRUE(c.value("pointer", "").starts_with("/")) << name;
      }
      if (std::string(array) == "reader_only") {
        EXPECT_FALSE(c.value("why", "").empty()) << name;
      }
    }
}

TEST(ScenarioSchema, InvalidCasesFailAtTheirPointer) {
  for (const auto& c : cases()["invalid"]) {
    const std::string name = c["name"], pointer = c["pointer"];
    const auto errors = validate(c["scenario"]);
    ASSERT_FALSE(errors.empty()) << name << ": the schema accepts it";
    EXPECT_TRUE(pointers_of(errors).count(pointer))
        << name << ": no schema error at " << pointer << ":" << describe(errors);
  }
}

TEST(ScenarioSchema, ValidAndReaderOnlyCasesValidate) {
  for (const char* array : {"valid", "reader_only"})
    for (const auto& c : cases()[array]) {
      const auto errors = validate(c["scenario"]);
      EXPECT_TRUE(errors.empty()) << array << " case " << c["name"].get<std::string>() << ":" << describe(errors);
    }
}

// The reader refuses what the schema refuses, at the same pointer, and what the schema cannot see: a reader_only case
// it accepted would be a case that documents nothing.
TEST(ScenarioSchema, ReaderRefusesInvalidAndReaderOnlyCasesAtTheirPointer) {
  std::vector<const json*> all;
  for (const char* array : {"invalid", "reader_only"})
    for (const auto& c : cases()[array])
      all.push_back(&c);
  const auto outcomes = run_all("run", scenarios_of({"invalid", "reader_only"}));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string name = (*all[i])["name"], pointer = (*all[i])["pointer"];
    EXPECT_EQ(outcomes[i].status, 2) << name << ":\n" << outcomes[i].output;
    // "error: FILE: /pointer: what was expected"
    EXPECT_NE(outcomes[i].output.find(": " + pointer + ": "), std::string::npos)
        << name << ": expected the reader to name " << pointer << ":\n"
        << outcomes[i].output;
  }
}

TEST(ScenarioSchema, ReaderAcceptsValidCases) {
  const auto& valid = cases()["valid"];
  const auto outcomes = run_all("explain", scenarios_of({"valid"}));
  for (std::size_t i = 0; i < valid.size(); ++i)
    EXPECT_EQ(outcomes[i].status, 0) << valid[i]["name"].get<std::string>() << ":\n" << outcomes[i].output;
}

} // namespace
