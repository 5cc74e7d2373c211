#include "sim/studies/resume.hpp"

#include "io/hash.hpp"
#include "io/json_text.hpp"
#include "sim/scenario/scenario.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace dtsim::studies {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "dtsim-resume-1";

// Whatever the checks leave unsaid: an error text, or "" when the file is a point's.
std::string problem_with(const nlohmann::json& doc, const std::string& key, const std::string& version) {
  if (!doc.is_object()) return "not a JSON object";
  const auto text = [&](const char* field) -> std::string {
    const auto it = doc.find(field);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("format") != kFormat) return fmt::format("\"format\" is not \"{}\"", kFormat);
  if (text("dtsim") != version) return fmt::format("written by dtsim {}, this is {}", text("dtsim"), version);
  if (text("key") != key) return "its \"key\" is another point's";
  if (!doc.contains("ok") || !doc["ok"].is_boolean()) return "\"ok\" is missing";
  if (!doc.contains("output") || !doc["output"].is_string()) return "\"output\" is missing";
  return {};
}

} // namespace

ResumeStore::ResumeStore(std::string dir, std::string version) : dir_(std::move(dir)), version_(std::move(version)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw scenario::ScenarioError("--resume", "",
                                  fmt::format("cannot use \"{}\" as a directory: {}", dir_,
                                              ec ? ec.message() : std::string("it is not a directory")));
  if (::access(dir_.c_str(), W_OK | X_OK) != 0)
    throw scenario::ScenarioError("--resume", "", fmt::format("cannot write in \"{}\"", dir_));
}

std::string ResumeStore::shard_text(std::size_t point) const {
  return shard_count_ > 0 ? fmt::format("shard {}/{}", point % static_cast<std::size_t>(shard_count_) + 1, shard_count_)
                          : "";
}

std::string ResumeStore::key(std::string_view command, std::string_view canonical) const {
  const auto text = fmt::format("dtsim {}\n{}\n{}", version_, command, canonical);
  // Two passes of FNV-1a from different bases make 128 bits, so that two points' keys never meet by chance; the file
  // also holds its key, and one for another key is not used.
  return fmt::format("{:016x}{:016x}", io::fnv1a64(text), io::fnv1a64(text, 0x84222325cbf29ce4ULL));
}

std::optional<engine::ChildOutcome> ResumeStore::load(const std::string& key, const std::string& label,
                                                      const Check& check) {
  const auto path = fs::path(dir_) / (key + ".json");
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::string why;
  engine::ChildOutcome outcome;
  // Read as any input is: at most io::kMaxInputBytes (64 MiB, far above any point's result), so that a planted or
  // damaged file (a sparse 16 GiB one) is refused unread instead of exhausting memory.
  std::string bytes;
  try {
    bytes = io::read_text_file(path, "kept point");
  } catch (const io::FileError& e) {
    why = e.what();
  }
  if (why.empty()) {
    const auto doc = nlohmann::json::parse(bytes, nullptr, false);
    why = doc.is_discarded() ? "not valid JSON" : problem_with(doc, key, version_);
    if (why.empty()) {
      outcome.ok = doc["ok"].get<bool>();
      outcome.output = doc["output"].get<std::string>();
      if (check) why = check(outcome);
    }
  }
  if (!why.empty()) {
    std::cerr << fmt::format("dtsim: --resume: ignoring {} ({}); {} is simulated again\n", path.string(), why, label);
    return std::nullopt;
  }
  ++reused_;
  return outcome;
}

void ResumeStore::save(const std::string& key, const std::string& label, const engine::ChildOutcome& outcome) const {
  if (outcome.abnormal) return; // a killed process says nothing about its point: the next run tries it again
  const nlohmann::json doc = {{"format", kFormat}, {"dtsim", version_}, {"key", key},
                              {"point", label},    {"ok", outcome.ok},  {"output", outcome.output}};
  const auto path = fs::path(dir_) / (key + ".json");
  const auto temporary = fs::path(dir_) / fmt::format(".{}.tmp-{}", key, ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << doc.dump() << "\n";
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw std::runtime_error(fmt::format("--resume: cannot write {}", temporary.string()));
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) {
    std::remove(temporary.c_str());
    throw std::runtime_error(fmt::format("--resume: cannot write {}: {}", path.string(), ec.message()));
  }
}

} // namespace dtsim::studies
