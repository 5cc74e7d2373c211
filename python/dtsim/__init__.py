"""dtsim: a discrete-event simulator of distributed deep-learning training, on SimGrid.

Every command of the ``dtsim`` binary that simulates or reads its catalog is a function here, with the command's
options as keyword arguments: :func:`run`, :func:`sweep`, :func:`compare`, :func:`search`, :func:`plan`,
:func:`train`, :func:`collective`, :func:`explain`, :func:`validate` and :func:`list`. A scenario is a path or a dict
with a scenario file's content; ``overrides`` is a dict such as ``{"cluster.nodes": 8}``, as ``--set
cluster.nodes=8``. Each returns a typed result (dtsim._results): a frozen dataclass of the main figures, named as in
the command's JSON with their units, ``to_dict()`` for the whole document ``--json`` writes and ``to_dataframe()``
for its rows (with pandas). Each simulation runs in a child process of its own (SimGrid allows one engine per
process), with the GIL released; Ctrl-C during a call stops its simulations and raises KeyboardInterrupt.

Errors: :class:`ScenarioError` (a ValueError) for input dtsim cannot run, with ``.pointer`` the JSON pointer of the
field at fault; :class:`SimulationError` (a RuntimeError) when a simulation of valid input fails.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import _dtsim
from ._dtsim import ScenarioError, SimulationError
from ._results import (Breakdown, Candidate, CollectivePoint, CollectiveResult, CompareEntry, CompareResult, Cost,
                       ExplainResult, LevelSummary, Link, ListResult, Memory, MemoryItem, PlannedCluster, PlanResult,
                       PlanRow, RunResult, SearchResult, Stats, SweepPoint, SweepResult, TrainResult, TrialStats,
                       ValidateResult, ValidationCase, read)

__version__: str = _dtsim.__version__

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A scenario file's path, or a dict with a scenario file's content (docs/scenario-format.md)."""
Overrides = Optional[Mapping[str, Any]]
"""{"cluster.nodes": 8, "cluster.nic.bandwidth": "25Gbps"}: each as --set path=value."""
Counts = Union[str, Sequence[int], None]
"""Node counts: a list of ints, or the CLI's text "1,2,4" or "1..64" (doubling from the first to the last)."""

__all__ = [
    "run", "sweep", "compare", "search", "plan", "train", "collective", "explain", "validate", "list",
    "ScenarioError", "SimulationError", "RunResult", "SweepResult", "SweepPoint", "CompareResult", "CompareEntry",
    "SearchResult", "Candidate", "PlanResult", "PlanRow", "PlannedCluster", "TrainResult", "TrialStats",
    "CollectiveResult", "CollectivePoint", "ExplainResult", "ListResult", "ValidateResult", "ValidationCase",
    "LevelSummary", "Stats", "Breakdown", "Cost", "Memory", "MemoryItem", "Link", "Scenario", "Overrides", "Counts",
    "__version__",
]


def _scenario(scenario: Scenario) -> Any:
    return dict(scenario) if isinstance(scenario, Mapping) else scenario


def _overrides(overrides: Overrides) -> Any:
    # Any other type goes through as it is, for the native module's TypeError ("expected a dict of path -> value").
    return dict(overrides) if isinstance(overrides, Mapping) else overrides


def run(scenario: Scenario, overrides: Overrides = None) -> RunResult:
    """Simulates the scenario once, as ``dtsim run --json``.

    Returns a RunResult: iteration_seconds (mean, min, max, p50, p90, p99), throughput_samples_per_second, epoch_seconds,
    breakdown_seconds_per_iteration, memory_per_gpu (bytes), mfu, cost_usd (per hour, per epoch, run), the busiest
    links; to_dict() for every figure of the run.

    Raises ScenarioError (with .pointer) for a scenario that cannot run, including a plan that does not fit in GPU
    memory; SimulationError when the simulation fails.
    """
    return read(RunResult, _dtsim.run(scenario=_scenario(scenario), overrides=_overrides(overrides)))


