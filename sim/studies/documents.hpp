#pragma once
// The JSON documents `dtsim run`, `sweep`, `compare` and `search` write with --json, and what search reads from its
// flags: shared by the commands and the Python module (python/dtsim_module.cpp), so that `import dtsim` returns the
// very structure the CLI writes. Plain functions of the library's results; nothing here prints or writes.
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/studies/compare.hpp"
#include "sim/studies/search.hpp"
#include "sim/studies/sweep.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim::studies {

// `dtsim run --json`: the run's result with its provenance.
nlohmann::json run_document(const report::RunResult& result);

// `dtsim sweep --json`: the command's head, then every point's whole run result with its speedup and efficiency (or
// why it failed).
nlohmann::json sweep_document(const scenario::Scenario& base, const std::vector<SweepPoint>& points);

// `dtsim compare --strategies --json`: an array in the order given, each strategy's run result, or for one that
// failed its name and why.
nlohmann::json compare_document(const std::vector<ComparePoint>& points);

// A search candidate's layout as JSON fields: tensor, pipeline, data, expert, micro_batch, micro_batches, schedule,
// virtual_stages, zero_stage, recompute, sequence_parallel (what `search --json` and `plan --json` both carry).
nlohmann::json layout_json(const search::Candidate& c);

// `dtsim search --json`: every candidate with its layout, its estimate and, when simulated, its figures (null where
// they do not apply), the counts, and which candidates lead each ranking.
nlohmann::json search_document(const scenario::Scenario& base, const search::Result& result);

// search's options from its flags, as given on the command line: `sets` the --set assignments (a field they set keeps
// the scenario's value instead of the search's one measured iteration after one warm-up), `nodes` "1,2,4" or "1..8"
// (empty: the scenario's), `fidelity` step, aggregate or coarse (empty: the search's default), `simulate` a count or
// "all". Throws scenario::ScenarioError naming the flag. jobs, resume and the memory limit are the caller's.
search::Options search_options(const std::vector<std::string>& sets, const std::string& nodes,
                               const std::string& fidelity, const std::string& simulate);

// "Candidates: 18 enumerated, 6 invalid, ..." (one line).
std::string search_counts_line(const search::Counts& counts);

// The reasons behind the rejected and failed candidates, the most frequent first (at most `limit` of each kind), and
// the smallest memory need among those that do not fit; a line each.
std::string search_reasons(const search::Result& result, std::size_t limit);

// Why a search found no candidate that ran (search::by_throughput empty): "no candidate layout ran; " and the counts
// and reasons, or that no layout divides the global batch.
std::string search_nothing_ran(const search::Result& result, const std::string& sample_unit);

// Sequence parallelism of a candidate as the tables show it: "on", "off", or "-" without tensor parallelism.
std::string sequence_parallel_text(const search::Candidate& candidate);

} // namespace dtsim::studies
