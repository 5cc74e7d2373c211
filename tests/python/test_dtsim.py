"""The Python module against the CLI: run, sweep, compare and search from a path and from a dict return results whose
to_dict() is the document `dtsim ... --json` writes, number for number, and whose typed fields read it; overrides are
--set; bad scenarios raise dtsim.ScenarioError with the JSON pointer of the field at fault.

ctest sets DTSIM_BINARY (the dtsim executable), DTSIM_SOURCE_DIR (the repository) and PYTHONPATH (the built module).
"""
import copy
import json
import os
import pathlib
import subprocess

import pytest

import dtsim

BINARY = os.environ.get("DTSIM_BINARY", "")
SOURCE = pathlib.Path(os.environ.get("DTSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
QUICKSTART = SOURCE / "scenarios" / "quickstart.json"
SEARCH_SMALL = SOURCE / "tests" / "data" / "search-small.json"


def cli(*args, tmp_path):
    """`dtsim ARGS --json FILE` run from the repository root: the document it wrote."""
    assert BINARY, "DTSIM_BINARY is not set (ctest sets it)"
    out = tmp_path / "cli.json"
    done = subprocess.run([BINARY, *map(str, args), "--json", str(out)], cwd=SOURCE, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def cli_error(*args):
    """`dtsim ARGS` that must fail with bad input (exit status 2): its message, without "error: "."""
    done = subprocess.run([BINARY, *map(str, args)], cwd=SOURCE, capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    return done.stderr[len("error: "):].rstrip("\n")


def without_commit(document):
    """The document without provenance.git_commit: the binary and the module may be linked at different moments of
    a working tree (clean, then dirty); every other field, the version and the scenario's hash included, must agree."""
    document = copy.deepcopy(document)

    def strip(value):
        if isinstance(value, dict):
            if isinstance(value.get("provenance"), dict):  # a GPU profile's provenance is its sources' text
                value["provenance"].pop("git_commit", None)
            for item in value.values():
                strip(item)
        elif isinstance(value, list):
            for item in value:
                strip(item)

    strip(document)
    return document


def same(python, expected):
    """A result (or a part of a document) equal to the CLI's document but for the commit."""
    if hasattr(python, "to_dict"):
        python = python.to_dict()
    assert without_commit(python) == without_commit(expected)


def scenario_dict(path):
    return json.loads(pathlib.Path(path).read_text())


def test_version_and_exceptions():
    done = subprocess.run([BINARY, "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[0].split() == ["dtsim", dtsim.__version__]
    assert done.stdout.splitlines()[1].startswith("commit ")
    assert issubclass(dtsim.ScenarioError, ValueError)
    assert issubclass(dtsim.SimulationError, RuntimeError)


@pytest.mark.parametrize("form", ["path", "pathlike", "dict"])
def test_run_equals_cli(form, tmp_path):
    scenario = {"path": str(QUICKSTART), "pathlike": QUICKSTART, "dict": scenario_dict(QUICKSTART)}[form]
    result = dtsim.run(scenario)
    expected = cli("run", QUICKSTART, tmp_path=tmp_path)
    same(result, expected)
    assert isinstance(result, dtsim.RunResult)
    # The typed fields are the document's figures.
    assert result.iteration_seconds.mean == expected["iteration_seconds"]["mean"] > 0
    assert result.throughput_samples_per_second == expected["throughput_samples_per_second"]
    assert result.mfu == expected["model_flops"]["mfu"]
    assert result.memory_per_gpu.total_bytes == expected["memory_per_gpu"]["total_bytes"]
    assert [i.name for i in result.memory_per_gpu.items] == [i["name"] for i in expected["memory_per_gpu"]["items"]]
    assert result.busiest_links[0].link == expected["busiest_links"][0]["link"]
    assert result.cost_usd.per_hour is None  # quickstart has no price
    assert result["provenance"]["scenario_hash"].startswith("fnv1a64:")


def test_cost_per_epoch_and_run_need_a_dataset():
    # A priced cluster without a dataset has a price per hour (3.06 USD a node of p3.2xlarge x 2 nodes) and no cost per
    # epoch or for the run: None, not 0 or the price of the two iterations simulated; with a dataset, both.
    scenario = scenario_dict(QUICKSTART)
    scenario.pop("dataset", None)
    priced = {"cluster.instance": "aws.p3.2xlarge", "cluster.nodes": 2}
    without = dtsim.run(scenario, overrides=priced).cost_usd
    assert without.per_hour == pytest.approx(2 * 3.06)
    assert without.per_epoch is None and without.run is None
    scenario["dataset"] = {"samples": 100000, "epochs": 2}
    epochs = dtsim.run(scenario, overrides=priced)
    assert epochs.cost_usd.per_epoch == pytest.approx(2 * 3.06 * epochs.epoch_seconds / 3600)
    assert epochs.cost_usd.run == pytest.approx(2 * epochs.cost_usd.per_epoch)


def test_overrides_equal_set(tmp_path):
    overrides = {"cluster.nodes": 2, "cluster.nic.bandwidth": "25Gbps", "run.iterations": 3}
    result = dtsim.run(str(QUICKSTART), overrides=overrides)
    expected = cli("run", QUICKSTART, "--set", "cluster.nodes=2", "--set", "cluster.nic.bandwidth=25Gbps", "--set",
                   "run.iterations=3", tmp_path=tmp_path)
    same(result, expected)
    assert result.nodes == 2
    # The overrides changed the run: the scenario as written gives other figures.
    assert result.iteration_seconds != dtsim.run(str(QUICKSTART)).iteration_seconds
    # From a dict too.
    same(dtsim.run(scenario_dict(QUICKSTART), overrides=overrides).to_dict()["iteration_seconds"],
         expected["iteration_seconds"])


@pytest.mark.parametrize("nodes", [[1, 2, 4], "1..4"])
def test_sweep_equals_cli(nodes, tmp_path):
    expected = cli("sweep", QUICKSTART, "--nodes", "1,2,4", "--jobs", 2, tmp_path=tmp_path)
    for scenario in (str(QUICKSTART), scenario_dict(QUICKSTART)):
        document = dtsim.sweep(scenario, nodes=nodes, jobs=2)
        same(document, expected)
    assert [p.nodes for p in document.points] == [1, 2, 4]
    assert all(p.ok for p in document.points)
    assert document.points[0].speedup == pytest.approx(1.0)
    # speedup is the throughput over the first point's, as documented.
    rates = [p.result.throughput_samples_per_second for p in document.points]
    assert document.points[2].speedup == pytest.approx(rates[2] / rates[0])


@pytest.mark.parametrize("strategies", [["allreduce", "ps-sync"], "allreduce,ps-sync"])
def test_compare_equals_cli(strategies, tmp_path):
    expected = cli("compare", QUICKSTART, "--strategies", "allreduce,ps-sync", "--jobs", 2, tmp_path=tmp_path)
    for scenario in (QUICKSTART, scenario_dict(QUICKSTART)):
        results = dtsim.compare(scenario, strategies=strategies, jobs=2)
        same(results.to_dict()["strategies"], expected)
    assert len(results) == 2
    assert [e.strategy for e in results] == ["allreduce", "ps-sync"]
    assert results.entries[0].result.throughput_samples_per_second == expected[0]["throughput_samples_per_second"]
    assert results[0]["throughput_samples_per_second"] != results[1]["throughput_samples_per_second"]


def test_search_equals_cli(tmp_path):
    expected = cli("search", SEARCH_SMALL, "--jobs", 2, tmp_path=tmp_path)
    for scenario in (str(SEARCH_SMALL), scenario_dict(SEARCH_SMALL)):
        same(dtsim.search(scenario, jobs=2), expected)
    # The counts tests/data/search-small.json was made for (counted by hand in tests/cli/search_test.cpp).
    counts = expected["counts"]
    assert (counts["enumerated"], counts["invalid"], counts["do_not_fit"], counts["simulated"]) == (18, 6, 8, 4)


def test_search_options_equal_flags(tmp_path):
    # run.iterations set by an override is kept instead of the search's one measured iteration.
    expected = cli("search", SEARCH_SMALL, "--simulate", 2, "--fidelity", "step", "--nodes", "1", "--set",
                   "run.iterations=2", "--jobs", 2, tmp_path=tmp_path)
    document = dtsim.search(SEARCH_SMALL, overrides={"run.iterations": 2}, simulate=2, fidelity="step", nodes=[1],
                            jobs=2)
    same(document, expected)
    assert document["scenario"]["run"]["iterations"] == 2
    assert sum(c.simulated for c in document.candidates) == expected["counts"]["simulated"] == 2


def test_search_rankings_index_the_candidates():
    # best_by_throughput holds indices into candidates, the fastest first; fastest() returns those candidates.
    found = dtsim.search(SEARCH_SMALL, simulate=4, jobs=2)
    best = [found.candidates[i] for i in found.best_by_throughput]
    assert best == found.fastest() and len(best) == 4
    rates = [c.throughput_samples_per_second for c in best]
    assert rates == sorted(rates, reverse=True)
    costs = [c.cost_usd_per_million_samples for c in found.cheapest()]
    assert costs == sorted(costs)


@pytest.mark.parametrize("where, value, pointer", [
    (("cluster", "nodes"), "eight", "/cluster/nodes"),
    (("cluster", "nodes"), 0, "/cluster/nodes"),
    (("cluster", "bogus"), 1, "/cluster/bogus"),
])
def test_bad_dict_raises_with_pointer(where, value, pointer):
    scenario = scenario_dict(QUICKSTART)
    scenario[where[0]][where[1]] = value
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.run(scenario)
    error = raised.value
    assert error.pointer == pointer
    assert error.file == "<dict>"
    assert pointer in str(error)
    assert str(error) == f"<dict>: {pointer}: {error.detail}"


def test_bad_override_raises_as_cli():
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.run(QUICKSTART, overrides={"cluster.nodes": "x"})
    assert raised.value.pointer == "/cluster/nodes"
    assert raised.value.file == str(QUICKSTART)
    assert str(raised.value) == cli_error("run", QUICKSTART, "--set", "cluster.nodes=x")


def test_string_override_that_reads_as_json_stays_a_string():
    # "4" as a str is the string "4" (which nodes refuses), not the number 4.
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.run(QUICKSTART, overrides={"cluster.nodes": "4"})
    assert raised.value.pointer == "/cluster/nodes"


def test_does_not_fit_raises_scenario_error():
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.run(QUICKSTART, overrides={"model.batch_per_gpu": 1000000})
    assert "does not fit in GPU memory" in str(raised.value)
    assert str(raised.value) == cli_error("run", QUICKSTART, "--set", "model.batch_per_gpu=1000000")


def test_bad_arguments_raise_scenario_error():
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.sweep(QUICKSTART, nodes="1..x")
    assert raised.value.file == "nodes"
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.compare(QUICKSTART, strategies=["allreduce", "no-such-strategy"])
    assert raised.value.file == "strategies"
    with pytest.raises(dtsim.ScenarioError) as raised:
        dtsim.search(SEARCH_SMALL, simulate=0)
    assert raised.value.file == "simulate"
    with pytest.raises(dtsim.ScenarioError):
        dtsim.run(SOURCE / "no-such-scenario.json")
    with pytest.raises(TypeError):
        dtsim.run(QUICKSTART, overrides=["cluster.nodes=2"])


@pytest.mark.parametrize("call, argument, phrase", [
    # The command line's ranges: a billion trials would allocate gigabytes before anything ran.
    (lambda: dtsim.plan(QUICKSTART, steps=10, trials=10**9), "trials", "from 1 to 100000"),
    (lambda: dtsim.train(QUICKSTART, overrides={"training.steps": 10}, trials=0), "trials", "from 1 to 1000000"),
    (lambda: dtsim.collective(QUICKSTART, ranks=-1), "ranks", "from 0 to"),
    (lambda: dtsim.collective(instance="aws.p5.48xlarge", nodes=0), "nodes", "from 1 to"),
    # A seed is a whole number from 0 to 2^64 - 1, named as the argument it is.
    (lambda: dtsim.train(QUICKSTART, overrides={"training.steps": 10}, seed=-1), "seed", "got -1"),
    (lambda: dtsim.plan(QUICKSTART, steps=10, seed=2**64), "seed", "got 18446744073709551616"),
    (lambda: dtsim.plan(QUICKSTART, steps=10, seed=True), "seed", "got True"),
    # The C library reads a path only up to a NUL: "quickstart.json\0x" must not run quickstart.json.
    (lambda: dtsim.run(str(QUICKSTART) + "\0x"), "scenario", "without NUL"),
])
def test_arguments_out_of_range_raise_naming_the_argument(call, argument, phrase):
    with pytest.raises(dtsim.ScenarioError) as raised:
        call()
    assert raised.value.file == argument
    assert phrase in str(raised.value)


def test_interrupt_raises_keyboard_interrupt_and_stops_the_simulations():
    """Ctrl-C during a call stops its child processes and raises KeyboardInterrupt; the interpreter goes on (the
    command-line tool dies of the signal instead). The run takes some 40 s uninterrupted (a 1 GiB ring all-reduce
    over 1,024 GPUs, the ring benchmark); the signal comes after 1 s."""
    import signal
    import threading
    import time

    def children():
        found = []
        for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():  # the parent pid, after the state
                found.append(stat.parent.name)
        return found

    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match="interrupted by SIGINT: 0 of 1 simulation"):
        dtsim.run(SOURCE / "tools" / "bench" / "ring-1gib-1024-gpus.json")
    timer.join()
    assert time.monotonic() - started < 10
    assert children() == []
    assert dtsim.run(QUICKSTART).throughput_samples_per_second > 0  # the module still works
