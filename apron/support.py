"""Which engines register architectures[0], in which task group, with which documented
constraints, from every generated fact whose rows name an architecture.

Generic on purpose: a row counts when one of its architecture fields (`architecture`,
`hf_architecture`, `registered_architecture`, or the tuple `architectures`) equals the config's
architecture. Registry facts make an engine "registered"; documentation rows and findings add
entries and notes."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.constraints import ENGINE_TITLES, ConstraintSet, EngineConstraints, field
from apron.results import EngineSupport, SupportEntry

ARCH_FIELDS = ("architecture", "hf_architecture", "registered_architecture")
REGISTRY_FACTS = (
    "registry_rows",
    "hf_architectures",
    "registered_architectures",
    "registered_models",
)
FINDINGS_FACTS = ("docs_registry_findings",)
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
# facts the engine views already interpret (MLA sets and conditions) are not repeated here
SKIP_FACTS = (
    "mla_conditions",
    "mla_architectures",
    "explicit_mha_architectures",
    "mla_model_types",
    "mla_gates",
    "kv_head_aliases",
    "kv_head_fallback",
    "kv_head_overrides",
)
# a fact is scanned only when its name says it can hold architectures; this keeps a plan from
# importing generated modules it does not need (llama.cpp's raw class sets, arch names, ...)
NAME_HINTS = (
    "registry",
    "architecture",
    "docs",
    "supported",
    "registered",
    "feature",
    "models",
    "footnote",
)


def _arch_fields(row: Any) -> tuple[tuple[str, ...], str | None]:
    """The scalar architecture fields and the tuple field this row type has."""
    names = getattr(row, "_fields", None)
    if names is None:
        names = tuple(n for n in (*ARCH_FIELDS, "architectures") if hasattr(row, n))
    return tuple(f for f in ARCH_FIELDS if f in names), (
        "architectures" if "architectures" in names else None
    )


def _scan(rows: tuple[Any, ...], arch: str) -> list[Any]:
    if not rows:
        return []
    scalars, many = _arch_fields(rows[0])
    if not scalars and many is None:
        return []
    found = []
    for row in rows:
        if any(getattr(row, f, None) == arch for f in scalars) or (
            many is not None and arch in (getattr(row, many, None) or ())
        ):
            found.append(row)
    return found


def _text(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _entry(engine: EngineConstraints, fact: str, row: Any) -> SupportEntry:
    entry_name = field(row, "entry_name", "")
    symbol = str(
        field(row, "symbol", "")
        or field(row, "dict_name", "")
        or (f"EntryClass = {entry_name}" if entry_name else "")
        or field(row, "section", "")
        or fact
    )
    detail = "; ".join(
        f"{name} {_text(field(row, name))}"
        for name in DETAIL_FIELDS
        if field(row, name) not in (None, "", (), []) and field(row, name) != symbol
    )
    group = field(row, "task_group", "") or ""
    also = field(row, "also_in", ())
    if group and also:
        group = f"{group} (also {_text(also)})"
    constraints: list[str] = []
    for name in CONSTRAINT_FIELDS:
        value = field(row, name)
        if isinstance(value, str) and value:
            constraints.append(value)
        elif isinstance(value, tuple | list):
            constraints.extend(str(v) for v in value if v)
    return SupportEntry(fact, str(group), detail, tuple(constraints), engine.cite(row, symbol))


def _is_matrix(row: Any) -> bool:
    return hasattr(row, "feature") and hasattr(row, "status")


def _matrix_entry(engine: EngineConstraints, fact: str, cells: list[Any]) -> SupportEntry:
    """One entry for a feature matrix's cells of this architecture (one row per cell)."""
    detail = ", ".join(f"{field(c, 'feature', '?')} {field(c, 'status', '?')}" for c in cells)
    constraints: list[str] = []
    for cell in cells:
        for name in ("notes", "row_notes"):
            constraints.extend(str(n) for n in field(cell, name, ()) or () if n)
    symbol = str(field(cells[0], "matrix", "") or fact)
    return SupportEntry(
        fact, "", detail, tuple(dict.fromkeys(constraints)), engine.cite(cells[0], symbol)
    )


def engine_support(
    model: ModelConfig, engine_id: str, engine: EngineConstraints | None
) -> EngineSupport:
    title = ENGINE_TITLES.get(engine_id, engine_id)
    if engine is None:
        return EngineSupport(
            engine_id,
            title,
            None,
            "constraints absent",
            (),
            (f"no generated/{engine_id}/: apron cannot say whether {title} registers it",),
        )
    arch = model.architecture
    if arch is None:
        return EngineSupport(
            engine_id,
            title,
            engine.commit,
            "no architecture",
            (),
            ("the config has no architectures list",),
        )
    entries: list[SupportEntry] = []
    notes: list[str] = []
    registered = False
    facts = [
        f
        for f in engine.fact_names()
        if f not in SKIP_FACTS and any(hint in f for hint in NAME_HINTS)
    ]
    for fact in facts:
        rows = _scan(engine.rows(fact), arch)
        if rows and _is_matrix(rows[0]):
            entries.append(_matrix_entry(engine, fact, rows))
            continue
        for row in rows:
            if fact in FINDINGS_FACTS:
                kind = field(row, "finding", "") or "finding"
                note = field(row, "note", "")
                notes.append(f"{kind}{': ' + note if note else ''}")
                continue
            entry = _entry(engine, fact, row)
            entries.append(entry)
            if fact in REGISTRY_FACTS:
                registered = True
    if not registered:
        registry = [f for f in REGISTRY_FACTS if engine.has(f)]
        if not registry:
            status = "registry not extracted"
            notes.append(f"generated/{engine_id} has no registry fact")
        else:
            status = "not registered"
            notes.append(f"{arch} is not in {title}'s {', '.join(registry)} at this commit")
    else:
        status = "registered"
    entries.sort(
        key=lambda e: (e.kind not in REGISTRY_FACTS, "model_type mmproj" in e.detail, e.kind)
    )
    return EngineSupport(engine_id, title, engine.commit, status, tuple(entries), tuple(notes))


def _safe_support(
    model: ModelConfig, engine_id: str, engine: EngineConstraints | None
) -> EngineSupport:
    try:
        return engine_support(model, engine_id, engine)
    except Exception as err:  # generated rows of a shape this apron does not know
        return EngineSupport(
            engine_id,
            ENGINE_TITLES.get(engine_id, engine_id),
            engine.commit if engine else None,
            "constraints unreadable",
            (),
            (f"could not read generated/{engine_id} ({type(err).__name__}: {err})",),
        )


def support(model: ModelConfig, constraints: ConstraintSet) -> tuple[EngineSupport, ...]:
    return tuple(
        _safe_support(model, engine_id, engine) for engine_id, engine in constraints.engines.items()
    )
