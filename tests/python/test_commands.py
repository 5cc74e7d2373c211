"""The commands beyond run, sweep, compare and search, from Python: plan, train, collective, explain, validate and list
return results whose to_dict() is the document `dtsim ... --json` writes, whose typed fields read it, and whose
to_dataframe() has a row per point, case or plan; a bad argument raises ScenarioError named by the argument, with the
CLI's words.
"""
import pytest

import dtsim
from test_dtsim import QUICKSTART, SOURCE, cli, cli_error, same

# A job small enough to plan in seconds: eight 2e10-FLOP layers on p4d or a2 nodes (the report test's plan).
PLAN_SMALL = {
    "version": 1, "name": "plan-small",
    "model": {"layers": [{"name": f"fc{i}", "kind": "matmul", "forward_flops": 2e10, "parameters": 10000000,
                          "input_elements": 4096, "output_elements": 4096} for i in range(8)],
              "batch_per_gpu": 8},
    "cluster": {"instance": "aws.p4d.24xlarge", "nodes": 1},
    "training": {"optimizer": "momentum", "steps": 20000},
    "spot": {"interruptions_per_month": 0, "notice": "30s", "replacement": "10min"},
    "run": {"iterations": 2, "warmup_iterations": 1},
}


def test_train_equals_cli(tmp_path):
    expected = cli("train", QUICKSTART, "--trials", 4, "--seed", 7, "--jobs", 2, tmp_path=tmp_path)
    result = dtsim.train(QUICKSTART, trials=4, seed=7, jobs=2)
    same(result, expected)
    assert result.wall_seconds.mean == expected["summary"]["wall_seconds"]["mean"] > 0
    assert result.steps == expected["steps"]
    assert len(result.trials()) == len(result.rows()) == 4


def test_collective_equals_cli(tmp_path):
    expected = cli("collective", "--instance", "aws.p4d.24xlarge", "--nodes", 2, "--sizes", "1MiB,8MiB",
                   tmp_path=tmp_path)
    for sizes in (["1MiB", "8MiB"], [1048576, 8388608], "1MiB,8MiB"):
        result = dtsim.collective(instance="aws.p4d.24xlarge", nodes=2, sizes=sizes)
        same(result, expected)
    assert [p.size_bytes for p in result.points] == [2**20, 2**23]
    # nccl-tests' bus bandwidth of an all-reduce: algbw x 2 (n - 1) / n, n = 16 ranks.
    point = result.points[1]
    assert point.busbw_bytes_per_second == pytest.approx(point.algbw_bytes_per_second * 2 * 15 / 16)
    assert point.algbw_bytes_per_second == pytest.approx(point.size_bytes / point.time_seconds)
    assert (result.operation, result.ranks, result.nodes) == ("all-reduce", 16, 2)


def test_explain_equals_cli(tmp_path):
    expected = cli("explain", QUICKSTART, "--path", "0,1", tmp_path=tmp_path)
    for path in ((0, 1), "0,1"):
        result = dtsim.explain(QUICKSTART, path=path)
        same(result, expected)
    assert result.path["links"] == expected["path"]["links"]
    assert result.memory_per_gpu.total_bytes == expected["memory_per_gpu"]["total_bytes"]
    assert result.parallelism is None  # quickstart is data parallel


@pytest.mark.parametrize("what", ["instances", "gpus", "frameworks"])
def test_list_equals_cli(what, tmp_path):
    expected = cli("list", what, tmp_path=tmp_path)
    result = dtsim.list(what)
    same(result, expected)
    assert result.what == what and len(result.rows()) == len(expected["items"]) > 0


def test_validate_equals_cli(tmp_path):
    expected = cli("validate", "--filter", "bert", tmp_path=tmp_path)
    result = dtsim.validate(filter="bert", root=SOURCE)
    same(result, expected)
    assert [c.name for c in result.cases] == [c["name"] for c in expected["cases"]]
    for level, summary in expected["summary"].items():
        assert result.summary[level].median_abs_error_percent == summary["median_abs_error_percent"]
    # error_percent is (predicted - measured) / measured, in percent.
    case = next(c for c in result.cases if c.predicted is not None)
    assert case.error_percent == pytest.approx(100 * (case.predicted - case.measured) / case.measured)


