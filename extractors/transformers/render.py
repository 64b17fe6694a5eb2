"""Config-class tables -> the deterministic files of `generated/transformers/`: one module per
source (transformers' release, vLLM's own configs), one fact per line, sorted (derivations in
source order, which is the order they run in), plus a README and config_defaults.json (not an engine export: its own shape)."""

from __future__ import annotations

import json
from typing import Any

from apron.extractors.transformers.extract import ClassTables
from apron.extractors.transformers.release import ReleasePin

GENERATED_BY = "python -m apron.extractors.transformers"
# 2: derivation and validator conditions and values as expressions of apron/expressions.py
# (1: the tagged trees of config_classes.py's own operators)
SCHEMA_VERSION = 2


def literal(value: Any) -> str:
    """A Python literal for a plain value, stable across runs. A list is written as a tuple and
    a dict as a tuple of (key, value) pairs tagged "dict", so that every table is one constant
    the compiler folds (importing the module then unmarshals it instead of building it)."""
    if value is None or isinstance(value, bool | int):
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return literal(tuple(value))
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    if isinstance(value, dict):
        pairs = sorted(value.items(), key=lambda kv: str(kv[0]))
        return literal(("dict", tuple(pairs)))
    if isinstance(value, set | frozenset):
        return literal(("set", tuple(sorted(value, key=str))))
    raise TypeError(f"cannot render {type(value).__name__} as a generated literal")


def _table(name: str, comment: str, rows: list[tuple]) -> list[str]:
    lines = [f"# {comment}", f"{name}: tuple[tuple, ...] = ("]
    lines += [f"    {literal(row)}," for row in rows]
    lines.append(")")
    return lines


def module_lines(tables: ClassTables, constant: str) -> list[str]:
    classes = sorted(tables.classes, key=lambda c: (c.class_name, c.path))
    lines = ["", "from __future__ import annotations", "", constant]
    lines += [
        "# the rule encoding: conditions and values are expressions of apron/expressions.py",
        f"SCHEMA_VERSION = {SCHEMA_VERSION}",
        "",
    ]
    lines += _table(
        "CLASSES",
        "(class, model_type or None, path, bases)",
        [(c.class_name, c.model_type, c.path, c.bases) for c in classes],
    )
    lines.append("")
    lines += _table(
        "DEFAULTS",
        "(class, field, default, known): a default that is not a literal has known False and "
        "its code as the default",
        [
            (c.class_name, d.field, d.value if d.known else d.code, d.known)
            for c in classes
            for d in c.defaults
        ],
    )
    lines.append("")
    lines += _table(
        "ATTRIBUTE_MAP",
        "(class, attribute read, field stored: the config.json key)",
        [(c.class_name, a, s) for c in classes for a, s in c.attribute_map],
    )
    lines.append("")
    lines += _table(
        "SUB_CONFIGS",
        "(class, key, class of the sub-config)",
        [(c.class_name, k, s) for c in classes for k, s in c.sub_configs],
    )
    lines.append("")
    lines += _table(
        "DERIVATIONS",
        "(class, step, field, condition, expression): run in step order after the defaults; "
        "condition and expression are expressions of apron/expressions.py (() always holds)",
        [
            (c.class_name, step, d.field, d.condition, d.expression)
            for c in classes
            for step, d in enumerate(c.derivations)
        ],
    )
    lines.append("")
    lines += _table(
        "VALIDATORS",
        "(class, method, step, condition, error, message): the class refuses a config when a "
        "condition (an expression of apron/expressions.py) holds (huggingface_hub @strict runs "
        "each validate_* method when it is built)",
        [
            (c.class_name, v.method, step, v.condition, v.error, v.message)
            for c in classes
            for step, v in enumerate(c.validators)
        ],
    )
    lines.append("")
    lines += _table(
        "STRICT_CLASSES",
        "(class,): decorated with huggingface_hub's @strict, which checks each dataclass field's "
        "value against its annotation when the config is built",
        [(c.class_name,) for c in classes if c.strict],
    )
    lines.append("")
    lines += _table(
        "FIELD_TYPES",
        "(class, field, annotation): each annotated dataclass field "
        "(trees: extractors/transformers/config_classes.py FIELD_TYPE_OPS)",
        [(c.class_name, f, t) for c in classes for f, t in c.field_types],
    )
    if tables.registry:
        lines.append("")
        lines += _table(
            "REGISTRY",
            "(model_type, class): the class the config of each model_type is built with",
            list(tables.registry),
        )
    lines.append("")
    lines += _table(
        "WARNINGS",
        "(code, class, message, path): shapes not read (their fields are unknown)",
        sorted((w.code, w.subject, w.message, w.path) for w in tables.warnings),
    )
    return lines


