"""How apron, with a bump's new constraints, compares with what the engine itself measured at the
new commit (conformance/<engine>/<commit>/measurements.jsonl, the layout of conformance/README.md).

A bump names what it can compare: the figures apron prints (a KV byte figure per GPU, KV heads per
GPU, state per sequence, block size, memory fraction), each record's input planned at its
settings. Any other recorded figure is counted as not compared. When the harness has not measured
the new commit, the outcome says so; nothing is guessed from another commit's records."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apron.constraints import ConstraintSet
from apron.errors import ApronInputError
from apron.planning.planner import plan
from apron.results import EngineView

SHOWN_DIFFERENCES = 5


def _per_gpu(view: EngineView, tp: int, name: str) -> Any:
    share = view.gpu
    if share is not None and tp > 1:
        return getattr(share, name)
    return getattr(view, name)


# recorded figure -> apron's answer in that engine's column at the plan's tp (None: apron has none)
FIGURES: dict[str, Callable[[EngineView, int], Any]] = {
    "kv_bytes_per_token": lambda v, tp: _per_gpu(v, tp, "kv_bytes_per_token"),
    "cell_size": lambda v, tp: _per_gpu(v, tp, "kv_bytes_per_token"),
    "kv_bytes_at_context": lambda v, tp: _per_gpu(v, tp, "kv_bytes_at_context"),
    "state_bytes_per_sequence": lambda v, tp: _per_gpu(v, tp, "state_bytes_per_sequence"),
    "kv_heads_per_gpu": lambda v, tp: v.gpu.kv_heads_per_gpu if v.gpu is not None else None,
    "block_size": lambda v, tp: v.capacity.block_tokens if v.capacity is not None else None,
    "memory_fraction": lambda v, tp: v.capacity.memory_fraction if v.capacity else None,
    "mem_fraction_static": lambda v, tp: v.capacity.memory_fraction if v.capacity else None,
}


@dataclass
class ConformanceOutcome:
    """What the records of one commit say about apron there."""

    folder: str  # conformance/<engine>/<commit>, relative to the project
    measured: bool  # the folder holds measurements
    compared: int = 0
    equal: int = 0
    accepted_unknown: int = 0
    not_compared: int = 0
    differences: list[str] = field(default_factory=list)

    def words(self, engine: str) -> str:
        if not self.measured:
            return (
                f"the conformance harness has not measured this commit ({self.folder} holds no "
                f"measurements.jsonl): how apron compares with {engine} there is not known"
            )
        differ = len(self.differences)
        text = (
            f"against {engine}'s own measurements at this commit ({self.folder}): "
            f"{self.compared} figures compared, {self.equal} equal"
        )
        if self.accepted_unknown:
            text += f", {self.accepted_unknown} unknown where the record accepts it"
        text += (
            f", {differ} {'differs' if differ == 1 else 'differ'}" if differ else ", none differs"
        )
        if self.not_compared:
            noun = "figure" if self.not_compared == 1 else "figures"
            text += f" ({self.not_compared} recorded {noun} apron does not print)"
        return text


def compare_with_records(
    root: Path, engine: str, commit: str, constraints: ConstraintSet
) -> ConformanceOutcome:
    """apron (with `constraints`) on every record of conformance/<engine>/<commit>/."""
    folder = root / "conformance" / engine / commit
    relative = f"conformance/{engine}/{commit}"
    path = folder / "measurements.jsonl"
    if not path.is_file():
        return ConformanceOutcome(relative, measured=False)
    outcome = ConformanceOutcome(relative, measured=True)
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        read = FIGURES.get(record.get("figure", ""))
        if read is None:
            outcome.not_compared += 1
            continue
        outcome.compared += 1
        _compare_one(folder, engine, record, read, constraints, outcome)
    return outcome


def _compare_one(folder, engine, record, read, constraints, outcome) -> None:
    settings = record.get("settings") or {}
    label = f"{record['input']} {record['figure']} {json.dumps(settings, sort_keys=True)}"
    try:
        result = plan(
            folder / record["input"],
            context=settings.get("context"),
            kv_dtype=settings.get("kv_dtype", "bf16"),
            tp=int(settings.get("tp", 1)),
            gpu_memory=settings.get("gpu_memory"),
            constraints=constraints,
        )
    except ApronInputError as err:
        if record.get("refused"):
            outcome.equal += 1
        else:
            outcome.differences.append(
                f"{label}: apron refuses ({err}), {engine} gives {record.get('value')!r}"
            )
        return
    view = next((v for v in result.engines if v.engine == engine), None)
    value = read(view, result.tp) if view is not None else None
    if record.get("refused"):
        if value is None:
            outcome.equal += 1
        else:
            outcome.differences.append(f"{label}: {engine} refuses, apron gives {value!r}")
        return
    if value == record.get("value"):
        outcome.equal += 1
    elif value is None and record.get("accept_unknown"):
        outcome.accepted_unknown += 1
    else:
        outcome.differences.append(f"{label}: {engine} {record.get('value')!r}, apron {value!r}")
