// `dtsim._dtsim`, the native half of the Python package `dtsim` (python/dtsim/__init__.py wraps it in typed
// results): every command that simulates or reads the catalog, returning what `dtsim ... --json` writes (sim/studies
// builds both) as dicts and lists. The library runs every simulation in a child process of its own (SimGrid allows
// one engine per process), so a Python process can call these any number of times.
#include "sim/engine/child_process.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/footprint.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/limits.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/catalog.hpp"
#include "sim/studies/collective_report.hpp"
#include "sim/studies/documents.hpp"
#include "sim/studies/explain.hpp"
#include "sim/studies/plan_report.hpp"
#include "sim/studies/search.hpp"
#include "sim/studies/train_report.hpp"
#include "sim/studies/validate_report.hpp"

#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace py = pybind11;

namespace {

using namespace dtsim;

// The exception classes, made in Python at import (so they carry attributes and can be raised from Python too) and
// kept for the module's life: a translator may run until the interpreter ends.
py::handle scenario_error_class;
py::handle simulation_error_class;

constexpr const char* kExceptions = R"(
class ScenarioError(ValueError):
    """A scenario dtsim cannot run: a wrong value or an unknown key (pointer is the JSON pointer of the field, as
    "/cluster/nodes"; empty when the error is not about one field), an override or argument it cannot read, or a plan
    that cannot run on the cluster (it does not fit in GPU memory). file is the scenario's path, "<dict>" for a dict,
    or the argument at fault; detail the message without them."""

    def __init__(self, message, file="", pointer="", detail=""):
        super().__init__(message)
        self.file = file
        self.pointer = pointer
        self.detail = detail


class SimulationError(RuntimeError):
    """A simulation that failed on a valid scenario: a deadlock, a simulation process that died, no candidate of a
    search that ran."""
)";

// A failure of the simulation itself, raised as dtsim.SimulationError.
class SimulationFailure : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

void raise_scenario_error(const scenario::ScenarioError& e) {
  const py::object error = scenario_error_class(e.what(), e.file(), e.pointer(), e.detail());
  PyErr_SetObject(scenario_error_class.ptr(), error.ptr());
}

// A ScenarioError about an argument is named by the argument, not by the CLI flag the shared code names ("--nodes").
scenario::ScenarioError renamed(const scenario::ScenarioError& e) {
  static const std::pair<const char*, const char*> names[] = {{"--set", "overrides"},
                                                              {"--nodes", "nodes"},
                                                              {"--fidelity", "fidelity"},
                                                              {"--simulate", "simulate"},
                                                              {"--op", "op"},
                                                              {"--algo", "algorithm"},
                                                              {"--proto", "protocol"},
                                                              {"--ranks", "ranks"},
                                                              {"--sizes", "sizes"},
                                                              {"--instance", "instance"},
                                                              {"--path", "path"},
                                                              {"--iteration-time", "iteration_time"},
                                                              {"--root", "root"},
                                                              {"--profile", "profile"},
                                                              {"--every-point", "every_point"},
                                                              {"--tokens", "tokens"},
                                                              {"--steps", "steps"},
                                                              {"--deadline", "deadline"},
                                                              {"--budget", "budget"},
                                                              {"--instances", "instances"},
                                                              {"--capacity", "capacity"},
                                                              {"list", "what"}};
  for (const auto& [flag, argument] : names)
    if (e.file() == flag) return {argument, e.pointer(), e.detail()};
  return e;
}

