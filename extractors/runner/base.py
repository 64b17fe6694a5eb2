"""The runner of one engine's facts (the interface it runs is extractors/engine_api.py): each
fact after the facts it needs, their declared reads prefetched in one batch."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterable, Mapping, Sequence

from apron.extractors.engine_api import (
    GLOB_CHARACTERS,
    SUBTREE,
    Engine,
    FactExtractor,
    FactOutput,
    run_order,
)
from apron.extractors.errors import AnchorError, ExtractionError, ParseError
from apron.extractors.parsing.collections_paced import fewer_collections
from apron.extractors.records import EngineFacts, ExtractionWarning, FactResult, Record
from apron.extractors.runner.fact_split import Ahead, Finished, steps
from apron.extractors.snapshot import RecordingSnapshot, Snapshot


def with_needs(facts: Sequence[FactExtractor], names: Iterable[str]) -> set[str]:
    """`names` and every fact they need, directly or through other facts."""
    by_name = {f.kind.name: f for f in facts}
    chosen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in chosen or name not in by_name:
            continue
        chosen.add(name)
        todo.extend(by_name[name].needs)
    return chosen


def expand_reads(snapshot: Snapshot, reads: Iterable[str]) -> list[str]:
    """Paths, directories and subtrees as given, globs replaced by the files they match at the
    commit."""
    expanded: list[str] = []
    for pattern in reads:
        if pattern.endswith(SUBTREE) or not any(c in pattern for c in GLOB_CHARACTERS):
            expanded.append(pattern)
            continue
        directory, _, name = pattern.rpartition("/")
        expanded += [
            p
            for p in snapshot.list_files(directory)
            if fnmatch.fnmatchcase(p[len(directory) + 1 :], name)
        ]
    return list(dict.fromkeys(expanded))


class PrefetchingSnapshot(Snapshot):
    """Forwards to a snapshot and, before the first file is read, prefetches `reads` (the
    declared reads of the facts about to run) in one batch. Questions that read no file (does
    this exist, what is in this folder, which blob is here) fetch nothing, so a run answered
    from the fact cache costs no request."""

    def __init__(self, inner: Snapshot, reads: Iterable[str]) -> None:
        self._inner = inner
        self._reads = tuple(dict.fromkeys(reads))
        self._fetched = not self._reads
        self.engine = inner.engine
        self.commit = inner.commit

    def _prefetch_once(self) -> None:
        if not self._fetched:
            self._fetched = True
            self._inner.prefetch(expand_reads(self._inner, self._reads))

    def exists(self, path: str) -> bool:
        return self._inner.exists(path)

    def list_files(self, directory: str) -> list[str]:
        return self._inner.list_files(directory)

    def blob_sha(self, path: str) -> str:
        return self._inner.blob_sha(path)

    def read_bytes(self, path: str) -> bytes:
        self._prefetch_once()
        return self._inner.read_bytes(path)

    def read_text(self, path: str) -> str:
        self._prefetch_once()
        return self._inner.read_text(path)

    def prefetch(self, paths: Iterable[str]) -> None:
        self._inner.prefetch(paths)


def declared_files(snapshot: Snapshot, fact: FactExtractor) -> list[str]:
    """The files a fact declares it reads: its paths, the files of its directories and globs."""
    files: list[str] = []
    for path in expand_reads(snapshot, fact.reads):
        if path.endswith(SUBTREE):  # fetched in the batch; the files the walk reads are weighed
            continue
        files += snapshot.list_files(path) or [path]
    return list(dict.fromkeys(files))


def declared_reads(facts: Iterable[FactExtractor]) -> list[str]:
    return list(dict.fromkeys(path for fact in facts for path in fact.reads))


def stamped(fact: str, warnings: Iterable[ExtractionWarning]) -> tuple[ExtractionWarning, ...]:
    """The warnings of one fact, each naming that fact."""
    return tuple(w if w.fact == fact else w.model_copy(update={"fact": fact}) for w in warnings)


@fewer_collections()
def extract_engine(
    engine: Engine,
    snapshot: Snapshot,
    *,
    commit_date: str,
    source_label: str | None = None,
    only: set[str] | None = None,
    timings: dict[str, float] | None = None,
) -> EngineFacts:
    """Run the fact extractors of `engine` on `snapshot`, each after the facts it needs.

    `only` selects facts (their needs run too, but only the selected facts are returned). The
    declared reads of every fact that runs are fetched in one batch. Facts whose needs are done
    may be computed on two cores ahead of their turn, and a few small facts finished ahead so
    that a large one can join them (extractors/fact_split.Ahead); each fact's output or error
    is taken here in order, so results and errors are those of running them one by one. An empty result is an
    error unless the fact allows it: an empty list would read as 'everything was removed'.
    Errors get the engine and commit filled in. `timings`, when given, receives the seconds
    each fact took to compute (0 for one answered from the fact cache)."""
    order = run_order(engine.facts)
    if only is not None:
        running = with_needs(engine.facts, only)
        order = tuple(f for f in order if f.kind.name in running)
    shared = PrefetchingSnapshot(snapshot, declared_reads(order))
    done: dict[str, tuple[Record, ...]] = {}
    results: dict[str, FactResult] = {}
    warnings: dict[str, tuple[ExtractionWarning, ...]] = {}

    def finish_now(extractor: FactExtractor, needs: Mapping[str, tuple[Record, ...]]) -> Finished:
        recording = RecordingSnapshot(shared)
        started = time.perf_counter()
        try:
            outcome: FactOutput | BaseException = extractor.run(recording, needs)
        except (ExtractionError, RecursionError) as err:
            outcome = err
        return recording, outcome, time.perf_counter() - started

    ahead = Ahead(order, shared, declared_files, finish_now)
    for index, extractor in enumerate(order):
        name = extractor.kind.name
        ahead.prepare(index, done)
        needs = {n: done[n] for n in extractor.needs}
        finished = ahead.finished.pop(name, None)
        answered = ahead.answers.pop(name, None)
        recording = finished[0] if finished is not None else RecordingSnapshot(shared)
        try:
            if finished is not None:
                _, outcome, seconds = finished
                if isinstance(outcome, BaseException):
                    raise outcome
                output = outcome
            elif answered is not None:
                recording.read_paths.extend(answered.read_paths)
                output = steps(extractor.run).finish(recording, needs, answered.answer)
                seconds = answered.seconds
            else:
                started = time.perf_counter()
                output = extractor.run(recording, needs)
                seconds = time.perf_counter() - started
            if not output.records and not extractor.allow_empty:
                raise AnchorError(
                    f"fact '{name}' extracted nothing; an empty list would read "
                    "as 'everything was removed'",
                    paths=recording.read_paths,
                    anchor=extractor.kind.title,
                )
        except ExtractionError as err:
            err.with_context(engine=engine.engine_id, commit=snapshot.commit, source=source_label)
            raise
        except RecursionError:  # a backstop: the parsers refuse deep nesting before this
            raise ParseError(
                f"fact '{name}' hit Python's recursion limit: a file it read is nested too deeply",
                paths=recording.read_paths,
                anchor=extractor.kind.title,
            ).with_context(
                engine=engine.engine_id, commit=snapshot.commit, source=source_label
            ) from None
        if timings is not None:
            timings[name] = seconds
        done[name] = output.records
        results[name] = FactResult(
            kind=extractor.kind, records=output.records, sources=recording.sources()
        )
        warnings[name] = stamped(name, output.warnings)
    returned = [f.kind.name for f in engine.facts if f.kind.name in results]
    if only is not None:
        returned = [n for n in returned if n in only]
    found = {w for n in returned for w in warnings[n]}
    return EngineFacts(
        engine=engine.engine_id,
        commit=snapshot.commit,
        commit_date=commit_date,
        upstream_url=engine.upstream_url,
        facts=tuple(results[n] for n in returned),
        warnings=tuple(sorted(found, key=lambda w: (w.fact, w.code, w.subject, w.message))),
    )
