"""The typed results of dtsim's commands.

Each result is a frozen dataclass read from the JSON document the command's ``--json`` writes. Its fields are that
document's main figures, named as in the JSON, with the unit in the name (``iteration_seconds``,
``memory_bytes_per_gpu``, ``cost_usd``); a figure that does not apply (a cost without a price) is ``None``.
``to_dict()`` returns the whole document, ``to_dataframe()`` its rows as a pandas DataFrame (where pandas is
installed), and ``result["key"]`` reads the document as the dicts of earlier versions did.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar, cast

__all__ = [
    "Stats", "Breakdown", "Cost", "MemoryItem", "Memory", "Link", "RunResult", "SweepPoint", "SweepResult",
    "CompareEntry", "CompareResult", "Candidate", "SearchResult", "TrialStats", "TrainResult", "CollectivePoint",
    "CollectiveResult", "ExplainResult", "ListResult", "ValidationCase", "LevelSummary", "ValidateResult",
    "PlannedCluster", "PlanRow", "PlanResult",
]


def _at(*path: str) -> Any:
    """A field read from `path` in the document instead of from its own name."""
    return field(metadata={"json": path})


def _convert(hint: Any, value: Any) -> Any:
    """A JSON value as the type `hint` names: dataclasses built, lists and dicts of them converted item by item."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin is typing.Union:  # Optional[X]
        return _convert(next(a for a in typing.get_args(hint) if a is not type(None)), value)
    if origin is list:
        return [_convert(typing.get_args(hint)[0], v) for v in value]
    if origin is dict:
        return {k: _convert(typing.get_args(hint)[1], v) for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return _build(hint, value)
    return value


def _build(cls: Any, document: Any) -> Any:
    """An instance of the dataclass `cls` from a JSON object: each field from its name (or its `_at` path), missing
    keys as None."""
    hints = typing.get_type_hints(cls)
    values: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "_document":
            values[f.name] = document
            continue
        value: Any = document
        for key in f.metadata.get("json", (f.name,)):
            value = value.get(key) if isinstance(value, dict) else None
        values[f.name] = _convert(hints[f.name], value)
    return cls(**values)


def _scalars(obj: Any, prefix: str = "") -> Dict[str, Any]:
    """A dataclass's figures as one flat row: nested dataclasses' fields as "outer.inner", lists left out."""
    row: Dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if f.name == "_document":
            continue
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            row.update(_scalars(value, f"{prefix}{f.name}."))
        elif not isinstance(value, (list, dict)):
            row[prefix + f.name] = value
    return row


def _pandas() -> Any:
    try:
        import pandas  # type: ignore[import]
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("to_dataframe() needs pandas (Debian: apt install python3-pandas)") from e
    return pandas


class _Document:
    """What every result has: the JSON document it was read from, and its rows as a table."""

    _document: Any

    def to_dict(self) -> Dict[str, Any]:
        """The whole JSON document the command's --json writes (a copy)."""
        return copy.deepcopy(self._document)

    def rows(self) -> List[Dict[str, Any]]:
        """The result as rows of figures: one row, or one per point, candidate, case or plan."""
        return [_scalars(self)]

    def to_dataframe(self) -> Any:
        """rows() as a pandas DataFrame, a column per figure. Raises ImportError without pandas."""
        return _pandas().DataFrame(self.rows())

    def __getitem__(self, key: str) -> Any:
        """The document's field `key`, as the dicts earlier versions returned."""
        return self._document[key]


@dataclass(frozen=True)
class Stats:
    """A time over the measured iterations, in seconds."""
    mean: float
    min: float
    max: float
    p50: float
    p90: float
    p99: float


@dataclass(frozen=True)
class Breakdown:
    """Where an iteration's time goes, in seconds per iteration."""
    compute: float
    exposed_communication: float
    idle: float


@dataclass(frozen=True)
class Cost:
    """Dollars (USD) per hour, per epoch and for the run; None without a price or a run length."""
    per_hour: Optional[float]
    per_epoch: Optional[float]
    run: Optional[float]


@dataclass(frozen=True)
class MemoryItem:
    """One thing a GPU holds (weights, gradients, optimizer states, activations, ...), in bytes."""
    name: str
    bytes: float
    detail: Optional[str]


@dataclass(frozen=True)
class Memory:
    """Memory per GPU in bytes: what it holds against what it has."""
    total_bytes: float
    capacity_bytes: float
    items: List[MemoryItem]


@dataclass(frozen=True)
class Link:
    """One of the busiest links: its kind (NVLink, PCIe, NIC, network switches), bytes carried over the run, its
    bandwidth in bytes per second, busy share 0..1."""
    link: str
    kind: str
    bytes: float
    bandwidth_bytes_per_second: float
    utilization: float


@dataclass(frozen=True)
class RunResult(_Document):
    """One simulated run (dtsim run): times in seconds, throughput in samples (sample_unit) per second, memory in
    bytes, costs in USD, energy in kWh."""
    name: str
    gpus: int
    nodes: int
    global_batch: int
    sample_unit: str
    framework: Optional[str]
    iteration_seconds: Stats
    throughput_samples_per_second: float
    epoch_seconds: float
    breakdown_seconds_per_iteration: Breakdown
    communication_seconds_per_iteration: float
    bytes_sent_per_gpu_per_iteration: float
    memory_per_gpu: Memory
    mfu: Optional[float] = _at("model_flops", "mfu")
    tflops_per_gpu: Optional[float] = _at("model_flops", "tflops_per_gpu")
    cost_usd: Cost = _at("cost_usd")
    energy_kwh_per_iteration: Optional[float] = _at("energy", "kwh_per_iteration")
    busiest_links: List[Link] = _at("busiest_links")
    busiest_links_by_kind: List[Link] = _at("busiest_links_by_kind")
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class SweepPoint:
    """One node count of a sweep: its run, speedup and efficiency (plain ratios), or why it failed."""
    nodes: int
    ok: bool
    speedup: Optional[float]
    efficiency: Optional[float]
    result: Optional[RunResult]
    error: Optional[str]


@dataclass(frozen=True)
class SweepResult(_Document):
    """A scenario at several node counts (dtsim sweep)."""
    points: List[SweepPoint]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rows(self) -> List[Dict[str, Any]]:
        """A row per node count: nodes, ok, speedup, efficiency, error and the run's figures."""
        return [dict(_scalars(p), **(_scalars(p.result) if p.result else {})) for p in self.points]


@dataclass(frozen=True)
class CompareEntry:
    """One strategy of a comparison: its run, or why it failed."""
    strategy: str
    ok: bool
    result: Optional[RunResult]
    error: Optional[str]


@dataclass(frozen=True)
class CompareResult(_Document):
    """A scenario under several synchronization strategies (dtsim compare), in the order given. to_dict() holds the
    list `dtsim compare --json` writes under "strategies"."""
    entries: List[CompareEntry]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _from(cls, document: List[Dict[str, Any]]) -> "CompareResult":
        entries = [CompareEntry(strategy=(d.get("strategy") or {}).get("name", ""), ok="error" not in d,
                                result=None if "error" in d else _build(RunResult, d), error=d.get("error"))
                   for d in document]
        return cls(entries=entries, _document={"strategies": document})

    def __getitem__(self, key: Any) -> Any:
        """entries[i] for an index (compare() returned a list before), else the document's field."""
        return self._document["strategies"][key] if isinstance(key, int) else self._document[key]

    def __iter__(self) -> Any:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def rows(self) -> List[Dict[str, Any]]:
        """A row per strategy: strategy, ok, error and the run's figures."""
        return [dict(_scalars(e), **(_scalars(e.result) if e.result else {})) for e in self.entries]


@dataclass(frozen=True)
class Candidate:
    """A parallel layout of a search: the layout, its closed-form estimate and, when simulated, its figures (seconds,
    samples per second, bytes per GPU, USD)."""
    tensor: int
    pipeline: int
    data: int
    expert: int
    micro_batch: int
    micro_batches: int
    schedule: str
    virtual_stages: int
    zero_stage: int
    recompute: str
    sequence_parallel: bool
    nodes: int
    gpus: int
    estimate_seconds: Optional[float]
    simulated: bool
    ok: bool
    iteration_seconds: Optional[float]
    throughput_samples_per_second: Optional[float]
    mfu: Optional[float]
    memory_bytes_per_gpu: Optional[float]
    cost_usd_per_hour: Optional[float]
    cost_usd_per_million_samples: Optional[float]


@dataclass(frozen=True)
class SearchResult(_Document):
    """The parallel layouts of a job (dtsim search): every candidate, and the rankings as indices into candidates."""
    candidates: List[Candidate]
    best_by_throughput: List[int]
    best_by_cost: List[int]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def fastest(self) -> List[Candidate]:
        """The simulated candidates by throughput, the fastest first."""
        return [self.candidates[i] for i in self.best_by_throughput]

    def cheapest(self) -> List[Candidate]:
        """The simulated candidates by cost per sample, the cheapest first."""
        return [self.candidates[i] for i in self.best_by_cost]

    def rows(self) -> List[Dict[str, Any]]:
        """A row per candidate."""
        return [_scalars(c) for c in self.candidates]


@dataclass(frozen=True)
class TrialStats:
    """A figure over the trials: mean and percentiles."""
    mean: float
    p50: float
    p90: float
    p99: float


@dataclass(frozen=True)
class TrainResult(_Document):
    """A whole training run as seeded trials (dtsim train): wall time in seconds, cost in USD, energy in kWh,
    goodput the useful share of the wall time; trials() has each trial's figures."""
    name: str
    gpus: int
    nodes: int
    steps: int
    iteration_seconds: float
    wall_seconds: TrialStats = _at("summary", "wall_seconds")
    cost_usd: TrialStats = _at("summary", "cost_usd")
    energy_kwh: TrialStats = _at("summary", "energy_kwh")
    goodput: TrialStats = _at("summary", "goodput")
    failures: TrialStats = _at("summary", "failures")
    preemptions: TrialStats = _at("summary", "preemptions")
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def trials(self) -> List[Dict[str, Any]]:
        """Each trial's figures (wall_seconds, cost_usd, goodput, failures, ...)."""
        return copy.deepcopy(self._document["trials"])

    def rows(self) -> List[Dict[str, Any]]:
        """A row per trial, its figures flat (failures_by_component left out)."""
        return [{k: v for k, v in t.items() if not isinstance(v, (dict, list))} for t in self._document["trials"]]


@dataclass(frozen=True)
class CollectivePoint:
    """One size of a collective benchmark: the algorithm and protocol that ran, time in seconds, algorithm and bus
    bandwidth in bytes per second, or why it failed."""
    size_bytes: float
    algorithm: str
    protocol: str
    channels: int
    ok: bool
    time_seconds: Optional[float]
    algbw_bytes_per_second: Optional[float]
    busbw_bytes_per_second: Optional[float]
    error: Optional[str]


@dataclass(frozen=True)
class CollectiveResult(_Document):
    """One collective over a range of sizes (dtsim collective), as nccl-tests measures it."""
    operation: str
    ranks: int
    nodes: int
    gpu: str
    fidelity: str
    average_busbw_bytes_per_second: Optional[float]
    points: List[CollectivePoint]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rows(self) -> List[Dict[str, Any]]:
        """A row per size."""
        return [_scalars(p) for p in self.points]


@dataclass(frozen=True)
class ExplainResult(_Document):
    """What a scenario's cluster is and what its plan puts on each GPU (dtsim explain), without simulating it:
    cluster its fabric, links and price; parallelism its groups and stages (None without model parallelism);
    simulation what simulating it would take on this machine; path the route asked for (None without)."""
    cluster: Dict[str, Any]
    memory_per_gpu: Memory
    parallelism: Optional[Dict[str, Any]]
    simulation: Dict[str, Any]
    path: Optional[Dict[str, Any]]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class ListResult(_Document):
    """What a scenario can name (dtsim list): one dict per entry, its keys those of the kind listed."""
    what: str
    items: List[Dict[str, Any]]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rows(self) -> List[Dict[str, Any]]:
        """A row per entry."""
        return copy.deepcopy(self.items)


@dataclass(frozen=True)
class ValidationCase:
    """A case of dtsim validate: predicted and measured in the case's unit, error_percent (predicted - measured) /
    measured in percent; anchor (a profile took its constant from it) and disputed cases are not counted."""
    file: str
    level: str
    anchor: bool
    disputed: Optional[str]
    name: str
    metric: str
    predicted: Optional[float]
    measured: float
    unit: str
    error_percent: Optional[float]
    source: str
    note: str
    failure: Optional[str]


@dataclass(frozen=True)
class LevelSummary:
    """The |error| over a level's counted cases, in percent."""
    cases: int
    median_abs_error_percent: float
    max_abs_error_percent: float


@dataclass(frozen=True)
class ValidateResult(_Document):
    """Predictions against published and measured figures (dtsim validate): every case, and the |error| of each level
    ("op", "collective", "end-to-end") over its counted cases."""
    cases: List[ValidationCase]
    summary: Dict[str, LevelSummary]
    left_out: List[str]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rows(self) -> List[Dict[str, Any]]:
        """A row per case."""
        return [_scalars(c) for c in self.cases]


@dataclass(frozen=True)
class PlannedCluster:
    """A cluster plan screened: instance, node count, prices in USD per hour, layouts enumerated, estimated and
    simulated, and its screened time (seconds) and cost (USD), or why no layout of it runs. screened_by_simulation:
    no layout had a closed-form estimate (parameter servers, profiler traces), so the screen simulated them."""
    instance: str
    nodes: int
    gpus: int
    price_usd_per_hour: float
    spot_price_usd_per_hour: Optional[float]
    enumerated: int
    estimated: int
    simulated: bool
    screened_by_simulation: bool
    screened_time_to_train_seconds: Optional[float]
    screened_cost_usd: Optional[float]
    why_none: Optional[str]


@dataclass(frozen=True)
class PlanRow:
    """A plan: a cluster, its capacity (on-demand or spot) and layout, simulated and run as trials (seconds, USD,
    kWh; goodput the useful share of the wall time)."""
    instance: str
    nodes: int
    gpus: int
    capacity: str
    on_front: bool
    tensor: int
    pipeline: int
    data: int
    micro_batch: int
    micro_batches: int
    zero_stage: int
    recompute: str
    iteration_seconds: float
    mfu: Optional[float]
    memory_bytes_per_gpu: float
    time_to_train_seconds_mean: float
    time_to_train_seconds_p90: float
    cost_usd_mean: float
    cost_usd_p90: float
    energy_kwh_mean: float
    goodput: float
    interruptions_mean: float


@dataclass(frozen=True)
class PlanResult(_Document):
    """The cheapest cluster that trains the model by a deadline, or the fastest within a budget (dtsim plan): every
    plan, the clusters screened, and each choice as an index into plans (None where no plan qualifies); binding says
    why none meets the deadline or budget."""
    steps: int
    global_batch: int
    plans: List[PlanRow]
    clusters: List[PlannedCluster]
    cheapest_on_time: Optional[int]
    fastest_in_budget: Optional[int]
    cheapest: Optional[int]
    fastest: Optional[int]
    binding: Optional[str]
    _document: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def chosen(self) -> Optional[PlanRow]:
        """The plan the command leads with: with a deadline the cheapest on time, with a budget the fastest within it,
        else the cheapest; None where a deadline or budget was asked and no plan meets it (binding says why)."""
        if self.binding:
            return None
        for i in (self.cheapest_on_time, self.fastest_in_budget, self.cheapest):
            if i is not None:
                return self.plans[i]
        return None

    def rows(self) -> List[Dict[str, Any]]:
        """A row per plan."""
        return [_scalars(p) for p in self.plans]


Result = TypeVar("Result")


def read(cls: Type[Result], document: Any) -> Result:
    """The result of type `cls` from a command's JSON document (as `dtsim ... --json` wrote it)."""
    if cls is CompareResult:
        return cast(Result, CompareResult._from(document))
    return cast(Result, _build(cls, document))