def transformers_module(pin: ReleasePin, tables: ClassTables) -> str:
    header = [
        f"# Generated by `{GENERATED_BY}`. Do not edit.",
        f"# release: {pin.package} {pin.version} (the sdist pip downloads as {pin.requirement})",
        f"# sha256: {pin.sha256}",
        f"# source: {len(tables.sources)} configuration modules "
        "(src/transformers/models/*/configuration_*.py; blobs in config_defaults.json)",
        '"""transformers\' configuration classes at the pinned release: defaults, attribute '
        'maps, sub-configs and derived fields."""',
    ]
    return "\n".join(header + module_lines(tables, f"RELEASE = {literal(pin.version)}")) + "\n"


def vllm_module(commit: str, commit_date: str, tables: ClassTables) -> str:
    header = [
        f"# Generated by `{GENERATED_BY}`. Do not edit.",
        "# engine: vllm",
        f"# commit: {commit} ({commit_date})",
    ]
    header += [f"# source: {p} @ blob {b}" for p, b in tables.sources]
    header += [
        '"""vLLM\'s own configuration classes (vllm/transformers_utils/configs/), which replace '
        'transformers\' for the model_types in REGISTRY."""',
    ]
    return "\n".join(header + module_lines(tables, f"COMMIT = {literal(commit)}")) + "\n"


def _counts(tables: ClassTables) -> tuple[int, int, int, int]:
    typed = sum(1 for c in tables.classes if c.model_type)
    defaults = sum(len(c.defaults) for c in tables.classes)
    derived = sum(len(c.derivations) for c in tables.classes)
    return typed, defaults, derived, len(tables.warnings)


def readme(pin: ReleasePin, ours: ClassTables, commit: str, vllm: ClassTables) -> str:
    t, v = _counts(ours), _counts(vllm)
    lines = [
        f"<!-- Generated by `{GENERATED_BY}`. Do not edit. -->",
        "# transformers configuration classes",
        "",
        f"Read statically from transformers {pin.version} (sdist sha256 `{pin.sha256}`) and from "
        f"vLLM's own configuration classes at vLLM `{commit}`. apron (`apron/normalize.py`) fills "
        "in what a config.json leaves out from these: the class defaults, then the derived "
        "fields in the order `__post_init__` / `__init__` sets them.",
        "",
        "| source | classes with a model_type | defaults | derivations | shapes not read |",
        "|---|---|---|---|---|",
        f"| transformers {pin.version} `config_classes.py` | {t[0]} | {t[1]} | {t[2]} | {t[3]} |",
        f"| vLLM `vllm_config_classes.py` ({len(vllm.registry)} model_types) | {v[0]} | {v[1]} | "
        f"{v[2]} | {v[3]} |",
        "",
        "Derivations and validator conditions are expressions of the one rule language "
        "(`apron/expressions.py`, schema version "
        f"{SCHEMA_VERSION}). A default or derivation that is not read is kept as unknown "
        "(`known` False, or an `undef` expression) and listed in the module's `WARNINGS`; apron "
        "then does not fill that field.",
    ]
    return "\n".join(lines) + "\n"


def _json_tables(tables: ClassTables) -> dict[str, Any]:
    return {
        "classes": [
            {
                "class": c.class_name,
                "model_type": c.model_type,
                "path": c.path,
                "bases": list(c.bases),
                "defaults": {
                    d.field: (d.value if d.known else {"unknown": d.code}) for d in c.defaults
                },
                "attribute_map": dict(c.attribute_map),
                "sub_configs": dict(c.sub_configs),
                "derivations": [[d.field, d.condition, d.expression] for d in c.derivations],
            }
            for c in sorted(tables.classes, key=lambda c: (c.class_name, c.path))
        ],
        "registry": dict(tables.registry),
        "sources": dict(tables.sources),
    }


def constraints_json(pin: ReleasePin, ours: ClassTables, commit: str, vllm: ClassTables) -> str:
    data = {
        "schema_version": SCHEMA_VERSION,
        "transformers": {"package": pin.package, "version": pin.version, "sha256": pin.sha256}
        | _json_tables(ours),
        "vllm": {"commit": commit} | _json_tables(vllm),
    }
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def render_files(
    pin: ReleasePin, ours: ClassTables, commit: str, commit_date: str, vllm: ClassTables
) -> dict[str, str]:
    """Every file of generated/transformers/, by name."""
    return {
        "__init__.py": f'"""Generated by `{GENERATED_BY}`: config classes of transformers '
        f'{pin.version} and of vLLM {commit[:12]}."""\n',
        "config_classes.py": transformers_module(pin, ours),
        "vllm_config_classes.py": vllm_module(commit, commit_date, vllm),
        "README.md": readme(pin, ours, commit, vllm),
        "config_defaults.json": constraints_json(pin, ours, commit, vllm),
    }
