"""The runner's side of an extraction: where the project is, which source to read, the facts
at a commit, and writing rendered files with the pins atomically. Rendering them is the
report's (report/generated_files.py); one whole run is the command's (commands/generate.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from apron.extractors.engine_api import EngineSpec
from apron.extractors.errors import CacheCorruptError, UsageError
from apron.extractors.git import GitSource
from apron.extractors.pins import Pin, check_source_url
from apron.extractors.records import EngineFacts
from apron.extractors.runner.base import extract_engine
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
    # the pins and generated/ installed inside the package (apron.pins, apron.generated): for
    # commands that only read them, never written
    installed: bool = False

    @property
    def pins(self) -> Path:
        return self.root / "pins"

    @property
    def generated(self) -> Path:
        return self.root / "generated"


def installed_project() -> ProjectPaths | None:
    """The pins and generated/ the package was installed with (a wheel: site-packages/apron/;
    an editable install: its checkout), or None when they are not there."""
    from apron.constraints import default_directory
    from apron.errors import ConstraintsError

    try:
        generated = default_directory()
    except ConstraintsError:
        return None
    root = generated.parent
    if not (root / "pins").is_dir():
        return None
    return ProjectPaths(root, installed=True)


def find_project(start: Path | None = None, *, read_only: bool = False) -> ProjectPaths:
    """The checkout holding `pins/` and `generated/`: the given dir or the nearest parent.
    Outside any checkout, a command that only reads them (`read_only`) uses the ones installed
    with the package."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pins").is_dir() and (candidate / "generated").is_dir():
            return ProjectPaths(candidate)
    if read_only and start is None:
        installed = installed_project()
        if installed is not None:
            return installed
    raise UsageError(
        f"no project checkout (a folder with pins/ and generated/) at or above {here}; "
        "run from the checkout or pass --project DIR"
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
    from apron.extractors.runner.writer import refuse_writes_outside

    refuse_writes_outside(paths.root, [paths.generated, paths.pins])
    changes = generated_changes(paths, rendered)
    changes.update(pins or {})
    with project_lock(paths.root):
        write_changes_atomically(changes, journal=paths.root / JOURNAL_NAME)


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
