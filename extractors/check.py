"""`extract check`: is generated/ what the tool produces at the pins?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from extractors.engines import ENGINES
from extractors.errors import ExtractionError, SourceError
from extractors.pins import load_pin
from extractors.pipeline import (
    ProjectPaths,
    all_current_facts,
    extract_at,
    render_all,
    render_generated,
    source_for,
)

CHECK_DIFFERS_EXIT = 1
CHECK_INCOMPLETE_EXIT = 4  # nothing differs, but some engine could not be checked


@dataclass(frozen=True)
class CheckOutcome:
    engine: str
    status: str  # "ok", "differs", "not checked"
    detail: str
    command: str = ""


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


def regenerate_command(engine: str, source: str | None) -> str:
    return f"extract --engine {engine}" + (f" --source {source}" if source else "")


def check_engine(paths: ProjectPaths, engine_id: str, source: str | None = None) -> CheckOutcome:
    engine = ENGINES[engine_id]
    try:
        pin = load_pin(paths.pins, engine_id)
    except ExtractionError as err:
        return CheckOutcome(engine_id, "not checked", f"no usable pin: {err.message}")
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
    rendered = render_generated(paths, facts)
    differ = differing_files(paths.generated, rendered, engine_id)
    if differ:
        return CheckOutcome(
            engine_id,
            "differs",
            "differs: " + ", ".join(differ),
            regenerate_command(engine_id, source),
        )
    return CheckOutcome(engine_id, "ok", f"identical at {pin.commit}")


def check_offline(paths: ProjectPaths) -> list[str]:
    """Load the committed modules, re-render them, and list files that are not byte-identical."""
    everything = all_current_facts(paths)
    differ: list[str] = []
    for engine_id, facts in sorted(everything.items()):
        rendered = {f"{engine_id}/{n}": t for n, t in render_all(facts).items()}
        differ += differing_files(paths.generated, rendered, engine_id)
    if everything:
        any_facts = next(iter(everything.values()))
        shared = render_generated(paths, any_facts)
        differ += differing_files(
            paths.generated, {k: v for k, v in shared.items() if "/" not in k}, None
        )
    return differ