// JSON as Python objects: dicts, lists, str, int, float, bool and None.
py::object to_python(const nlohmann::json& value) {
  switch (value.type()) {
  case nlohmann::json::value_t::object: {
    py::dict out;
    for (const auto& [key, item] : value.items())
      out[py::str(key)] = to_python(item);
    return out;
  }
  case nlohmann::json::value_t::array: {
    py::list out(value.size());
    for (std::size_t i = 0; i < value.size(); ++i)
      out[i] = to_python(value[i]);
    return out;
  }
  case nlohmann::json::value_t::string:
    return py::str(value.get_ref<const std::string&>());
  case nlohmann::json::value_t::boolean:
    return py::bool_(value.get<bool>());
  case nlohmann::json::value_t::number_integer:
    return py::int_(value.get<std::int64_t>());
  case nlohmann::json::value_t::number_unsigned:
    return py::int_(value.get<std::uint64_t>());
  case nlohmann::json::value_t::number_float:
    return py::float_(value.get<double>());
  default:
    return py::none();
  }
}

// overrides {"cluster.nodes": 8, "cluster.nic.bandwidth": "25Gbps"} as the `--set path=value` assignments they mean.
// A value is written as JSON, except a string that JSON would not read, written plain as one types it after --set:
// "25Gbps" stays 25Gbps, while "8" becomes "\"8\"" so that it stays a string.
std::vector<std::string> assignments(const py::object& overrides) {
  std::vector<std::string> out;
  if (overrides.is_none()) return out;
  if (!py::isinstance<py::dict>(overrides)) throw py::type_error("overrides: expected a dict of path -> value");
  const auto dumps = py::module_::import("json").attr("dumps");
  for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(overrides)) {
    if (!py::isinstance<py::str>(key)) throw py::type_error("overrides: expected str keys such as \"cluster.nodes\"");
    const auto path = key.cast<std::string>();
    if (path.find('=') != std::string::npos)
      throw scenario::ScenarioError("overrides", "", "a path cannot contain '=': \"" + path + "\"");
    std::string text;
    if (py::isinstance<py::str>(value)) {
      text = value.cast<std::string>();
      const bool plain = !text.empty() && text.find_first_of(" \t") != 0 &&
                         text.find_last_of(" \t") != text.size() - 1 && !nlohmann::json::accept(text);
      if (!plain) text = nlohmann::json(text).dump();
    } else {
      text = dumps(value).cast<std::string>();
    }
    out.push_back(path + "=" + text);
    try {
      scenario::parse_override(out.back()); // its form checked here, where the error names the argument
    } catch (const scenario::ScenarioError& e) {
      throw renamed(e);
    }
  }
  return out;
}

// The scenario argument: a dict is read as the text of a scenario file named "<dict>"; anything else is a path (str,
// bytes or os.PathLike). The GIL is held here; the reading itself happens without it (Input::load).
struct Input {
  bool from_text = false;
  std::string text_or_path;
  std::vector<std::string> sets;

  std::string origin() const { return from_text ? "<dict>" : text_or_path; }

  scenario::Scenario load() const {
    std::vector<scenario::Override> overrides;
    for (const auto& s : sets)
      overrides.push_back(scenario::parse_override(s));
    return from_text ? scenario::parse_scenario(text_or_path, "<dict>", overrides)
                     : scenario::load_scenario(text_or_path, overrides);
  }
};

Input input(const py::object& scenario, const py::object& overrides) {
  Input in;
  if (py::isinstance<py::dict>(scenario)) {
    in.from_text = true;
    in.text_or_path = py::module_::import("json").attr("dumps")(scenario).cast<std::string>();
  } else {
    in.text_or_path = py::module_::import("os").attr("fsdecode")(scenario).cast<std::string>();
    // The C library would read the path only up to a NUL: "q.json\0x" must not run q.json.
    if (in.text_or_path.find('\0') != std::string::npos)
      throw scenario::ScenarioError("scenario", "", "expected a path without NUL characters");
  }
  in.sets = assignments(overrides);
  return in;
}

// A list of ints or strings as the comma-separated text the CLI's flag takes, or the text itself.
std::string list_text(const py::object& value, const char* argument) {
  if (value.is_none()) return "";
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value))
    throw py::type_error(std::string(argument) + ": expected a list or a string");
  std::string out;
  for (const auto& item : value) {
    if (!out.empty()) out += ",";
    out += py::str(item).cast<std::string>();
  }
  return out;
}

