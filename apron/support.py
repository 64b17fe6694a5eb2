"""Which engines register architectures[0], in which task group, with which documented
constraints, from the facts each engine declares as naming architectures.

Each generated engine package lists its `ARCHITECTURE_FACTS`: (fact, field, role). A row counts
when its field (a string, or a tuple of strings) names the config's architecture. "registry"
facts make an engine "registered", "documented" rows add entries, "finding" rows add notes and
"matrix" cells merge into one entry. Only those facts' modules are imported."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.constraints import ENGINE_TITLES, ArchitectureFact, ConstraintSet, EngineConstraints
from apron.results import EngineSupport, SupportEntry
from apron.terminal import shown

CONSTRAINT_FIELDS = (
    "notes",
    "footnotes",
    "constraints",
    "footnote_texts",
    "architecture_notes",
    "model_notes",
    "example_notes",
    "row_notes",
)
DETAIL_FIELDS = (
    "module",
    "class_name",
    "section",
    "gguf_arch",
    "llm_arch",
    "model_type",
    "converter_class",
    "resolution",
    "models",
    "family",
    "inputs",
    "features",
    "other_columns",
    "example_hf_models",
    "example_hf_ids",
    "also_in",
)


def _names(row: Any, scan: ArchitectureFact, arch: str) -> bool:
    value = getattr(row, scan.field)  # declared by the engine: a missing field fails loudly
    return arch in value if isinstance(value, tuple) else value == arch


def _shown(row: Any, name: str) -> Any:
    """A display field of the row's record type; None when the type has no such field."""
    return getattr(row, name) if name in row._fields else None


def _text(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _entry(engine: EngineConstraints, fact: str, row: Any) -> SupportEntry:
    entry_name = _shown(row, "entry_name")
    symbol = str(
        _shown(row, "symbol")
        or _shown(row, "dict_name")
        or (f"EntryClass = {entry_name}" if entry_name else "")
        or _shown(row, "section")
        or fact
    )
    detail = "; ".join(
        f"{name} {_text(_shown(row, name))}"
        for name in DETAIL_FIELDS
        if _shown(row, name) not in (None, "", (), []) and _shown(row, name) != symbol
    )
    group = _shown(row, "task_group") or ""
    also = _shown(row, "also_in") or ()
    if group and also:
        group = f"{group} (also {_text(also)})"
    constraints: list[str] = []
    for name in CONSTRAINT_FIELDS:
        value = _shown(row, name)
        if isinstance(value, str) and value:
            constraints.append(value)
        elif isinstance(value, tuple | list):
            constraints.extend(str(v) for v in value if v)
    return SupportEntry(
        kind=fact,
        task_group=str(group),
        detail=detail,
        constraints=tuple(constraints),
        citation=engine.cite(row, symbol),
    )


def _matrix_entry(engine: EngineConstraints, fact: str, cells: list[Any]) -> SupportEntry:
    """One entry for a feature matrix's cells of this architecture (one row per cell)."""
    detail = ", ".join(f"{c.feature} {c.status}" for c in cells)
    constraints: list[str] = []
    for cell in cells:
        constraints.extend(str(n) for n in (*cell.notes, *cell.row_notes) if n)
    symbol = str(cells[0].matrix or fact)
    return SupportEntry(
        kind=fact,
        task_group="",
        detail=detail,
        constraints=tuple(dict.fromkeys(constraints)),
        citation=engine.cite(cells[0], symbol),
    )


def engine_support(
    model: ModelConfig, engine_id: str, engine: EngineConstraints | None
) -> EngineSupport:
    title = ENGINE_TITLES.get(engine_id, engine_id)
    if engine is None:
        return EngineSupport(
            engine=engine_id,
            title=title,
            commit=None,
            status="constraints absent",
            entries=(),
            notes=(f"no generated/{engine_id}/: apron cannot say whether {title} registers it",),
        )
    arch = model.architecture
    if arch is None:
        return EngineSupport(
            engine=engine_id,
            title=title,
            commit=engine.commit,
            status="no architecture",
            entries=(),
            notes=("the config has no architectures list",),
        )
    entries: list[SupportEntry] = []
    notes: list[str] = []
    registered = False
    registry_facts = [s.fact for s in engine.architecture_facts if s.role == "registry"]
    for scan in engine.architecture_facts:
        rows = [r for r in engine.rows(scan.fact) if _names(r, scan, arch)]
        if scan.role == "matrix":
            if rows:
                entries.append(_matrix_entry(engine, scan.fact, rows))
            continue
        for row in rows:
            if scan.role == "finding":
                note = row.note
                notes.append(f"{row.finding or 'finding'}{': ' + note if note else ''}")
                continue
            entries.append(_entry(engine, scan.fact, row))
            import_error = _shown(row, "import_error")
            if scan.role == "registry" and import_error:
                notes.append(
                    f"{arch} is registered by a module that does not import at this commit "
                    f"({import_error}): {title} skips it at run time"
                )
            elif scan.role == "registry":
                registered = True
    if not registered:
        registry = [f for f in registry_facts if engine.has(f)]
        if not registry:
            status = "registry not extracted"
            notes.append(f"generated/{engine_id} has no registry fact")
        else:
            status = "not registered"
            notes.append(f"{shown(arch)} is not in {title}'s {', '.join(registry)} at this commit")
    else:
        status = "registered"
    entries.sort(
        key=lambda e: (e.kind not in registry_facts, "model_type mmproj" in e.detail, e.kind)
    )
    return EngineSupport(
        engine=engine_id,
        title=title,
        commit=engine.commit,
        status=status,
        entries=tuple(entries),
        notes=tuple(notes),
    )


def _safe_support(
    model: ModelConfig, engine_id: str, engine: EngineConstraints | None
) -> EngineSupport:
    try:
        return engine_support(model, engine_id, engine)
    except Exception as err:  # generated rows of a shape this apron does not know
        return EngineSupport(
            engine=engine_id,
            title=ENGINE_TITLES.get(engine_id, engine_id),
            commit=engine.commit if engine else None,
            status="constraints unreadable",
            entries=(),
            notes=(f"could not read generated/{engine_id} ({type(err).__name__}: {err})",),
        )


def support(model: ModelConfig, constraints: ConstraintSet) -> tuple[EngineSupport, ...]:
    return tuple(
        _safe_support(model, engine_id, engine) for engine_id, engine in constraints.engines.items()
    )
