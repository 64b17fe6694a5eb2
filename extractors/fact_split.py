"""Facts computed on two cores. When the runner reaches a fact it has not tried yet, every fact
from there on whose needs are done is ready: the runner asks each one's function for an answer
it has at hand (the fact cache's), then computes the rest in this process and a forked worker
(extractors/parsing/workers.map_in_two), largest declared reads first, and finishes every fact
here, in the runner's order. A fact that failed in the worker is run again in order, so the
error a run raises is the one a serial run raises.

A fact function may offer the three steps itself (`SplitRun`: the fact cache does, so a hit
costs no fork and a miss is stored here); any other function is computed whole."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from extractors.errors import ExtractionError
from extractors.parsing import workers
from extractors.snapshot import RecordingSnapshot, Snapshot

if TYPE_CHECKING:
    from extractors.base import FactExtractor, FactFunction, FactOutput
    from extractors.records import Record


@runtime_checkable
class SplitRun(Protocol):
    """A fact function in three steps. `lookup` answers without computing (or None), here;
    `compute` does the work and returns plain data, in any process; `finish` turns a looked-up
    or computed answer into the fact's output (or raises its error), here."""

    def lookup(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> object | None:
        pass

    def compute(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> object:
        pass

    def finish(
        self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]], answer: object
    ) -> FactOutput:
        pass


@dataclass(frozen=True)
class _Whole:
    """A plain fact function: nothing at hand, computed whole, its output is the answer."""

    run: FactFunction

    def lookup(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> None:
        return None

    def compute(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        return self.run(snapshot, done)

    def finish(
        self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]], answer: object
    ) -> FactOutput:
        return answer  # type: ignore[return-value]


def steps(run: FactFunction) -> SplitRun:
    return run if isinstance(run, SplitRun) else _Whole(run)


@dataclass(frozen=True)
class Answered:
    """A fact answered before the runner reaches it: the answer, the files read to compute it
    (none for a looked-up answer) and the seconds computing took."""

    answer: object
    read_paths: tuple[str, ...]
    seconds: float


def answer_early(
    ready: Sequence[FactExtractor],
    snapshot: Snapshot,
    done: Mapping[str, tuple[Record, ...]],
    declared_files: Callable[[Snapshot, FactExtractor], Iterable[str]],
) -> dict[str, Answered]:
    """Answers for the facts in `ready` (every fact they need is in `done`): looked up here, or
    computed on two cores when that pays (workers.map_in_two decides by the bytes the facts
    declare to read). A fact left out (nothing at hand and it did not pay, it failed, or it did
    not come back) is for the runner to run in order."""
    answered: dict[str, Answered] = {}

    def needs(fact: FactExtractor) -> dict[str, tuple[Record, ...]]:
        return {n: done[n] for n in fact.needs}

    for fact in ready:
        found = steps(fact.run).lookup(snapshot, needs(fact))
        if found is not None:
            answered[fact.kind.name] = Answered(found, (), 0.0)
    to_compute = [f for f in ready if f.kind.name not in answered]
    if len(to_compute) < 2:
        return answered
    sizes = [_text_bytes(snapshot, declared_files(snapshot, f)) for f in to_compute]
    if not workers.may_share(sum(sizes)):
        return answered

    def compute(fact: FactExtractor) -> Answered | None:
        recording = RecordingSnapshot(snapshot)
        started = time.perf_counter()
        try:
            answer = steps(fact.run).compute(recording, needs(fact))
        except (ExtractionError, RecursionError):
            return None  # the runner runs it again in order and raises its error there
        return Answered(answer, tuple(recording.read_paths), time.perf_counter() - started)

    for fact, result in zip(
        to_compute, workers.map_in_two(compute, to_compute, sizes), strict=True
    ):
        if result is not None:
            answered[fact.kind.name] = result
    return answered


def _text_bytes(snapshot: Snapshot, paths: Iterable[str]) -> int:
    """The size of the text of `paths` (a file that cannot be read counts 0: the fact that
    declares it reports that itself)."""
    total = 0
    for path in paths:
        try:
            total += len(snapshot.read_text(path))
        except ExtractionError:
            continue
    return total
