"""The engine protocol: an engine is an id, a title and an ordered list of fact extractors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from extractors.errors import AnchorError, ExtractionError, ParseError
from extractors.records import EngineFacts, ExtractionWarning, FactKind, FactResult, Record
from extractors.snapshot import RecordingSnapshot, Snapshot


@dataclass(frozen=True)
class FactOutput:
    """What one fact extractor returns: its records and the soft problems it saw."""

    records: tuple[Record, ...]
    warnings: tuple[ExtractionWarning, ...] = ()


# A fact extractor reads the snapshot (through which it may only read files) and the records
# of the facts that ran before it, keyed by fact name. It does no git, no I/O, no printing.
FactFunction = Callable[[Snapshot, Mapping[str, tuple[Record, ...]]], FactOutput]


@dataclass(frozen=True)
class FactExtractor:
    kind: FactKind
    run: FactFunction
    allow_empty: bool = False  # True only where "no rows" is a real upstream state


class Engine(Protocol):
    engine_id: str
    title: str
    upstream_url: str
    facts: tuple[FactExtractor, ...]


@dataclass(frozen=True)
class EngineSpec:
    """The plain implementation of `Engine` that every engine module instantiates once."""

    engine_id: str
    title: str
    upstream_url: str
    facts: tuple[FactExtractor, ...] = field(default_factory=tuple)

    @property
    def fact_kinds(self) -> tuple[FactKind, ...]:
        return tuple(f.kind for f in self.facts)


def extract_engine(
    engine: Engine,
    snapshot: Snapshot,
    *,
    commit_date: str,
    source_label: str | None = None,
    only: set[str] | None = None,
) -> EngineFacts:
    """Run every fact extractor of `engine` on `snapshot`, in order.

    An empty result is an error unless the fact allows it: an empty list would read as
    'everything was removed'. Errors get the engine and commit filled in."""
    done: dict[str, tuple[Record, ...]] = {}
    results: list[FactResult] = []
    warnings: list[ExtractionWarning] = []
    for extractor in engine.facts:
        if only is not None and extractor.kind.name not in only:
            continue
        recording = RecordingSnapshot(snapshot)
        try:
            output = extractor.run(recording, done)
            if not output.records and not extractor.allow_empty:
                raise AnchorError(
                    f"fact '{extractor.kind.name}' extracted nothing; an empty list would read "
                    "as 'everything was removed'",
                    paths=recording.read_paths,
                    anchor=extractor.kind.title,
                )
        except ExtractionError as err:
            err.with_context(engine=engine.engine_id, commit=snapshot.commit, source=source_label)
            raise
        except RecursionError:  # a backstop: the parsers refuse deep nesting before this
            raise ParseError(
                f"fact '{extractor.kind.name}' hit Python's recursion limit: a file it read is "
                "nested too deeply",
                paths=recording.read_paths,
                anchor=extractor.kind.title,
            ).with_context(
                engine=engine.engine_id, commit=snapshot.commit, source=source_label
            ) from None
        done[extractor.kind.name] = output.records
        results.append(
            FactResult(kind=extractor.kind, records=output.records, sources=recording.sources())
        )
        warnings.extend(output.warnings)
    return EngineFacts(
        engine=engine.engine_id,
        commit=snapshot.commit,
        commit_date=commit_date,
        upstream_url=engine.upstream_url,
        facts=tuple(results),
        warnings=tuple(sorted(set(warnings), key=lambda w: (w.fact, w.code, w.subject, w.message))),
    )
