"""`extract check`: is generated/ what the tool produces at the pins?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from apron.extractors.commands.generate import readings_lost_at
from apron.extractors.engines import ENGINES
from apron.extractors.errors import ExtractionError, SourceError
from apron.extractors.pins import Pin, load_pin
from apron.extractors.records import EngineFacts
from apron.extractors.report.generated_files import (
    all_current_facts,
    current_facts,
    render_all,
    render_generated,
)
from apron.extractors.report.readings_lost import LostReading
from apron.extractors.runner.pipeline import ProjectPaths, extract_at, source_for

CHECK_DIFFERS_EXIT = 1
CHECK_INCOMPLETE_EXIT = 4  # nothing differs, but some engine could not be checked
CHECK_READINGS_LOST_EXIT = (
    5  # it differs, and the new extraction lost readings the files still hold
)
LOST_SHOWN = 20  # readings lost listed per engine; the rest counted


@dataclass(frozen=True)
class CheckOutcome:
    engine: str
    status: str  # "ok", "differs", "not checked"
    detail: str
    command: str = ""
    readings_lost: int = 0  # suspected misreads against the committed extraction (differs only)


def differing_files(generated: Path, rendered: dict[str, str], engine: str | None) -> list[str]:
    """Files whose committed text differs from `rendered`, plus stray files in the engine folder."""
    differ = []
    for relative, text in sorted(rendered.items()):
        path = generated / relative
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            differ.append(relative)
    if engine is not None and (generated / engine).is_dir():
        expected = {r.split("/", 1)[1] for r in rendered if r.startswith(f"{engine}/")}
        for path in sorted((generated / engine).iterdir()):
            if path.is_file() and path.name not in expected:
                differ.append(f"{engine}/{path.name} (not produced by the tool)")
    return differ


def regenerate_command(engine: str, source: str | None, commit: str | None = None) -> str:
    return (
        f"extract --engine {engine}"
        + (f" --commit {commit}" if commit else "")
        + (f" --source {source}" if source else "")
    )


def pin_mismatch(engine_id: str, pin: Pin, facts: EngineFacts | None) -> str | None:
    """What disagrees between the header of generated/<engine> and pins/<engine>.toml, in
    words; None when they name the same commit and date (or nothing is generated yet)."""
    if facts is None:
        return None
    pin_file, folder = f"pins/{engine_id}.toml", f"generated/{engine_id}"
    if facts.commit != pin.commit:
        return (
            f"{folder} was extracted at {facts.commit} ({facts.commit_date}) but {pin_file} "
            f"names {pin.commit} ({pin.date})"
        )
    if facts.commit_date != pin.date:
        return (
            f"{folder} gives {facts.commit} the date {facts.commit_date} but {pin_file} "
            f"says {pin.date}"
        )
    return None


def check_engine(paths: ProjectPaths, engine_id: str, source: str | None = None) -> CheckOutcome:
    engine = ENGINES[engine_id]
    try:
        pin = load_pin(paths.pins, engine_id)
    except ExtractionError as err:
        return CheckOutcome(engine_id, "not checked", f"no usable pin: {err.message}")
    committed = current_facts(paths, engine)
    mismatch = pin_mismatch(engine_id, pin, committed)
    if mismatch:
        return CheckOutcome(
            engine_id, "differs", mismatch, regenerate_command(engine_id, source, pin.commit)
        )
    chosen = source_for(engine, pin, source)
    try:
        facts = extract_at(engine, pin.commit, chosen, upstream_url=pin.url)
    except SourceError as err:
        return CheckOutcome(engine_id, "not checked", f"source unavailable: {err.message}")
    except ExtractionError as err:
        return CheckOutcome(
            engine_id,
            "differs",
            f"extraction at the pin fails: {err.message}",
            regenerate_command(engine_id, source),
        )
    if facts.commit_date != pin.date:
        return CheckOutcome(
            engine_id,
            "differs",
            f"pins/{engine_id}.toml dates {pin.commit} {pin.date}, but its committer date is "
            f"{facts.commit_date}",
            regenerate_command(engine_id, source),
        )
    rendered = render_generated(paths, facts)
    differ = differing_files(paths.generated, rendered, engine_id)
    if differ:
        lost = readings_lost_at(engine, chosen, committed, facts)
        return CheckOutcome(
            engine_id,
            "differs",
            "\n".join([*_lost_lines(lost), "differs: " + ", ".join(differ)]),
            regenerate_command(engine_id, source),
            readings_lost=len(lost),
        )
    return CheckOutcome(engine_id, "ok", f"identical at {pin.commit}")


def _lost_lines(lost: list[LostReading]) -> list[str]:
    """The readings lost, listed first in a `differs` outcome; none when nothing was lost."""
    if not lost:
        return []
    lines = [f"{len(lost)} readings lost (suspected misreads, not upstream changes):"]
    lines += [f"  {item.line()}" for item in lost[:LOST_SHOWN]]
    if len(lost) > LOST_SHOWN:
        lines.append(f"  ... and {len(lost) - LOST_SHOWN} more")
    return lines


def check_offline(paths: ProjectPaths) -> list[str]:
    """Load the committed modules, re-render them, and list files that are not byte-identical."""
    everything = all_current_facts(paths)
    differ: list[str] = []
    for engine_id, facts in sorted(everything.items()):
        try:
            mismatch = pin_mismatch(engine_id, load_pin(paths.pins, engine_id), facts)
        except ExtractionError as err:
            mismatch = f"generated/{engine_id} has no usable pin ({err.message})"
        if mismatch:
            differ.append(mismatch)
        rendered = {f"{engine_id}/{n}": t for n, t in render_all(facts).items()}
        differ += differing_files(paths.generated, rendered, engine_id)
    if everything:
        any_facts = next(iter(everything.values()))
        shared = render_generated(paths, any_facts)
        differ += differing_files(
            paths.generated, {k: v for k, v in shared.items() if "/" not in k}, None
        )
    return differ
