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

from apron.extractors.errors import ExtractionError
from apron.extractors.parsing import workers
from apron.extractors.snapshot import RecordingSnapshot, Snapshot

if TYPE_CHECKING:
    from apron.extractors.engine_api import FactExtractor, FactFunction, FactOutput
    from apron.extractors.records import Record


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


def compute_early(
    facts: Sequence[FactExtractor],
    snapshot: Snapshot,
    done: Mapping[str, tuple[Record, ...]],
    size_of: Callable[[FactExtractor], int],
) -> dict[str, Answered]:
    """The facts (every fact they need is in `done`, none answered by the fact cache) computed on
    two cores when that pays (workers.map_in_two decides by the bytes the facts declare to
    read, `size_of`). A fact left out (it did not pay, it failed, or it did not come back) is for
    the runner to run in order."""
    if len(facts) < 2:
        return {}
    sizes = [size_of(f) for f in facts]
    if not workers.may_share(sum(sizes)):
        return {}

    def compute(fact: FactExtractor) -> Answered | None:
        recording = RecordingSnapshot(snapshot)
        started = time.perf_counter()
        try:
            answer = steps(fact.run).compute(recording, {n: done[n] for n in fact.needs})
        except (ExtractionError, RecursionError):
            return None  # the runner runs it again in order and raises its error there
        return Answered(answer, tuple(recording.read_paths), time.perf_counter() - started)

    results = workers.map_in_two(compute, facts, sizes)
    return {f.kind.name: r for f, r in zip(facts, results, strict=True) if r is not None}


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


# One fact finished ahead of its turn: the recording of what it read, its output or the error it
# raised (raised again at its turn), and the seconds it took.
Finished = tuple[RecordingSnapshot, "FactOutput | BaseException", float]
FinishNow = Callable[["FactExtractor", Mapping[str, tuple["Record", ...]]], Finished]


class Ahead:
    """What the runner gets ahead of its order. At each fact not offered yet (`prepare`): when
    every fact ready to run is answered by the fact cache, nothing more (nothing is read);
    else, first, a waiting fact that reads more than the ready facts it waits for (and at least
    a quarter of workers.MIN_BYTES) has those finished now, one by one, so that it joins the
    next share (vLLM's class flags wait for the registry, llama.cpp's converter and sliding
    window for the architecture names); then every fact whose needs are done and that the fact
    cache does not answer goes to compute_early (each fact looked up, and its declared bytes
    counted, once per run). The runner takes each fact's early answer or finished outcome at its turn."""

    def __init__(
        self,
        order: Sequence[FactExtractor],
        snapshot: Snapshot,
        declared_files: Callable[[Snapshot, FactExtractor], Iterable[str]],
        finish_now: FinishNow,
    ) -> None:
        self.order = order
        self.snapshot = snapshot
        self.declared_files = declared_files
        self.finish_now = finish_now
        self.offered: set[str] = set()
        self.answers: dict[str, Answered] = {}
        self.finished: dict[str, Finished] = {}
        self._missed: set[str] = set()  # looked up in the fact cache, not answered
        self._sizes: dict[str, int] = {}

    def prepare(self, index: int, done: Mapping[str, tuple[Record, ...]]) -> None:
        if self.order[index].kind.name in self.offered:
            return
        later = [f for f in self.order[index:] if f.kind.name not in self.offered]
        available = dict(done)
        for name, (_, outcome, _) in self.finished.items():
            if not isinstance(outcome, BaseException):
                available[name] = outcome.records
        if not self._misses(later, available):
            return  # nothing ready to compute: the fact cache answers, no share, nothing read
        for enabler in self._enablers(later, available):
            needs = {n: available[n] for n in enabler.needs}
            self.offered.add(enabler.kind.name)
            finished = self.finish_now(enabler, needs)
            self.finished[enabler.kind.name] = finished
            if isinstance(finished[1], BaseException):
                break  # what needs it is run in order, after that error is raised
            available[enabler.kind.name] = finished[1].records
        misses = self._misses(later, available)
        self.offered.update(f.kind.name for f in misses)
        self.answers.update(compute_early(misses, self.snapshot, available, self._bytes))

    def _ready(self, fact: FactExtractor, available: Mapping[str, tuple[Record, ...]]) -> bool:
        return fact.kind.name not in self.offered and all(n in available for n in fact.needs)

    def _misses(
        self, later: Sequence[FactExtractor], available: Mapping[str, tuple[Record, ...]]
    ) -> list[FactExtractor]:
        """The ready facts the fact cache does not answer. Each ready fact is looked up once: a
        hit is kept for its turn (and offered), a miss remembered."""
        misses = []
        for fact in later:
            if not self._ready(fact, available):
                continue
            name = fact.kind.name
            if name not in self._missed:
                found = steps(fact.run).lookup(self.snapshot, {n: available[n] for n in fact.needs})
                if found is not None:
                    self.answers[name] = Answered(found, (), 0.0)
                    self.offered.add(name)
                    continue
                self._missed.add(name)
            misses.append(fact)
        return misses

    def _enablers(
        self, later: Sequence[FactExtractor], available: Mapping[str, tuple[Record, ...]]
    ) -> list[FactExtractor]:
        """The facts, in run order, that large waiting facts need (directly or through each
        other) and that are neither done nor offered yet."""
        by_name = {f.kind.name: f for f in later}
        wanted: set[str] = set()
        for fact in later:
            if self._ready(fact, available) or fact.kind.name in self.offered:
                continue
            before = self._prerequisites(fact, by_name, available)
            if before is None:
                continue
            waiting = self._bytes(fact)
            if (
                waiting >= workers.MIN_BYTES // 4
                and sum(self._bytes(by_name[n]) for n in before) < waiting
            ):
                wanted |= before
        return [f for f in later if f.kind.name in wanted]

    def _prerequisites(
        self,
        fact: FactExtractor,
        by_name: Mapping[str, FactExtractor],
        available: Mapping[str, tuple[Record, ...]],
    ) -> set[str] | None:
        """The facts not done that `fact` needs, directly or through them; None when one of
        them was offered already (its answer comes at its turn, too late to wait for)."""
        found: set[str] = set()
        todo = [n for n in fact.needs if n not in available]
        while todo:
            name = todo.pop()
            if name in found:
                continue
            if name not in by_name or name in self.offered:
                return None
            found.add(name)
            todo += [n for n in by_name[name].needs if n not in available]
        return found

    def _bytes(self, fact: FactExtractor) -> int:
        """The text bytes of the files the fact declares it reads, counted once per run."""
        name = fact.kind.name
        if name not in self._sizes:
            self._sizes[name] = _text_bytes(self.snapshot, self.declared_files(self.snapshot, fact))
        return self._sizes[name]