def sweep(scenario: Scenario, nodes: Counts, overrides: Overrides = None, jobs: int = 0) -> SweepResult:
    """The scenario at several node counts, as ``dtsim sweep --json``.

    nodes: a list of ints, or "1,2,4" or "1..64" (doubling from the first to the last).
    jobs: simulations at a time, each in a process of its own (0: one per core).

    Each point has its run, speedup (the throughput over the first point's) and efficiency (the speedup over the
    ratio of GPUs), or, for a point that failed (it does not fit at that size, ...), ok False and its error: that
    raises nothing, the other points are there.
    """
    return read(SweepResult, _dtsim.sweep(scenario=_scenario(scenario), nodes=nodes,
                                          overrides=_overrides(overrides), jobs=jobs))


def compare(scenario: Scenario, strategies: Union[str, Sequence[str]], overrides: Overrides = None,
            jobs: int = 0) -> CompareResult:
    """The scenario under several synchronization strategies, as ``dtsim compare --strategies --json``.

    strategies: a list such as ["allreduce", "ps-sync", "ssp:3"], or "allreduce,ps-sync,ssp:3".
    jobs: simulations at a time (0: one per core).

    The entries are in the order given, each a run or, for one that failed (which raises nothing), its error.
    """
    return read(CompareResult, _dtsim.compare(scenario=_scenario(scenario), strategies=strategies,
                                              overrides=_overrides(overrides), jobs=jobs))


def search(scenario: Scenario, overrides: Overrides = None, simulate: Union[int, str] = 20, nodes: Counts = None,
           fidelity: Optional[str] = None, jobs: int = 0) -> SearchResult:
    """The parallel layouts of the scenario's job, as ``dtsim search --json``.

    simulate: the best this many by the closed-form estimate are simulated, or "all".
    nodes: node counts to search over (None: the scenario's).
    fidelity: "step", "aggregate" or "coarse"; None: coarse with model parallelism, aggregate without.

    Every candidate has its layout and estimate and, when simulated, its figures; best_by_throughput and best_by_cost
    are indices into candidates (fastest() and cheapest() return the candidates). Each candidate runs one measured
    iteration after one warm-up unless overrides set run.iterations or run.warmup_iterations. Raises SimulationError,
    saying why, when no candidate ran.
    """
    return read(SearchResult, _dtsim.search(scenario=_scenario(scenario), overrides=_overrides(overrides),
                                            simulate=simulate, nodes=nodes, fidelity=fidelity, jobs=jobs))


def plan(scenario: Scenario, overrides: Overrides = None, tokens: Union[str, float, None] = None,
         steps: Union[str, int, None] = None, deadline: Optional[str] = None, budget: Union[str, float, None] = None,
         instances: Union[str, Sequence[str], None] = None, nodes: Counts = None, capacity: str = "both",
         clusters: int = 4, layouts: int = 3, trials: int = 20, seed: Optional[int] = None,
         jobs: int = 0) -> PlanResult:
    """The cheapest cluster that trains the model by a deadline (or the fastest within a budget), as ``dtsim plan
    --json``: across instance presets, node counts, on-demand and spot capacity, and layouts.

    tokens: the run's length in tokens ("100B", 2.5e11), or steps in iterations; neither: the scenario's.
    deadline: "14d", "300h". budget: USD ("250k").
    instances: preset names (dtsim.list("instances")); None: every priced preset.
    nodes: node counts (None: the scenario's). capacity: "both" or "on-demand".
    clusters: clusters simulated and trialled; layouts: layouts simulated per cluster; trials: whole-run trials per
    plan; seed: the trials' seed (None: the scenario's run.seed).

    A deadline or budget no plan meets raises nothing: binding says why, and the choices are None.
    """
    return read(PlanResult, _dtsim.plan(
        scenario=_scenario(scenario), overrides=_overrides(overrides), tokens=tokens, steps=steps, deadline=deadline,
        budget=budget, instances=instances, nodes=nodes, capacity=capacity, clusters=clusters, layouts=layouts,
        trials=trials, seed=seed, jobs=jobs))


