// The limits every dtsim reader shares: file size, nesting, numbers, duplicate keys, UTF-8.
#include "io/json_text.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace dtsim::io {
namespace {

// The error a text raises; fails the test if it parses.
JsonTextError error_of(std::string_view text) {
  try {
    (void)parse_json(text);
  } catch (const JsonTextError& e) {
    return e;
  }
  ADD_FAILURE() << "parsed: " << text;
  return JsonTextError("", "");
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

TEST(ParseJson, AcceptsWhatJsonAllowsAndKeepsEveryValue) {
  const auto doc = parse_json(R"({"a": [1, {"b": 2.5}], "c": {"d": "x"}, "e": {"d": "y"}})");
  EXPECT_EQ(doc["a"][1]["b"], 2.5);
  // The same key in two different objects is not a duplicate.
  EXPECT_EQ(doc["c"]["d"], "x");
  EXPECT_EQ(doc["e"]["d"], "y");
  EXPECT_EQ(parse_json("[]"), nlohmann::json::array());
  EXPECT_EQ(parse_json("7"), 7);
}

TEST(ParseJson, DuplicateKeyNamesItsPointerAndBothLines) {
  const auto top = error_of("{\n  \"nodes\": 2,\n  \"gpu\": \"a100\",\n  \"nodes\": -1\n}");
  EXPECT_EQ(top.pointer(), "/nodes");
  EXPECT_TRUE(contains(top.what(), "\"nodes\" is given twice in one object (line 2 and line 4)")) << top.what();
  // Inside an array, after containers and primitives: the index counts both.
  const auto nested = error_of(R"({"layers": [1, [2, 3], {"k": 1}, {"a/b": 1, "x": {}, "a/b": 2}]})");
  EXPECT_EQ(nested.pointer(), "/layers/3/a~1b");
  EXPECT_TRUE(contains(nested.what(), "(line 1 and line 1)")) << nested.what();
}

TEST(ParseJson, NestingIsBoundedWithThePointerWhereItGoesTooDeep) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW((void)parse_json(ok));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto e = error_of(deep);
  std::string expected;
  for (int i = 0; i < kMaxJsonDepth; ++i)
    expected += "/0";
  EXPECT_EQ(e.pointer(), expected);
  EXPECT_TRUE(contains(e.what(), "nested more than 64 deep")) << e.what();
}

TEST(ParseJson, NumbersBeyondADoubleAndMalformedTextGiveLineAndColumn) {
  const auto big = error_of("{\n  \"x\": 1e400\n}");
  EXPECT_TRUE(contains(big.what(), "beyond the range of a double (about 1.8e308) at line 2")) << big.what();
  EXPECT_TRUE(contains(big.what(), "1e400")) << big.what();
  const auto bad = error_of("{\n  \"a\": 1\n  \"b\": 2\n}");
  EXPECT_TRUE(contains(bad.what(), "malformed JSON at line 3, column 5")) << bad.what();
  // Strings must be UTF-8 (the lexer checks them).
  EXPECT_TRUE(contains(error_of("\"\xff\"").what(), "malformed JSON")) << error_of("\"\xff\"").what();
}

TEST(IsUtf8, TellsValidFromInvalidBytes) {
  EXPECT_TRUE(is_utf8("plain"));
  EXPECT_TRUE(is_utf8("gr\xc3\xbc\xc3\x9f")); // "grüß"
  EXPECT_FALSE(is_utf8("\xff"));
  EXPECT_FALSE(is_utf8("\xc3")); // a lead byte with nothing after it
}

TEST(AppendPointer, EscapesAsRfc6901Says) {
  EXPECT_EQ(append_pointer("/a", "b~c/d"), "/a/b~0c~1d");
}

class ReadTextFile : public ::testing::Test {
protected:
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dtsim_io_test_" + std::to_string(::getpid()) + ".json");
  void TearDown() override { std::filesystem::remove(path); }
};

TEST_F(ReadTextFile, ReadsUpToTheLimitAndRefusesMore) {
  std::ofstream(path) << std::string(1000, 'x');
  EXPECT_EQ(read_text_file(path, "scenario", 1000).size(), 1000u);
  try {
    (void)read_text_file(path, "scenario", 999);
    ADD_FAILURE() << "read a file over the limit";
  } catch (const FileError& e) {
    EXPECT_TRUE(contains(e.what(), "the scenario is larger than")) << e.what();
  }
}

TEST_F(ReadTextFile, AnEndlessDeviceStopsAtTheLimit) {
  try {
    (void)read_text_file("/dev/zero", "scenario");
    ADD_FAILURE() << "read /dev/zero";
  } catch (const FileError& e) {
    EXPECT_TRUE(contains(e.what(), "larger than 64 MiB")) << e.what();
  }
}

TEST_F(ReadTextFile, MissingFileAndDirectoryAreNamed) {
  EXPECT_THROW((void)read_text_file(path, "scenario"), FileError);
  try {
    (void)read_text_file(std::filesystem::temp_directory_path(), "scenario");
    ADD_FAILURE() << "read a directory";
  } catch (const FileError& e) {
    EXPECT_STREQ(e.what(), "cannot read the scenario: it is a directory");
  }
}

} // namespace
} // namespace dtsim::io
