"""One extraction run, the command's whole step: pin -> source -> facts (the runner) -> render
(the report) -> generated/ and the pin, written atomically; and the readings a new extraction
lost against an old one, read at the new commit."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from apron.extractors.engine_api import EngineSpec
from apron.extractors.errors import ExtractionError, GeneratedError
from apron.extractors.git import GitSource
from apron.extractors.pins import Pin, load_pin, pin_path, render_pin
from apron.extractors.records import EngineFacts
from apron.extractors.report.diff import EngineDiff, diff_engine
from apron.extractors.report.engine_reports import engine_report
from apron.extractors.report.generated_files import current_facts, render_generated
from apron.extractors.report.readings_lost import LostReading, readings_lost
from apron.extractors.runner.pipeline import (
    ProjectPaths,
    extract_at,
    pin_for,
    source_for,
    start_writing,
    write_rendered,
)
from apron.extractors.runner.writer import project_lock


@dataclass(frozen=True)
class RunResult:
    facts: EngineFacts
    diff: EngineDiff
    previous: EngineFacts | None
    notices: tuple[str, ...] = ()
    pin_moved: tuple[Pin, Pin] | None = None  # (old, new) when the run moved the pin


def run(
    engine: EngineSpec,
    paths: ProjectPaths,
    *,
    commit: str | None,
    source: str | None,
    write: bool = True,
    cache_dir: Path | None = None,
) -> RunResult:
    if write:  # before the extraction, so a refusal costs no fetch
        from apron.extractors.runner.writer import refuse_writes_outside

        refuse_writes_outside(paths.root, [paths.generated, paths.pins])
    pin = load_pin(paths.pins, engine.engine_id)
    chosen_source = source_for(engine, pin, source)
    notices: list[str] = []
    try:
        facts = extract_at(
            engine,
            commit or pin.commit,
            chosen_source,
            upstream_url=pin.url,
            cache_dir=cache_dir,
            notices=notices,
        )
    except ExtractionError as err:
        err.with_context(engine=engine.engine_id, source=chosen_source)
        raise
    moved = pin_for(pin, facts)
    with project_lock(paths.root) if write else contextlib.nullcontext():
        if write:
            notices += start_writing(paths)
        try:
            previous = current_facts(paths, engine)
        except GeneratedError as err:  # said, not swallowed; `bump` refuses instead
            notices.append(
                "the previous generation cannot be read, so the diff is against nothing: "
                f"{err.message}"
            )
            previous = None
        diff = diff_engine(previous, facts)
        if write:
            write_generated(paths, facts, moved, unreadable=notices)
    return RunResult(
        facts=facts,
        diff=diff,
        previous=previous,
        notices=tuple(notices),
        pin_moved=(pin, moved) if moved and write else None,
    )


def write_generated(
    paths: ProjectPaths,
    facts: EngineFacts,
    pin: Pin | None = None,
    *,
    unreadable: list[str] | None = None,
) -> None:
    """Render every file of `facts` and write them with `pin`, under the project lock."""
    with project_lock(paths.root):
        rendered = render_generated(paths, facts, unreadable=unreadable)  # all before any write
        pins = {pin_path(paths.pins, facts.engine): render_pin(pin)} if pin else {}
        write_rendered(paths, rendered, pins)


def readings_lost_at(
    engine: EngineSpec, source: str, old: EngineFacts | None, new: EngineFacts
) -> list[LostReading]:
    """readings_lost of `new` against `old` (bump: the previous pin's extraction; check: the
    committed one), reading the new commit's files from the cache of `source`."""
    if old is None:
        return []
    with GitSource(engine.engine_id, source) as git_source:
        snapshot = git_source.snapshot(new.commit)

        def read_text(path: str) -> str | None:
            try:
                return snapshot.read_text(path)
            except ExtractionError:
                return None

        removal_notes = engine_report(engine.engine_id).removal_notes
        notes = removal_notes(new) if removal_notes is not None else {}
        return readings_lost(old, new, read_text, notes)
