"""One extraction run: pin -> source -> extractors -> render -> generated/ (atomically)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from apron.extractors.engines import ENGINES, all_record_types
from apron.extractors.errors import CacheCorruptError, ExtractionError, GeneratedError, UsageError
from apron.extractors.git import GitSource
from apron.extractors.pins import Pin, check_source_url, load_pin, pin_path, render_pin
from apron.extractors.records import EngineFacts
from apron.extractors.report.diff import EngineDiff, diff_engine
from apron.extractors.report.export import SCHEMA_NAME, render_json_schema
from apron.extractors.report.render import (
    load_engine_facts,
    render_engine_files,
    render_package_init,
    render_schema,
)
from apron.extractors.report.reviewer import render_index, render_matrix
from apron.extractors.runner.base import EngineSpec, extract_engine
from apron.extractors.runner.factcache import FactCache, cached_engine
from apron.extractors.runner.writer import (
    JOURNAL_NAME,
    Content,
    WriteError,
    leftovers,
    project_lock,
    recover_interrupted_write,
    write_changes_atomically,
)

SOURCE_ENV = "APRON_SOURCE_{engine}"


@dataclass(frozen=True)
class ProjectPaths:
    root: Path

    @property
    def pins(self) -> Path:
        return self.root / "pins"

    @property
    def generated(self) -> Path:
        return self.root / "generated"


def find_project(start: Path | None = None) -> ProjectPaths:
    """The checkout holding `pins/` and `generated/`: the given dir or the nearest parent."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pins").is_dir() and (candidate / "generated").is_dir():
            return ProjectPaths(candidate)
    raise UsageError(
        f"no project checkout (a folder with pins/ and generated/) at or above {here}; "
        "run from the checkout or pass --root"
    )


def source_for(engine: EngineSpec, pin: Pin | None, source: str | None) -> str:
    """`--source`, else APRON_SOURCE_<ENGINE>, else the pin's URL."""
    if source is not None:
        return check_source_url(source)  # given, even empty: never replaced by a default
    chosen = os.environ.get(SOURCE_ENV.format(engine=engine.engine_id.upper())) or (
        pin.url if pin else engine.upstream_url
    )
    return check_source_url(chosen)


def extract_at(
    engine: EngineSpec,
    commit: str,
    source: str,
    *,
    upstream_url: str,
    cache_dir: Path | None = None,
    notices: list[str] | None = None,
) -> EngineFacts:
    """Extract `engine` at `commit`. A damaged git cache is rebuilt once (and said in `notices`)."""
    fact_cache = FactCache.at(cache_dir)
    cached = cached_engine(engine, fact_cache)  # unchanged blobs are not parsed again
    with GitSource(engine.engine_id, source, cache_dir=cache_dir) as git_source:
        for attempt in (1, 2):
            try:
                snapshot = git_source.snapshot(commit)
                facts = extract_engine(
                    cached, snapshot, commit_date=snapshot.commit_date, source_label=source
                )
                break
            except CacheCorruptError as err:
                if attempt == 2:
                    raise
                git_source.rebuild()
                git_source.notices.append(
                    f"the git cache at {git_source.cache_path} was damaged "
                    f"({err.message}); rebuilt it and extracted again"
                )
        if notices is not None:
            notices += git_source.notices
            notices += [fact_cache.note] if fact_cache.note else []
    if facts.upstream_url != upstream_url:
        facts = EngineFacts(
            engine=facts.engine,
            commit=facts.commit,
            commit_date=facts.commit_date,
            upstream_url=upstream_url,
            facts=facts.facts,
            warnings=facts.warnings,
        )
    return facts


def render_all(facts: EngineFacts) -> dict[str, str]:
    engine = ENGINES[facts.engine]
    return render_engine_files(facts, engine.title)


def current_facts(paths: ProjectPaths, engine: EngineSpec) -> EngineFacts | None:
    """The committed generation of `engine`, or None when generated/<engine>/ does not exist.
    One that cannot be read (hand-edited, or older than a record type) is a GeneratedError."""
    return load_engine_facts(paths.generated / engine.engine_id, engine.fact_kinds)


