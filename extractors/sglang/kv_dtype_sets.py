"""SGLang's architecture sets that its KV-cache dtype default reads, as data.

`_DEEPSEEK_FAMILY_ARCHS` (python/sglang/srt/arg_groups/overrides.py): the architectures whose
DeepSeek-family overrides run; `_dsa_kv_cache_dtype_default` there picks the KV dtype by GPU for
those of them that `is_deepseek_dsa` (configs/model_config.py, already the architecture_sets
fact) also names. A module-level `NAME = frozenset({...})` / `{...}` / `(...)` of strings is
read; any other shape is one unknown row with a warning."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactOutput
from apron.extractors.parsing.python_ts import (
    call_name,
    code_of,
    parse_python,
    string_value,
    top_level_assignments,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, Record, warning
from apron.extractors.sglang.records import SglangKvDtypeSet
from apron.extractors.snapshot import Snapshot

FACT = "kv_dtype_sets"
OVERRIDES_PATHS = ("python/sglang/srt/arg_groups/overrides.py",)
DEEPSEEK_FAMILY = "_DEEPSEEK_FAMILY_ARCHS"
SETS = (DEEPSEEK_FAMILY,)


def string_set(
    text: str, path: str, name: str
) -> tuple[list[SglangKvDtypeSet], list[ExtractionWarning]] | None:
    """The members of the module-level string set `name`; None when the module has no `name`."""
    root = parse_python(text, path)
    value = next((v for n, v in top_level_assignments(root) if n == name), None)
    if value is None:
        return None
    node = unparenthesize(value)
    if node.type == "call" and call_name(node) in ("frozenset", "set", "tuple"):
        args = node.child_by_field_name("arguments").named_children
        node = unparenthesize(args[0]) if len(args) == 1 else node
    members = (
        [string_value(unparenthesize(c)) for c in node.named_children]
        if node.type in ("set", "tuple", "list")
        else None
    )
    if members is None or any(m is None for m in members):
        message = f"not a set of strings: {code_of(value)}"
        return (
            [
                SglangKvDtypeSet(
                    set_name=name, architecture="", status="unknown", path=path, symbol=name
                )
            ],
            [warning("unreadable_set", name, message, path, name)],
        )
    rows = [
        SglangKvDtypeSet(set_name=name, architecture=m, status="read", path=path, symbol=name)
        for m in sorted(set(members))  # type: ignore[type-var]
    ]
    return rows, []


def kv_dtype_sets(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """Each set; one absent from every known layout is a warning, not a row."""
    rows: list[SglangKvDtypeSet] = []
    warnings: list[ExtractionWarning] = []
    for name in SETS:
        found = None
        for path in OVERRIDES_PATHS:
            if snapshot.exists(path) and name in snapshot.read_text(path):
                found = string_set(snapshot.read_text(path), path, name)
                if found is not None:
                    break
        if found is None:
            message = f"no {name} at this commit in " + ", ".join(OVERRIDES_PATHS)
            warnings.append(warning("absent", name, message, OVERRIDES_PATHS[0], name))
            continue
        rows.extend(found[0])
        warnings.extend(found[1])
    return FactOutput(tuple(rows), tuple(warnings))