def train(scenario: Scenario, overrides: Overrides = None, trials: int = 100, seed: Optional[int] = None,
          iteration_time: Optional[str] = None, jobs: int = 0) -> TrainResult:
    """The whole run, from its first step to its last, on hardware that fails and capacity that is taken back, as
    ``dtsim train --json``: time and cost to train over seeded trials.

    trials: how many. seed: None for the scenario's run.seed.
    iteration_time: a measured step time ("6.1s") used instead of simulating the iteration.
    """
    return read(TrainResult, _dtsim.train(scenario=_scenario(scenario), overrides=_overrides(overrides),
                                          trials=trials, seed=seed, iteration_time=iteration_time, jobs=jobs))


def collective(scenario: Optional[Scenario] = None, instance: Optional[str] = None, nodes: Optional[int] = None,
               overrides: Overrides = None, op: str = "all-reduce", algorithm: str = "auto", protocol: str = "auto",
               fidelity: str = "step", ranks: int = 0, sizes: Union[str, Sequence[Union[int, str]], None] = None,
               jobs: int = 0) -> CollectiveResult:
    """One collective over a range of sizes, as ``dtsim collective --json`` (nccl-tests' figures).

    The cluster: a scenario's, or nodes (default 1) of an instance preset (dtsim.list("instances")); one of the two.
    op, algorithm, protocol: as dtsim.list("algorithms") names them ("auto": NCCL's or MPICH's choice).
    fidelity: "step" or "aggregate". ranks: 0 for every GPU of the cluster.
    sizes: bytes, as a list (ints, or texts such as "1MiB") or "8B..1GiB" (doubling); None: 8 B to 1 GiB.
    """
    return read(CollectiveResult, _dtsim.collective(
        scenario=None if scenario is None else _scenario(scenario), instance=instance, nodes=nodes,
        overrides=_overrides(overrides), op=op, algorithm=algorithm, protocol=protocol, fidelity=fidelity,
        ranks=ranks, sizes=sizes, jobs=jobs))


def explain(scenario: Scenario, overrides: Overrides = None,
            path: Union[str, Tuple[int, int], None] = None) -> ExplainResult:
    """What the scenario's cluster is (its fabric, links, bottlenecks, price), what the plan puts on each GPU and what
    simulating it would take, without simulating it, as ``dtsim explain --json``.

    path: two GPU numbers (a, b) or "a,b": the route between them as well.
    """
    return read(ExplainResult, _dtsim.explain(scenario=_scenario(scenario), overrides=_overrides(overrides),
                                              path=path))


def validate(filter: Optional[str] = None, root: Union[str, "os.PathLike[str]", None] = None,
             measurements: Union[str, "os.PathLike[str]", None] = None, profile: Optional[str] = None,
             every_point: bool = False, jobs: int = 0) -> ValidateResult:
    """dtsim's predictions against published and measured figures, as ``dtsim validate --json``.

    filter: only the cases whose name or file name contains it (case-insensitive).
    root: the source tree or installed share/dtsim holding calibration/validation/ (None: found from the current
    directory). measurements: a dtsim-probe measurement file whose held-back points become cases too, predicted on
    profile (None: the shipped profile of the measured device); every_point: every point, not only the held-back ones.
    """
    return read(ValidateResult, _dtsim.validate(filter=filter, root=root, measurements=measurements,
                                                profile=profile, every_point=every_point, jobs=jobs))


def list(what: str) -> ListResult:  # noqa: A001 - the command's name
    """What a scenario can name, as ``dtsim list WHAT --json``: "instances", "gpus", "models", "algorithms",
    "topologies", "strategies", "failures" or "frameworks"."""
    return read(ListResult, _dtsim.list(what=what))