def all_current_facts(
    paths: ProjectPaths, *, skip: str | None = None, unreadable: list[str] | None = None
) -> dict[str, EngineFacts]:
    """Every committed generation but `skip`'s. One that cannot be read is an error, or, when
    `unreadable` is given, left out and described there."""
    found = {}
    for engine_id, engine in ENGINES.items():
        if engine_id == skip:
            continue
        try:
            facts = current_facts(paths, engine)
        except GeneratedError as err:
            if unreadable is None:
                raise
            unreadable.append(
                f"generated/{engine_id} cannot be read, so README.md and MATRIX.md leave it "
                f"out until it is regenerated: {err.message}"
            )
            continue
        if facts is not None:
            found[engine_id] = facts
    return found


def render_generated(
    paths: ProjectPaths, facts: EngineFacts, *, unreadable: list[str] | None = None
) -> dict[str, str]:
    """Every file an extraction of `facts` writes, keyed by path relative to generated/:
    the engine's folder, the shared schema, the index and the cross-engine matrix. The other
    engines' generations must be readable (see `all_current_facts` for `unreadable`)."""
    others = all_current_facts(paths, skip=facts.engine, unreadable=unreadable)
    everything = {**others, facts.engine: facts}
    rendered = {f"{facts.engine}/{name}": text for name, text in render_all(facts).items()}
    rendered["__init__.py"] = render_package_init(
        [(e.engine_id, e.title) for e in ENGINES.values()]
    )
    rendered["schema.py"] = render_schema(all_record_types())
    rendered[SCHEMA_NAME] = render_json_schema(all_record_types())
    rendered["README.md"] = render_index(everything)
    rendered["MATRIX.md"] = render_matrix(everything)
    return rendered


def generated_changes(paths: ProjectPaths, rendered: dict[str, str]) -> dict[Path, Content]:
    """The targets `rendered` replaces: each engine folder whole, then the shared files."""
    engine_files: dict[str, dict[str, str]] = {}
    shared: dict[str, str] = {}
    for relative, text in rendered.items():
        if "/" in relative:
            engine, name = relative.split("/", 1)
            engine_files.setdefault(engine, {})[name] = text
        else:
            shared[relative] = text
    changes: dict[Path, Content] = {paths.generated / e: f for e, f in engine_files.items()}
    changes.update({paths.generated / name: text for name, text in sorted(shared.items())})
    return changes


def write_rendered(
    paths: ProjectPaths, rendered: dict[str, str], pins: dict[Path, str] | None = None
) -> None:
    """Every rendered file, and the pins after them, land together or none does; a kill at any
    step is recovered on the next start (writer.recover_interrupted_write)."""
    changes = generated_changes(paths, rendered)
    changes.update(pins or {})
    with project_lock(paths.root):
        write_changes_atomically(changes, journal=paths.root / JOURNAL_NAME)


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


def start_writing(paths: ProjectPaths) -> list[str]:
    """Recover a write a killed process left journaled; returns the note (if any) to show.
    Call it with the project lock."""
    note = recover_interrupted_write(paths.root)
    return [note] if note else []


def refuse_leftovers(paths: ProjectPaths, command: str) -> None:
    """Stop `command` while files of an interrupted write lie in generated/ or pins/."""
    found = leftovers(paths.root)
    if found:
        listed = ", ".join(str(p.relative_to(paths.root)) for p in found)
        raise WriteError(
            f"{command} refuses to run while an interrupted write left files behind: {listed}; "
            "they are not part of the project: delete them (keep what you need from them first)",
            paths=[str(p) for p in found],
        )


def pin_for(pin: Pin, facts: EngineFacts) -> Pin | None:
    """The pin that names the commit `facts` were extracted at, or None when `pin` already
    does (with that commit's committer date)."""
    moved = Pin(url=pin.url, commit=facts.commit, date=facts.commit_date)
    return None if moved == pin else moved


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
