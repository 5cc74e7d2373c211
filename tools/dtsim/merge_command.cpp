// `dtsim merge DIR...`: puts the shards of a sharded sweep, compare, search or plan together. Each shard's directory
// holds its points (the --resume store's files) and a manifest; the merge checks that the directories are the N shards
// of one command, each once, gathers their points in a temporary store and runs that command again over it with every
// point read back (a point no shard kept is an error naming its shard). The output is the unsharded command's, byte
// for byte, because it is the same code printing the same results.
#include "io/json_text.hpp"
#include "sim/scenario/scenario.hpp"
#include "tools/dtsim/commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kManifest = "shard.json";

// The options a shard's command line loses in its manifest: where it kept its points and which shard it was, how it
// ran (jobs, memory), and the files it would have written (the merge writes its own). Search's --csv is a flag that
// changes what it prints: it stays.
bool dropped_option(const std::string& arg, const std::string& verb) {
  std::vector<std::string> names{"--shard", "--out", "--resume", "--jobs", "--max-memory", "--json", "--html"};
  if (verb != "search") names.emplace_back("--csv");
  return std::find(names.begin(), names.end(), arg) != names.end();
}
bool dropped_option_with_value(const std::string& arg, const std::string& verb) {
  const auto equals = arg.find('=');
  return arg.starts_with("--") && equals != std::string::npos && dropped_option(arg.substr(0, equals), verb);
}

// A temporary directory, removed with what is in it when it goes.
class TemporaryDirectory {
public:
  TemporaryDirectory() {
    auto pattern = (fs::temp_directory_path() / "dtsim-merge-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("merge: cannot create a temporary directory");
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

struct Manifest {
  std::string dir;
  std::vector<std::string> command;
  std::string cwd;
  int shard = 0, shards = 0;
};

// The options a shard's command may carry, by subcommand: what changes the points and how they print, never where a
// file is written (dtsim writes none of those into a manifest; a manifest that has one was not written by dtsim).
// Search's --csv is a flag that prints its CSV on standard output.
const std::map<std::string, std::vector<std::string>>& allowed_options() {
  static const std::map<std::string, std::vector<std::string>> allowed{
      {"sweep", {"--set", "--nodes", "--price-per-hour"}},
      {"compare", {"--set", "--strategies", "--policies", "--trials", "--seed", "--price-per-hour"}},
      {"search", {"--set", "--top", "--simulate", "--csv", "--nodes", "--fidelity", "--price-per-hour"}},
      {"plan",
       {"--set", "--tokens", "--steps", "--deadline", "--budget", "--instances", "--nodes", "--capacity", "--clusters",
        "--layouts", "--trials", "--seed", "--price-per-hour"}}};
  return allowed;
}

// What merge will run: a subcommand it merges, and only the options above (each word that starts with "-", wherever it
// stands, must be one, alone or as --option=value).
void check_command(const std::string& path, const std::vector<std::string>& command) {
  const auto verb = allowed_options().find(command.front());
  if (verb == allowed_options().end())
    throw scenario::ScenarioError(
        path, "/command/0",
        fmt::format("\"{}\" is not a command dtsim shards (sweep, compare, search, plan)", command.front()));
  for (std::size_t i = 1; i < command.size(); ++i) {
    const auto& word = command[i];
    if (!word.starts_with("-")) continue;
    const auto name = word.substr(0, word.find('='));
    const auto& names = verb->second;
    if (std::find(names.begin(), names.end(), name) != names.end() && !(name == "--csv" && name != word)) continue;
    throw scenario::ScenarioError(
        path, fmt::format("/command/{}", i),
        fmt::format("\"{}\" is not an option a shard of {} keeps: merge writes only the files its own command line "
                    "names (not a manifest dtsim wrote)",
                    word, verb->first));
  }
}

Manifest read_manifest(const std::string& dir) {
  const auto path = (fs::path(dir) / kManifest).string();
  json doc;
  try {
    doc = io::parse_json(io::read_text_file(path, "shard manifest"));
  } catch (const std::exception& e) {
    throw scenario::ScenarioError(path, "", fmt::format("not a shard's directory: {}", e.what()));
  }
  const auto field = [&](const char* key, auto check) {
    if (!doc.is_object() || !doc.contains(key) || !check(doc[key]))
      throw scenario::ScenarioError(path, std::string("/") + key, "missing or malformed: not a manifest dtsim wrote");
    return doc[key];
  };
  const auto count = [](const json& v) {
    return v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= 100000;
  };
  const auto words = [](const json& v) {
    return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& w) { return w.is_string(); });
  };
  Manifest m;
  m.dir = dir;
  if (field("dtsim", [](const json& v) { return v.is_string(); }).get<std::string>() != DTSIM_VERSION)
    throw scenario::ScenarioError(path, "/dtsim", fmt::format("written by another dtsim than {}", DTSIM_VERSION));
  m.command = field("command", words).get<std::vector<std::string>>();
  check_command(path, m.command);
  m.cwd = field("cwd", [](const json& v) { return v.is_string(); }).get<std::string>();
  std::error_code ec;
  if (!fs::is_directory(m.cwd, ec))
    throw scenario::ScenarioError(path, "/cwd",
                                  fmt::format("{} is not a directory here: the shards ran elsewhere", m.cwd));
  m.shard = field("shard", count).get<int>();
  m.shards = field("shards", count).get<int>();
  if (m.shard > m.shards)
    throw scenario::ScenarioError(path, "/shard",
                                  fmt::format("shard {} of {}: not a manifest dtsim wrote", m.shard, m.shards));
  return m;
}

// The N shards of one command, each once; said by shard number and directory when not.
void check_shards(const std::vector<Manifest>& manifests) {
  const auto& first = manifests.front();
  std::map<int, std::string> seen;
  for (const auto& m : manifests) {
    const auto path = (fs::path(m.dir) / kManifest).string();
    if (m.command != first.command || m.shards != first.shards)
      throw scenario::ScenarioError(
          path, "/command",
          fmt::format("a shard of another command than {}'s (\"{}\")", first.dir, fmt::join(first.command, " ")));
    if (const auto [at, fresh] = seen.emplace(m.shard, m.dir); !fresh)
      throw scenario::ScenarioError(
          path, "/shard", fmt::format("shard {}/{} is given twice: {} and {}", m.shard, m.shards, at->second, m.dir));
  }
  for (int k = 1; k <= first.shards; ++k)
    if (!seen.count(k))
      throw scenario::ScenarioError(
          "merge", "", fmt::format("shard {}/{} is missing: none of the directories given holds it", k, first.shards));
}

// Runs this dtsim with `args` in `cwd`; its exit status.
int run_dtsim(const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<char*> argv;
  std::string self = "dtsim";
  argv.push_back(self.data());
  auto copy = args;
  for (auto& a : copy)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("merge: cannot start dtsim");
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(kExitFailed);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(kExitFailed);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("merge: lost the dtsim it started");
  return WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailed;
}

} // namespace

