"""The engine protocol and its runner: an engine is an id, a title and fact extractors that
declare what they read and which other facts they need."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from apron.extractors.errors import AnchorError, ExtractionError, FactGraphError, ParseError
from apron.extractors.parsing.collections_paced import fewer_collections
from apron.extractors.records import EngineFacts, ExtractionWarning, FactKind, FactResult, Record
from apron.extractors.runner.fact_split import Ahead, Finished, steps
from apron.extractors.snapshot import RecordingSnapshot, Snapshot

GLOB_CHARACTERS = "*?["
SUBTREE = "/**"  # `dir/**` in a fact's reads: every file below `dir` (fetched, not weighed)


@dataclass(frozen=True)
class FactOutput:
    """What one fact extractor returns: its records and the soft problems it saw (the runner
    stamps each warning with the fact's name)."""

    records: tuple[Record, ...]
    warnings: tuple[ExtractionWarning, ...] = ()


# A fact extractor reads the snapshot (through which it may only read files) and the records
# of exactly the facts it declares in `needs`, keyed by fact name. It does no git, no I/O, no
# printing.
FactFunction = Callable[[Snapshot, Mapping[str, tuple[Record, ...]]], FactOutput]


@dataclass(frozen=True)
class FactExtractor:
    """One fact: its kind, its function, the files it may read and the facts it needs.

    `reads` names paths, directories (standing for the files directly inside them), globs
    over one directory's files (`src/models/*.cpp`) and subtrees (`vllm/models/**`: every file
    below the directory, at any depth; a prefetch only, for a walk that discovers which of
    them it reads); the runner fetches the union of every
    selected fact's reads in one batch before the first file is read. `needs` names other facts
    of the same engine; the runner runs those first and passes their records."""

    kind: FactKind
    run: FactFunction
    reads: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    allow_empty: bool = False  # True only where "no rows" is a real upstream state

    def __post_init__(self) -> None:
        for pattern in self.reads:
            directory = pattern.rpartition("/")[0]
            if any(c in directory for c in GLOB_CHARACTERS):
                raise FactGraphError(
                    f"fact '{self.kind.name}' reads {pattern!r}: a glob may match file names in "
                    "one directory only, not directories"
                )


@dataclass(frozen=True)
class MatrixCell:
    """What one engine says about one HF architecture in the cross-engine matrix."""

    status: str  # "registered", "registered*" (with a documented constraint)
    detail: str  # task group, GGUF arch, constraint text
    where: str  # path and symbol, no line numbers
    flags: tuple[str, ...] = ()


# An engine's cells of the cross-engine matrix, by HF architecture, from its own facts.
MatrixCells = Callable[[EngineFacts], dict[str, MatrixCell]]


class Engine(Protocol):
    engine_id: str
    title: str
    upstream_url: str
    facts: tuple[FactExtractor, ...]
    matrix_cells: MatrixCells | None


def run_order(facts: Sequence[FactExtractor]) -> tuple[FactExtractor, ...]:
    """The facts ordered so that each runs after the facts it needs; ties by name, so the order
    the facts are listed in never matters. A repeated name, an unknown need or a cycle is a
    FactGraphError."""
    by_name: dict[str, FactExtractor] = {}
    for fact in facts:
        if fact.kind.name in by_name:
            raise FactGraphError(f"fact '{fact.kind.name}' is declared twice")
        by_name[fact.kind.name] = fact
    for fact in facts:
        unknown = [n for n in fact.needs if n not in by_name]
        if unknown:
            raise FactGraphError(
                f"fact '{fact.kind.name}' needs {', '.join(map(repr, unknown))}, which this "
                f"engine does not declare; its facts: {', '.join(sorted(by_name))}"
            )
    ordered: list[FactExtractor] = []
    placed: set[str] = set()
    waiting = sorted(by_name)
    while waiting:
        ready = [n for n in waiting if all(d in placed for d in by_name[n].needs)]
        if not ready:
            raise FactGraphError(
                "the needs of these facts form a cycle: " + ", ".join(sorted(waiting))
            )
        for name in ready:
            ordered.append(by_name[name])
            placed.add(name)
        waiting = [n for n in waiting if n not in placed]
    return tuple(ordered)


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


@dataclass(frozen=True)
class EngineSpec:
    """The plain implementation of `Engine` that every engine module instantiates once.

    The order of `facts` is the order of the sections of the engine's README and of its
    `FACTS` tuple; the order they run in follows their `needs` (see `run_order`)."""

    engine_id: str
    title: str  # how people write the engine's name: the one place it is spelled
    upstream_url: str
    facts: tuple[FactExtractor, ...] = field(default_factory=tuple)
    matrix_cells: MatrixCells | None = None  # None: any fact with an `architecture` field
    # architecture -> why it left the registry, from the engine's own facts (e.g. vLLM's list of
    # previously supported architectures); a bump shows it beside each removed row
    removal_notes: Callable[[EngineFacts], Mapping[str, str]] | None = None
    # regex the whole name of a release tag matches (vLLM `v0.10.1`); None: no releases
    release_tags: str | None = None
    # facts `extract support` reads besides the registry fact: the classes the engine assigns
    # (read through `matrix_cells`) and the removal notes
    support_facts: tuple[str, ...] = ()
    # (facts, architecture) -> ("yes" | "no" | "unknown", the fact that decided, why in words,
    # classes); None: a row of the registry fact means yes, the classes are the engine's
    # matrix-cell flags
    support_judge: Callable[[EngineFacts, str], tuple[str, str, str, tuple[str, ...]]] | None = None
    # the matrix's architecture families (extractors/report/family_cells.py): facts -> family ->
    # cell, and the rules in words, (family, rule) pairs; None: no family rules
    families: Callable[[EngineFacts], Mapping[str, Any]] | None = None
    family_rules: tuple[tuple[str, str], ...] = ()
    # how the engine decides MLA, for the matrix's disagreements (extractors/report/reviewer.py):
    # by "architecture" or by "model_type", and facts -> {that key: its answer in words, e.g.
    # "MLA", "MLA (conditional)", "MHA (explicit)"}; None: the engine says nothing about MLA
    mla_decided_by: str | None = None
    mla_verdicts: Callable[[EngineFacts], Mapping[str, str]] | None = None
    # the facts whose rows apron evaluates for its figures (an MLA list, the KV-head scan, state
    # calculators, block sizes, memory rules): a bump lists their changes first, item by item
    calculator_facts: tuple[str, ...] = ()
    # facts -> the registered architectures that are drafts or speculative heads (an MTP module,
    # an EAGLE head), counted apart from the models people serve; None: the engine says none
    draft_architectures: Callable[[EngineFacts], set[str]] | None = None

    def __post_init__(self) -> None:
        run_order(self.facts)  # a bad declaration fails when the engine module is imported
        if (self.mla_decided_by is None) != (self.mla_verdicts is None) or (
            self.mla_decided_by not in (None, "architecture", "model_type")
        ):
            raise ValueError(
                f"{self.engine_id}: mla_decided_by ('architecture' or 'model_type') and "
                "mla_verdicts are given together"
            )

    @property
    def fact_kinds(self) -> tuple[FactKind, ...]:
        return tuple(f.kind for f in self.facts)


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