def test_plan_equals_cli(tmp_path):
    scenario = tmp_path / "plan.json"
    scenario.write_text(__import__("json").dumps(PLAN_SMALL))
    expected = cli("plan", scenario, "--instances", "aws.p4d.24xlarge,gcp.a2-highgpu-8g", "--nodes", "1,2",
                   "--trials", 2, "--deadline", "0.8h", "--jobs", 2, tmp_path=tmp_path)
    result = dtsim.plan(PLAN_SMALL, instances=["aws.p4d.24xlarge", "gcp.a2-highgpu-8g"], nodes=[1, 2], trials=2,
                        deadline="0.8h", jobs=2)
    expected["scenario"].pop("name", None)
    document = result.to_dict()
    document["scenario"].pop("name", None)
    same(document, expected)
    assert len(result.plans) == len(expected["plans"]) > 0
    assert result.cheapest_on_time == expected["cheapest_on_time"]
    if result.chosen() is not None:
        assert result.chosen() == result.plans[result.cheapest_on_time]
        assert result.chosen().time_to_train_seconds_p90 <= 0.8 * 3600


def test_plan_that_misses_its_deadline_chooses_nothing():
    # A second is no time to train in: every plan misses it, and the plan the command would lead with is none.
    result = dtsim.plan(PLAN_SMALL, instances=["aws.p4d.24xlarge"], nodes=[1], trials=1, layouts=1, deadline="1s",
                        jobs=2)
    assert result.plans and result.cheapest_on_time is None
    assert result.binding and "no plan meets the deadline" in result.binding
    assert result.chosen() is None


def test_results_as_dataframes():
    pandas = pytest.importorskip("pandas")
    run = dtsim.run(QUICKSTART)
    frame = run.to_dataframe()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 1
    assert frame["iteration_seconds.mean"][0] == run.iteration_seconds.mean
    sweep = dtsim.sweep(QUICKSTART, nodes=[1, 2], jobs=2).to_dataframe()
    assert list(sweep["nodes"]) == [1, 2]
    assert list(sweep["speedup"])[0] == pytest.approx(1.0)
    cases = dtsim.validate(filter="bert", root=SOURCE).to_dataframe()
    assert {"name", "predicted", "measured", "error_percent"} <= set(cases.columns)


@pytest.mark.parametrize("call, argument, flags", [
    (lambda: dtsim.collective(instance="aws.p4d.24xlarge", op="all-gossip"), "op",
     ["collective", "--instance", "aws.p4d.24xlarge", "--op", "all-gossip"]),
    (lambda: dtsim.collective(instance="aws.p4d.24xlarge", algorithm="ring", op="barrier"), "algorithm",
     ["collective", "--instance", "aws.p4d.24xlarge", "--algo", "ring", "--op", "barrier"]),
    (lambda: dtsim.train(QUICKSTART, iteration_time="forever"), "iteration_time",
     ["train", QUICKSTART, "--iteration-time", "forever"]),
    (lambda: dtsim.explain(QUICKSTART, path="0-1"), "path", ["explain", QUICKSTART, "--path", "0-1"]),
    (lambda: dtsim.list("widgets"), "what", ["list", "widgets"]),
    (lambda: dtsim.plan(PLAN_SMALL, tokens="lots"), "tokens", None),
    (lambda: dtsim.plan(PLAN_SMALL, instances=["aws.p9"]), "instances", None),
])
def test_bad_arguments_name_the_argument(call, argument, flags):
    with pytest.raises(dtsim.ScenarioError) as raised:
        call()
    assert raised.value.file == argument
    if flags:  # the CLI's message, with the flag where Python names the argument
        flag = cli_error(*flags).split(":", 1)
        assert raised.value.detail == flag[1].strip()
