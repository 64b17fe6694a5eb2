"""The files of generated/, rendered from facts and read back: one engine's folder, the shared
schema, the index and the cross-engine matrix, and the committed generations they are read
from."""

from __future__ import annotations

from apron.extractors.engine_api import EngineSpec
from apron.extractors.engines import ENGINES, all_record_types
from apron.extractors.errors import GeneratedError
from apron.extractors.records import EngineFacts
from apron.extractors.report.export import SCHEMA_NAME, render_json_schema
from apron.extractors.report.render import (
    load_engine_facts,
    render_engine_files,
    render_package_init,
    render_schema,
)
from apron.extractors.report.reviewer import render_index, render_matrix
from apron.extractors.runner.pipeline import ProjectPaths


def render_all(facts: EngineFacts) -> dict[str, str]:
    """The files of the engine's own folder, generated/<engine>/, by name."""
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