int jobs_of(int requested) {
  if (requested < 0 || requested > 1024)
    throw scenario::ScenarioError("jobs", "", fmt::format("expected 0 (one per core) to 1024, got {}", requested));
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// An integer argument within the range the command line's flag checks (a billion trials would allocate gigabytes
// before anything ran); `name` is the argument's.
int counted(int value, const char* name, std::int64_t min, std::int64_t max) {
  if (value < min || value > max)
    throw scenario::ScenarioError(name, "", fmt::format("expected an integer from {} to {}, got {}", min, max, value));
  return value;
}

// A seed: None, or a whole number from 0 to 2^64 - 1 (pybind11's own cast names no argument, and a bool is no seed).
std::optional<std::uint64_t> seed_of(const py::object& seed) {
  if (seed.is_none()) return std::nullopt;
  const auto refuse = [&] {
    return scenario::ScenarioError("seed", "",
                                   fmt::format("expected None or a whole number from 0 to {}, got {}",
                                               std::numeric_limits<std::uint64_t>::max(),
                                               py::repr(seed).cast<std::string>()));
  };
  if (!py::isinstance<py::int_>(seed) || py::isinstance<py::bool_>(seed)) throw refuse();
  if (PyObject_RichCompareBool(seed.ptr(), py::int_(0).ptr(), Py_LT) == 1 ||
      PyObject_RichCompareBool(seed.ptr(), py::int_(std::numeric_limits<std::uint64_t>::max()).ptr(), Py_GT) == 1)
    throw refuse();
  return seed.cast<std::uint64_t>();
}

// Runs `body` without the GIL (other Python threads go on while simulations run) and sorts what it throws: the
// scenario's faults stay ScenarioError (a plan that cannot run named by the scenario, as `dtsim run` names it), a
// simulation that needs more memory than this machine allows is the scenario's to change too, and anything else
// is a failed simulation.
template <class Body> auto simulating(const Input& in, Body&& body) {
  py::gil_scoped_release release;
  // One call at a time: the library was written for one command per process, and its children's signal handling
  // (sim/engine/child_process.cpp: handlers installed and restored around each batch) would be left wrong by two
  // batches from two Python threads. A call's own simulations still run `jobs` at a time. Taken without the GIL, so
  // that a thread waiting here does not stop the others.
  static std::mutex one_at_a_time;
  const std::lock_guard lock(one_at_a_time);
  try {
    return body();
  } catch (const scenario::ScenarioError& e) {
    throw renamed(e);
  } catch (const engine::Interrupted&) {
    throw; // KeyboardInterrupt, as Ctrl-C is in Python
  } catch (const plan::PlanError& e) {
    throw scenario::ScenarioError(in.origin(), "", e.what());
  } catch (const engine::ResourceError& e) {
    throw scenario::ScenarioError(in.origin(), "", e.what());
  } catch (const std::exception& e) {
    throw SimulationFailure(e.what());
  }
}

py::object py_run(const py::object& scenario, const py::object& overrides) {
  const auto in = input(scenario, overrides);
  const auto document = simulating(in, [&] {
    const auto base = in.load();
    return studies::run_document(simulate(base, false, false, memory_limit(0, 1)).result);
  });
  return to_python(document);
}

py::object py_sweep(const py::object& scenario, const py::object& nodes, const py::object& overrides, int jobs) {
  const auto in = input(scenario, overrides);
  const auto text = list_text(nodes, "nodes");
  const int parallel = jobs_of(jobs);
  const auto document = simulating(in, [&] {
    const auto base = in.load();
    std::vector<int> counts;
    try {
      counts = studies::parse_node_counts(text);
    } catch (const std::invalid_argument& e) {
      throw scenario::ScenarioError("nodes", "", e.what());
    }
    const auto limit = memory_limit(0, std::min<int>(parallel, static_cast<int>(counts.size())));
    return studies::sweep_document(base, dtsim::studies::sweep(base, counts, parallel, {}, nullptr, limit));
  });
  return to_python(document);
}

py::object py_compare(const py::object& scenario, const py::object& strategies, const py::object& overrides, int jobs) {
  const auto in = input(scenario, overrides);
  const auto text = list_text(strategies, "strategies");
  const int parallel = jobs_of(jobs);
  const auto document = simulating(in, [&] {
    const auto base = in.load();
    std::vector<std::string> names;
    try {
      names = studies::parse_strategy_list(text);
    } catch (const std::invalid_argument& e) {
      throw scenario::ScenarioError("strategies", "", e.what());
    }
    const auto limit = memory_limit(0, std::min<int>(parallel, static_cast<int>(names.size())));
    return studies::compare_document(dtsim::studies::compare(base, names, parallel, {}, nullptr, limit));
  });
  return to_python(document);
}

py::object py_search(const py::object& scenario, const py::object& overrides, const py::object& simulate,
                     const py::object& nodes, const py::object& fidelity, int jobs) {
  const auto in = input(scenario, overrides);
  const auto node_text = list_text(nodes, "nodes");
  const auto simulate_text = py::str(simulate).cast<std::string>();
  if (!fidelity.is_none() && !py::isinstance<py::str>(fidelity))
    throw py::type_error("fidelity: expected \"step\", \"aggregate\", \"coarse\" or None");
  const auto fidelity_text = fidelity.is_none() ? std::string() : fidelity.cast<std::string>();
  const int parallel = jobs_of(jobs);
  const auto document = simulating(in, [&] {
    const auto base = in.load();
    studies::search::Options options;
    try {
      options = studies::search_options(in.sets, node_text, fidelity_text, simulate_text);
    } catch (const scenario::ScenarioError& e) {
      throw renamed(e);
    }
    options.jobs = parallel;
    options.limit = memory_limit(0, parallel);
    const auto result = studies::search::search(base, options);
    // As `dtsim search` (exit status 1): no JSON document for a search in which nothing ran, but why.
    if (studies::search::by_throughput(result).empty()) {
      auto why = studies::search_nothing_ran(result, base.model.workload.sample_unit);
      while (!why.empty() && why.back() == '\n')
        why.pop_back();
      throw SimulationFailure(why);
    }
    return studies::search_document(base, result);
  });
  return to_python(document);
}

// A str argument, or "" for None.
std::string text_of(const py::object& value, const char* argument) {
  if (value.is_none()) return "";
  if (!py::isinstance<py::str>(value)) throw py::type_error(std::string(argument) + ": expected a str or None");
  return value.cast<std::string>();
}

py::object py_train(const py::object& scenario, const py::object& overrides, int trials, const py::object& seed,
                    const py::object& iteration_time, int jobs) {
  const auto in = input(scenario, overrides);
  const auto time_text = text_of(iteration_time, "iteration_time");
  const auto given_seed = seed_of(seed);
  counted(trials, "trials", 1, 1'000'000);
  const int parallel = jobs_of(jobs);
  const auto document = simulating(in, [&] {
    const auto base = in.load();
    studies::run_steps(base); // a run without a length is refused before anything runs
    const auto iteration = studies::measured_iteration_time(time_text);
    const auto limit = memory_limit(0, std::min(parallel, trials));
    return studies::train_document(
        studies::train(base, trials, given_seed.value_or(base.run.seed), parallel, {}, limit, iteration));
  });
  return to_python(document);
}

py::object py_collective(const py::object& scenario, const py::object& instance, const py::object& nodes,
                         const py::object& overrides, const std::string& op, const std::string& algorithm,
                         const std::string& protocol, const std::string& fidelity, int ranks, const py::object& sizes,
                         int jobs) {
  const bool from_instance = !instance.is_none();
  if (from_instance == !scenario.is_none())
    throw scenario::ScenarioError("collective", "", "give a scenario or an instance (dtsim.list(\"instances\")), one");
  if (!from_instance && !nodes.is_none())
    throw scenario::ScenarioError("nodes", "",
                                  "only with instance; with a scenario use overrides {\"cluster.nodes\": N}");
  Input in;
  if (from_instance) {
    in.text_or_path = text_of(instance, "instance");
    in.sets = assignments(overrides);
  } else {
    in = input(scenario, overrides);
  }
  const int node_count = nodes.is_none() ? 1 : counted(nodes.cast<int>(), "nodes", 1, scenario::limits::kNodes);
  counted(ranks, "ranks", 0, scenario::limits::kGpus); // 0: every GPU of the cluster
  const auto size_text = list_text(sizes, "sizes");
  const int parallel = jobs_of(jobs);
  const auto document = simulating(in, [&] {
    scenario::Scenario base;
    if (from_instance) {
      std::vector<scenario::Override> parsed;
      for (const auto& s : in.sets)
        parsed.push_back(scenario::parse_override(s));
      base = studies::instance_scenario(in.text_or_path, node_count, parsed, "--instance");
    } else {
      base = in.load();
    }
    const auto bytes = studies::collective_sizes(size_text);
    const auto bench = studies::collective_bench(
        base,
        {.op = op, .algorithm = algorithm, .protocol = protocol, .fidelity = fidelity, .ranks = ranks, .sizes = bytes});
    const auto points = studies::run_collective_bench(
        base, bench, parallel, {}, memory_limit(0, std::min<int>(parallel, static_cast<int>(bytes.size()))));
    return studies::collective_document(base, bench, fidelity, points);
  });
  return to_python(document);
}

py::object py_explain(const py::object& scenario, const py::object& overrides, const py::object& path) {
  const auto in = input(scenario, overrides);
  std::string pair;
  if (py::isinstance<py::tuple>(path) || py::isinstance<py::list>(path)) {
    if (py::len(path) != 2) throw scenario::ScenarioError("path", "", "expected two GPU numbers (a, b)");
    pair = list_text(path, "path");
  } else {
    pair = text_of(path, "path");
  }
  const auto document = simulating(in, [&] { return studies::explain(in.load(), pair, memory_limit(0, 1)).document; });
  return to_python(document);
}

py::object py_list(const std::string& what) {
  try {
    return to_python(studies::catalog_document(what));
  } catch (const scenario::ScenarioError& e) {
    throw renamed(e);
  }
}

py::object py_validate(const py::object& filter, const py::object& root, const py::object& measurements,
                       const py::object& profile, bool every_point, int jobs) {
  const studies::validate::Request request{
      .filter = text_of(filter, "filter"),
      .root = root.is_none() ? "" : py::module_::import("os").attr("fsdecode")(root).cast<std::string>(),
      .measurements =
          measurements.is_none() ? "" : py::module_::import("os").attr("fsdecode")(measurements).cast<std::string>(),
      .profile = text_of(profile, "profile"),
      .every_point = every_point};
  const int parallel = jobs_of(jobs);
  Input in; // what errors name when no scenario is at fault
  in.text_or_path = "validate";
  const auto document = simulating(in, [&] {
    const auto selection = studies::validate::select_cases(request);
    const auto outcomes =
        studies::validate::run_cases(selection.cases, selection.root, parallel, {}, memory_limit(0, parallel));
    return studies::validate::report_document(selection, outcomes);
  });
  return to_python(document);
}

py::object py_plan(const py::object& scenario, const py::object& overrides, const py::object& tokens,
                   const py::object& steps, const py::object& deadline, const py::object& budget,
                   const py::object& instances, const py::object& nodes, const std::string& capacity, int clusters,
                   int layouts, int trials, const py::object& seed, int jobs) {
  const auto in = input(scenario, overrides);
  studies::planning::Request request{
      .sets = in.sets,
      .tokens = tokens.is_none() ? "" : py::str(tokens).cast<std::string>(),
      .steps = steps.is_none() ? "" : py::str(steps).cast<std::string>(),
      .deadline = text_of(deadline, "deadline"),
      .budget = budget.is_none() ? "" : py::str(budget).cast<std::string>(),
      .instances = instances.is_none() ? std::nullopt : std::optional(list_text(instances, "instances")),
      .nodes = list_text(nodes, "nodes"),
      .capacity = capacity,
      .clusters = counted(clusters, "clusters", 1, 1000),
      .layouts = counted(layouts, "layouts", 1, 1000),
      .trials = counted(trials, "trials", 1, 100'000)};
  const auto given_seed = seed_of(seed);
  const int parallel = jobs_of(jobs);
  const auto document = simulating(in, [&] {
    const auto base = in.load();
    request.seed = given_seed.value_or(base.run.seed);
    auto options = studies::planning::plan_options(base, request);
    options.search.jobs = parallel;
    options.search.limit = memory_limit(0, parallel);
    const auto result = studies::planning::plan(base, options);
    return studies::planning::plan_document(base, options, result);
  });
  return to_python(document);
}

} // namespace

PYBIND11_MODULE(_dtsim, m) {
  m.doc() = "The native half of dtsim (python/dtsim/__init__.py wraps it): each function returns what the command's "
            "--json writes, as dicts and lists.";
  m.attr("__version__") = DTSIM_VERSION;
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  scope["__name__"] = "dtsim"; // the classes' home, where users catch them
  py::exec(kExceptions, scope);
  scenario_error_class = py::object(scope["ScenarioError"]).release();
  simulation_error_class = py::object(scope["SimulationError"]).release();
  m.attr("ScenarioError") = scenario_error_class;
  m.attr("SimulationError") = simulation_error_class;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const scenario::ScenarioError& e) {
      raise_scenario_error(e);
    } catch (const SimulationFailure& e) {
      PyErr_SetString(simulation_error_class.ptr(), e.what());
    } catch (const engine::Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
  // Ctrl-C (or SIGTERM) during a call stops its simulations and raises KeyboardInterrupt: the interpreter lives on.
  engine::set_interrupt_throws(true);

  // The documented signatures, defaults and types are the package's (python/dtsim/__init__.py); these take every
  // argument by keyword, as the package passes them.
  m.def("run", &py_run, py::arg("scenario"), py::arg("overrides"));
  m.def("sweep", &py_sweep, py::arg("scenario"), py::arg("nodes"), py::arg("overrides"), py::arg("jobs"));
  m.def("compare", &py_compare, py::arg("scenario"), py::arg("strategies"), py::arg("overrides"), py::arg("jobs"));
  m.def("search", &py_search, py::arg("scenario"), py::arg("overrides"), py::arg("simulate"), py::arg("nodes"),
        py::arg("fidelity"), py::arg("jobs"));
  m.def("train", &py_train, py::arg("scenario"), py::arg("overrides"), py::arg("trials"), py::arg("seed"),
        py::arg("iteration_time"), py::arg("jobs"));
  m.def("collective", &py_collective, py::arg("scenario"), py::arg("instance"), py::arg("nodes"), py::arg("overrides"),
        py::arg("op"), py::arg("algorithm"), py::arg("protocol"), py::arg("fidelity"), py::arg("ranks"),
        py::arg("sizes"), py::arg("jobs"));
  m.def("explain", &py_explain, py::arg("scenario"), py::arg("overrides"), py::arg("path"));
  m.def("list", &py_list, py::arg("what"));
  m.def("validate", &py_validate, py::arg("filter"), py::arg("root"), py::arg("measurements"), py::arg("profile"),
        py::arg("every_point"), py::arg("jobs"));
  m.def("plan", &py_plan, py::arg("scenario"), py::arg("overrides"), py::arg("tokens"), py::arg("steps"),
        py::arg("deadline"), py::arg("budget"), py::arg("instances"), py::arg("nodes"), py::arg("capacity"),
        py::arg("clusters"), py::arg("layouts"), py::arg("trials"), py::arg("seed"), py::arg("jobs"));
}
