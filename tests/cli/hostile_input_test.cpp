// Hostile and extreme input, as a fuzzer or an unlucky user finds it: each case exits with status 2, names the file
// or flag and the JSON pointer and says what was expected, writes nothing, and does so at once (no simulation runs,
// no memory is spent: the table runs in a few seconds). The findings of a hostile-input audit, one case each: deep
// nesting, numbers past a double, integer overflows, infinite or zero bandwidths, extreme latencies, counts the
// format took but the machine could not hold, and command-line values with no bound.
#include "cli_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dtsim::testing {
namespace {

// A valid scenario: each case changes one thing in it.
const std::string kValid = R"({
  "version": 1,
  "name": "hostile",
  "model": {"preset": "mlp-small", "batch_per_gpu": 16},
  "cluster": {"nodes": 2, "gpu": "v100", "nic": {"bandwidth": "10Gbps", "latency": "5us"}},
  "run": {"iterations": 1, "warmup_iterations": 0}
})";

// A small transformer, for the model's fields.
const std::string kTransformer = R"({
  "version": 1,
  "model": {"transformer": {"base": "gpt2", "layers": 2}, "batch_per_gpu": 1, "precision": "bf16"},
  "cluster": {"nodes": 1, "gpu": "h100-sxm", "nic": {"bandwidth": "100Gbps"}},
  "run": {"iterations": 1, "warmup_iterations": 0}
})";

// A pipeline of two stages over a 4-block transformer.
const std::string kPipeline = R"({
  "version": 1,
  "model": {"transformer": {"base": "gpt2", "layers": 4}, "batch_per_gpu": 1, "precision": "bf16"},
  "cluster": {"nodes": 1, "gpus_per_node": 2, "gpu": "h100-sxm", "nic": {"bandwidth": "100Gbps"}},
  "parallelism": {"pipeline": 2, "micro_batches": 2, "stages": [2, 2]},
  "run": {"iterations": 1, "warmup_iterations": 0}
})";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

struct HostileCase {
  std::string label;
  std::string command;  // "run", "sweep", "collective", ...
  std::string scenario; // the file's text; empty: no file argument
  std::string extra;    // more arguments
  std::string expect_1; // both must appear in stderr
  std::string expect_2;
};

void PrintTo(const HostileCase& c, std::ostream* os) {
  *os << c.label;
}

class HostileInput : public ::testing::TestWithParam<HostileCase> {};

TEST_P(HostileInput, ExitsWithStatusTwoSaysWhereAndWhatAndWritesNothing) {
  const auto& c = GetParam();
  TempDir dir;
  std::string args = c.command;
  if (!c.scenario.empty()) args += " '" + dir.write("scenario.json", c.scenario).string() + "'";
  const auto csv = dir.path() / "out.csv";
  const bool tabulates = c.command == "sweep" || c.command == "compare" || c.command == "collective";
  if (tabulates) args += " --csv '" + csv.string() + "'";
  const auto inv = run_dtsim(args + " " + c.extra, dir);
  EXPECT_EQ(inv.status, 2) << inv.err << inv.out;
  EXPECT_NE(inv.err.find(c.expect_1), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find(c.expect_2), std::string::npos) << inv.err;
  EXPECT_FALSE(std::filesystem::exists(csv));
}

std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

