#pragma once
// `dtsim plan` without the command line: its options read and checked from the flags' text, and the JSON document it
// writes. Shared by the CLI and the Python module.
#include "sim/studies/planning.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dtsim::studies::planning {

// The plan's flags as given. Errors name the flag (--tokens, --steps, --deadline, --budget, --instances, --nodes,
// --capacity), which the Python module renames to its argument.
struct Request {
  std::vector<std::string> sets;        // the --set assignments (search keeps what they set)
  std::string tokens;                   // the run's length: "100B" tokens, or
  std::string steps;                    // iterations; neither: the scenario's training.steps or dataset
  std::string deadline;                 // "14d", "300h"
  std::string budget;                   // "250k" USD
  std::optional<std::string> instances; // "aws.p5.48xlarge,gcp.a3-highgpu-8g"; absent: every priced preset
  std::string nodes;                    // "4,8,16" or "4..16"; empty: the scenario's
  std::string capacity = "both";        // both, or on-demand
  int clusters = 4;                     // clusters simulated and trialled
  int layouts = 3;                      // layouts simulated per cluster
  int trials = 20;                      // whole-run trials per plan
  std::uint64_t seed = 0;
};

// "15T", "100B", "2.5e11", "250k", "$250k": a count as ML papers write token counts and budgets (K thousand, M
// million, B billion, T trillion). Throws scenario::ScenarioError naming `flag` and saying `example` was expected.
double parse_count(const std::string& flag, std::string text,
                   const char* example = "a positive count such as 100B, 2.5e11 or 250k");

// The plan's options for `base`; jobs, the memory limit and the resume store are the caller's.
Options plan_options(const scenario::Scenario& base, const Request& request);

// One plan as a JSON row: its layout (search's fields), cluster, capacity, simulated iteration and trials' figures.
nlohmann::json plan_row(const Result& result, const Plan& plan);

// `dtsim plan --json`: the run's length, the clusters screened, every plan, and which plans each choice picks (indices
// into "plans", null where none qualifies).
nlohmann::json plan_document(const scenario::Scenario& base, const Options& options, const Result& result);

} // namespace dtsim::studies::planning