void write_shard_manifest(const ShardArgs& sharding) {
  std::vector<std::string> command;
  const auto& line = sharding.command_line;
  const std::string verb = line.empty() ? "" : line.front();
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (dropped_option(line[i], verb)) {
      ++i; // and its value
      continue;
    }
    if (!dropped_option_with_value(line[i], verb)) command.push_back(line[i]);
  }
  const auto slash = sharding.shard.find('/');
  const json doc = {{"dtsim", DTSIM_VERSION},
                    {"command", command},
                    {"cwd", fs::current_path().string()},
                    {"shard", std::stoi(sharding.shard.substr(0, slash))},
                    {"shards", std::stoi(sharding.shard.substr(slash + 1))}};
  write_files({{(fs::path(sharding.out) / kManifest).string(), doc.dump(2) + "\n"}});
}

int merge_command(const MergeArgs& args) {
  std::vector<Manifest> manifests;
  for (const auto& dir : args.dirs)
    manifests.push_back(read_manifest(dir));
  check_shards(manifests);
  const auto& first = manifests.front();
  const auto& verb = first.command.front();
  // The shards' files are the merge's inputs: an output over one of them (its manifest, a point) is refused, as run
  // refuses to write over its scenario.
  std::vector<std::string> inputs;
  for (const auto& m : manifests)
    for (const auto& entry : fs::directory_iterator(m.dir))
      if (entry.is_regular_file()) inputs.push_back(entry.path().string());
  check_writable({args.csv_out, args.json_out, args.html_out}, inputs);

  // The command again, writing the merge's files (absolute paths: it runs in the shards' working directory).
  auto command = first.command;
  // The merge's files as its working directory sees them: the same names where the shards ran here too (as under a
  // batch system's job array), absolute ones otherwise, so that what the command says it wrote is where the user
  // finds it (a name relative to the shards' directory would point elsewhere from here).
  const bool same_directory = fs::current_path() == fs::path(first.cwd);
  const auto absolute = [&](const std::string& path) {
    return path == "-" || same_directory ? path : fs::absolute(path).lexically_normal().string();
  };
  if (!args.csv_out.empty()) {
    if (verb == "search")
      throw scenario::ScenarioError("--csv", "", "search prints its CSV on stdout: give --csv to the sharded search");
    command.insert(command.end(), {"--csv", absolute(args.csv_out)});
  }
  if (!args.json_out.empty()) command.insert(command.end(), {"--json", absolute(args.json_out)});
  if (!args.html_out.empty()) command.insert(command.end(), {"--html", absolute(args.html_out)});

  TemporaryDirectory store;
  for (const auto& m : manifests)
    for (const auto& entry : fs::directory_iterator(m.dir))
      if (entry.is_regular_file() && entry.path().extension() == ".json" && entry.path().filename() != kManifest) {
        // A point is kilobytes: a larger file (a sparse one of gigabytes would be copied densely) is not one.
        if (entry.file_size() > io::kMaxInputBytes)
          throw scenario::ScenarioError(entry.path().string(), "",
                                        fmt::format("is larger than {} MiB; a kept point is kilobytes: run its shard "
                                                    "again",
                                                    io::kMaxInputBytes >> 20));
        fs::copy_file(entry.path(), store.path() / entry.path().filename(), fs::copy_options::skip_existing);
      }
  command.insert(command.end(), {"--resume", store.path().string(), "--merge-only", std::to_string(first.shards)});
  return run_dtsim(command, first.cwd);
}

} // namespace dtsim::cli
