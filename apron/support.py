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
REGISTRY_FACTS = ("registry_rows", "hf_architectures", "registered_architectures",
                  "registered_models")
FINDINGS_FACTS = ("docs_registry_findings",)
CONSTRAINT_FIELDS = ("notes", "footnotes", "constraints", "footnote_texts")
DETAIL_FIELDS = ("module", "class_name", "section", "gguf_arch", "llm_arch",
                 "model_type", "converter_class", "resolution", "models", "family", "inputs",
                 "features", "other_columns", "example_hf_models", "example_hf_ids", "also_in")
SKIP_FACTS = ("mla_conditions",)


def _names(row: Any) -> tuple[str, ...]:
    names = [field(row, f) for f in ARCH_FIELDS]
    many = field(row, "architectures")
    if isinstance(many, tuple | list):
        names.extend(many)
    return tuple(n for n in names if isinstance(n, str) and n)


def _text(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _entry(engine: EngineConstraints, fact: str, row: Any) -> SupportEntry:
    symbol = str(field(row, "symbol", "") or field(row, "dict_name", "") or field(row, "section", "")
                 or fact)
    detail = "; ".join(f"{name} {_text(field(row, name))}" for name in DETAIL_FIELDS
                       if field(row, name) not in (None, "", (), []) and field(row, name) != symbol)
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


def engine_support(model: ModelConfig, engine_id: str, engine: EngineConstraints | None) -> EngineSupport:
    title = ENGINE_TITLES.get(engine_id, engine_id)
    if engine is None:
        return EngineSupport(engine_id, title, None, "constraints absent", (),
                             (f"no generated/{engine_id}/: apron cannot say whether {title} "
                              "registers it",))
    arch = model.architecture
    if arch is None:
        return EngineSupport(engine_id, title, engine.commit, "no architecture", (),
                             ("the config has no architectures list",))
    entries: list[SupportEntry] = []
    notes: list[str] = []
    registered = False
    for fact, rows in engine.facts.items():
        if fact in SKIP_FACTS:
            continue
        for row in rows:
            if arch not in _names(row):
                continue
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
    entries.sort(key=lambda e: (e.kind not in REGISTRY_FACTS, e.kind, e.detail))
    return EngineSupport(engine_id, title, engine.commit, status, tuple(entries), tuple(notes))


def support(model: ModelConfig, constraints: ConstraintSet) -> tuple[EngineSupport, ...]:
    return tuple(engine_support(model, engine_id, engine)
                 for engine_id, engine in constraints.engines.items())
