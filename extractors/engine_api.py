"""The engine interface: what every engine package implements and the runner, the report and
the commands consume. An engine is an id, a title, its upstream URL and fact extractors that
declare what they read and which other facts they need (pre-commit's lang_base.py is the model).
Imports only the bottom layer (errors, records, snapshot)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from apron.extractors.errors import FactGraphError
from apron.extractors.records import EngineFacts, ExtractionWarning, FactKind, Record
from apron.extractors.snapshot import Snapshot

__all__ = [
    "GLOB_CHARACTERS",
    "SUBTREE",
    "Engine",
    "EngineSpec",
    "FactExtractor",
    "FactFunction",
    "FactKind",
    "FactOutput",
    "MatrixCell",
    "MatrixCells",
    "run_order",
]

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


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """The plain implementation of `Engine` that every engine module instantiates once.

    The order of `facts` is the order of the sections of the engine's README and of its
    `FACTS` tuple; the order they run in follows their `needs` (see `run_order`). What the
    report makes of an engine's facts (matrix cells, families, MLA verdicts, removal notes) is
    the report's: extractors/report/engine_reports.py."""

    engine_id: str
    title: str  # how people write the engine's name: the one place it is spelled
    upstream_url: str
    facts: tuple[FactExtractor, ...] = field(default_factory=tuple)
    # regex the whole name of a release tag matches (vLLM `v0.10.1`); None: no releases
    release_tags: str | None = None
    # facts `extract support` reads besides the registry fact: the classes the engine assigns
    # (read through its matrix cells, extractors/report/engine_reports.py) and the removal notes
    support_facts: tuple[str, ...] = ()
    # (facts, architecture) -> ("yes" | "no" | "unknown", the fact that decided, why in words,
    # classes); None: a row of the registry fact means yes, the classes are the engine's
    # matrix-cell flags
    support_judge: Callable[[EngineFacts, str], tuple[str, str, str, tuple[str, ...]]] | None = None
    # the facts whose rows apron evaluates for its figures (an MLA list, the KV-head scan, state
    # calculators, block sizes, memory rules): a bump lists their changes first, item by item
    calculator_facts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        run_order(self.facts)  # a bad declaration fails when the engine module is imported

    @property
    def fact_kinds(self) -> tuple[FactKind, ...]:
        return tuple(f.kind for f in self.facts)