const HostileCase kCases[] = {
    // The reader: text that breaks JSON's or the format's limits.
    {"name_nested_60000_deep", "run", replace(kValid, R"("hostile")", nested(60000)), "", "/name",
     "nested more than 64 deep"},
    {"number_beyond_a_double", "run", replace(kValid, R"("nodes": 2)", R"("nodes": 1e400)"), "", "scenario.json",
     "beyond the range of a double"},
    {"duplicate_key", "run", replace(kValid, R"("nodes": 2)", R"("nodes": -5, "nodes": 2)"), "", "/cluster/nodes",
     "given twice"},
    {"bytes_not_utf8", "run", replace(kValid, "hostile", "\xff\xfe"), "", "scenario.json", "malformed JSON"},
    // Text that would steer the terminal or read backwards: an escape sequence (clear the screen), a right-to-left
    // override (U+202E, as \u escape and as its UTF-8 bytes).
    {"name_with_an_escape_sequence", "run", replace(kValid, R"("hostile")", R"("x\u001b[2J")"), "", "/name",
     "control or text-direction character at byte 1"},
    {"name_with_a_right_to_left_override", "run", replace(kValid, R"("hostile")", R"("abc\u202Egpj.exe")"), "", "/name",
     "control or text-direction character at byte 3"},
    {"description_with_a_raw_override", "run",
     replace(kValid, R"("name": "hostile",)",
             "\"name\": \"hostile\", \"description\": \"a\xe2\x80\xae"
             "b\","),
     "", "/description", "control or text-direction character at byte 1"},
    {"not_an_object", "run", "[1, 2, 3]", "", "scenario.json", "expected a JSON object"},
    // A straggler's lognormal jitter whose draws overflow a double (exp(300 z)): bounded where the factor stays finite.
    {"jitter_past_a_double", "run",
     replace(kValid, R"("run":)", R"("stragglers": {"jitter": {"distribution": "lognormal", "scale": 300}}, "run":)"),
     "", "/stragglers/jitter/scale", "1.5"},
    {"empty_file", "run", " ", "", "scenario.json", "malformed JSON"},
    // Counts the format bounds, so that every product stays exact.
    {"vocabulary_2_62", "run",
     replace(kTransformer, R"("layers": 2)", R"("layers": 2, "vocabulary": 4611686018427387904)"), "",
     "/model/transformer/vocabulary", "<= 16777216"},
    {"hidden_2_40", "run", replace(kTransformer, R"("layers": 2)", R"("layers": 2, "hidden": 1099511627776)"), "",
     "/model/transformer/hidden", "<= 1048576"},
    {"layers_2_31", "run", replace(kTransformer, R"("layers": 2)", R"("layers": 2147483647)"), "",
     "/model/transformer/layers", "<= 4096"},
    {"sequence_2_31", "run", replace(kTransformer, R"("layers": 2)", R"("layers": 2, "sequence": 2147483647)"), "",
     "/model/transformer/sequence", "<= 16777216"},
    {"heads_2_31", "run", replace(kTransformer, R"("layers": 2)", R"("layers": 2, "heads": 2147483647)"), "",
     "/model/transformer/heads", "<= 65536"},
    {"ffn_hidden_2_40", "run", replace(kTransformer, R"("layers": 2)", R"("layers": 2, "ffn_hidden": 1099511627776)"),
     "", "/model/transformer/ffn_hidden", "<= 4194304"},
    {"experts_2_31", "run",
     replace(kTransformer, R"("layers": 2)", R"("layers": 2, "moe": {"experts": 2147483647, "top_k": 2})"), "",
     "/model/transformer/moe/experts", "<= 65536"},
    {"adaptive_cutoff_2_62", "run",
     replace(kTransformer, R"("layers": 2)", R"("layers": 2, "adaptive": {"cutoffs": [4611686018427387904]})"), "",
     "/model/transformer/adaptive/cutoffs/0", "<= 16777216"},
    {"layer_table_parameters_2_62", "run",
     replace(kValid, R"({"preset": "mlp-small", "batch_per_gpu": 16})",
             R"({"layers": [{"name": "fc", "kind": "matmul", "forward_flops": 1e9, "parameters": 4611686018427387904,)"
             R"( "input_elements": 10, "output_elements": 10}], "batch_per_gpu": 16})"),
     "", "/model/layers/0/parameters", "<= 1125899906842624"},
    {"layer_table_flops_1e300", "run",
     replace(kValid, R"({"preset": "mlp-small", "batch_per_gpu": 16})",
             R"({"layers": [{"name": "fc", "kind": "matmul", "forward_flops": 1e300, "parameters": 10,)"
             R"( "input_elements": 10, "output_elements": 10}], "batch_per_gpu": 16})"),
     "", "/model/layers/0/forward_flops", "<= 1e+24"},
    {"batch_2_31", "run", replace(kValid, R"("batch_per_gpu": 16)", R"("batch_per_gpu": 2147483647)"), "",
     "/model/batch_per_gpu", "<= 1048576"},
    {"iterations_2_31", "run", replace(kValid, R"("iterations": 1)", R"("iterations": 2147483647)"), "",
     "/run/iterations", "<= 1000000"},
    {"warmup_2_31", "run", replace(kValid, R"("warmup_iterations": 0)", R"("warmup_iterations": 2147483647)"), "",
     "/run/warmup_iterations", "<= 1000000"},
    {"stage_entry_2_32_plus_1", "run", replace(kPipeline, "[2, 2]", "[4294967297, 2]"), "", "/parallelism/stages/0",
     "from 1 to the model's"},
    {"stage_entries_that_overflow_a_sum", "run", replace(kPipeline, "[2, 2]", "[2147483647, 2147483647]"), "",
     "/parallelism/stages/0", "from 1 to the model's"},
    {"micro_batches_2_31", "run", replace(kPipeline, R"("micro_batches": 2)", R"("micro_batches": 2147483647)"), "",
     "/parallelism/micro_batches", "<= 1048576"},
    {"global_batch_2_50", "run", replace(kPipeline, R"("micro_batches": 2)", R"("global_batch": 1125899906842624)"), "",
     "/parallelism/global_batch", "<= 1099511627776"},
    {"nodes_2000000", "run", replace(kValid, R"("nodes": 2)", R"("nodes": 2000000)"), "", "/cluster/nodes",
     "<= 1048576"},
    {"gpus_per_node_2_30", "run", replace(kValid, R"("nodes": 2)", R"("nodes": 2, "gpus_per_node": 1073741824)"), "",
     "/cluster/gpus_per_node", "<= 1024"},
    {"gpus_past_2_24", "run", replace(kValid, R"("nodes": 2)", R"("nodes": 1048576, "gpus_per_node": 32)"), "",
     "/cluster/gpus_per_node", "at most 16777216"},
    // Quantities: finite, and inside what a network can be.
    {"bandwidth_5e_minus_324", "run", replace(kValid, R"("10Gbps")", "5e-324"), "", "/cluster/nic/bandwidth",
     "from 1 kB/s"},
    {"bandwidth_infinite", "run", replace(kValid, R"("10Gbps")", R"("1e300Tbps")"), "", "/cluster/nic/bandwidth",
     "expected a bandwidth"},
    {"latency_1e308_s", "run", replace(kValid, R"("5us")", R"("1e308s")"), "", "/cluster/nic/latency", "at most 1 s"},
    {"latency_an_hour", "run", replace(kValid, R"("5us")", "3600"), "", "/cluster/nic/latency", "at most 1 s"},
    {"price_1e300", "run", replace(kValid, R"("nodes": 2)", R"("nodes": 2, "price_per_hour": 1e300)"), "",
     "/cluster/price_per_hour", "<= 1e+06"},
    {"bucket_2_pib", "run", replace(kValid, R"("run")", R"("training": {"bucket_size": "2048TiB"}, "run")"), "",
     "/training/bucket_size", "to 1 PiB"},
    {"straggler_slowdown_1e300", "run",
     replace(kValid, R"("run")", R"("stragglers": {"ranks": [0], "slowdown": 1e300}, "run")"), "",
     "/stragglers/slowdown", "<= 1e+06"},
    // Valid values whose simulation would not fit in memory: refused before anything runs, with what drives it.
    {"a_million_nodes", "run", replace(kValid, R"("nodes": 2)", R"("nodes": 1000000)"), "", "would need about",
     "cluster.nodes x cluster.gpus_per_node"},
    {"a_million_iterations", "run",
     replace(replace(kValid, R"("iterations": 1)", R"("iterations": 1000000)"), R"("nodes": 2)", R"("nodes": 4096)"),
     "--max-memory 2GiB", "run.iterations + run.warmup_iterations", "iteration(s) with the warm-up"},
    {"max_memory_not_a_size", "run", kValid, "--max-memory lots", "--max-memory", "such as \"16GiB\""},
    {"max_memory_below_a_replay", "run", kValid, "--max-memory 1KiB", "--max-memory", "from 40 MiB"},
    {"does_not_fit_names_the_file", "run", replace(kTransformer, R"("batch_per_gpu": 1)", R"("batch_per_gpu": 4096)"),
     "", "scenario.json", "does not fit in GPU memory"},
    // Command-line values.
    {"price_nan", "run", kValid, "--price-per-hour nan", "--price-per-hour", "expected a price"},
    {"price_negative", "run", kValid, "--price-per-hour -1", "--price-per-hour", "expected a price"},
    {"price_infinite", "run", kValid, "--price-per-hour inf", "--price-per-hour", "expected a price"},
    {"set_not_utf8", "run", kValid, R"x(--set "$(printf 'name=\377\376')")x", "--set", "not valid UTF-8"},
    {"set_number_beyond_a_double", "run", kValid, "--set cluster.nodes=1e400", "/cluster/nodes",
     "beyond the range of a double"},
    {"set_duplicate_key", "run", kValid, R"(--set 'cluster.nic={"bandwidth": "1Gbps", "bandwidth": "2Gbps"}')",
     "/cluster/nic/bandwidth", "given twice"},
    {"jobs_0", "sweep", kValid, "--nodes 1,2 --jobs 0", "--jobs", "expected an integer from 1 to 1024"},
    {"jobs_huge", "sweep", kValid, "--nodes 1,2 --jobs 99999999999999999999", "--jobs", "from 1 to 1024"},
    {"sweep_nodes_2000000", "sweep", kValid, "--nodes 2000000", "/cluster/nodes", "at --nodes 2000000"},
    {"sweep_nodes_to_a_million", "sweep", kValid, "--nodes 1..1000000", "would need about", "--max-memory"},
    // A count the topology cannot have (a 4 x 4 torus is 16 nodes): found before any point runs, not in a child.
    {"sweep_nodes_off_the_torus", "sweep",
     replace(replace(kValid, R"("nodes": 2)", R"("nodes": 16)"), R"("nic")",
             R"("topology": {"kind": "torus", "dimensions": [4, 4]}, "nic")"),
     "--nodes 16,32", "/cluster/topology/dimensions", "at --nodes 32"},
    {"sweep_nodes_not_numbers", "sweep", kValid, "--nodes 1,two", "--nodes", "positive integers"},
    {"sweep_resume_on_a_file", "sweep", kValid, "--nodes 1 --resume /dev/null", "--resume", "/dev/null"},
    {"search_nodes_to_a_million", "search", kValid, "--nodes 1..1000000", "would need about", "--max-memory"},
    {"search_top_0", "search", kValid, "--top 0", "--top", "from 1 to 1000000"},
    {"compare_unknown_strategy", "compare", kValid, "--strategies allreduce,nope", "--strategies", "nope"},
    {"collective_ranks_2_31", "collective", kValid, "--ranks 2147483647", "--ranks", "from 1 to 16777216"},
    {"collective_ranks_past_the_nodes", "collective", kValid, "--ranks 16777216", "--ranks", "/cluster/nodes"},
    {"collective_sizes_to_1e300_tb", "collective", kValid, "--sizes 1B..1e300TB", "--sizes", "1e300TB"},
    {"collective_size_1e_minus_9", "collective", kValid, "--sizes 1e-9B", "--sizes", "whole number of bytes"},
    {"collective_size_half_a_byte", "collective", kValid, "--sizes 0.5B", "--sizes", "whole number of bytes"},
    {"collective_size_2_pib", "collective", kValid, "--sizes 2048TiB", "--sizes", "to 1 PiB"},
    {"collective_instance_nodes_0", "collective", "", "--instance aws.p4d.24xlarge --nodes 0", "--nodes",
     "from 1 to 1048576"},
    {"validate_every_point_alone", "validate", "", "--every-point", "--every-point", "--measurements"},
};

INSTANTIATE_TEST_SUITE_P(Findings, HostileInput, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.label; });

// The scenario given is /dev/zero, a directory, or a file past the size limit: refused without reading it all.
TEST(HostileFiles, EndlessDirectoriesAndHugeFilesAreRefusedUnread) {
  TempDir dir;
  const auto zero = run_dtsim("run /dev/zero", dir);
  EXPECT_EQ(zero.status, 2);
  EXPECT_NE(zero.err.find("larger than 64 MiB"), std::string::npos) << zero.err;
  const auto directory = run_dtsim("run '" + dir.path().string() + "'", dir);
  EXPECT_EQ(directory.status, 2);
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
  // 65 MiB of '[': past the size limit before the parser ever sees it.
  const auto brackets = dir.path() / "brackets.json";
  std::ofstream(brackets) << std::string((65 << 20), '[');
  const auto big = run_dtsim("run '" + brackets.string() + "'", dir);
  EXPECT_EQ(big.status, 2);
  EXPECT_NE(big.err.find("larger than 64 MiB"), std::string::npos) << big.err;
}

} // namespace
} // namespace dtsim::testing
