"""How SGLang's ServerArgs settles the prefill cuda-graph backend, as data: the switch in
`_apply_cuda_graph_compatibility` (`breakable` becomes `tc_piecewise` for some multimodal models)
and each backend's list of `(label, lambda: condition)` rules in
`_disable_<backend>_cudagraph_if_incompatible` that turn prefill capture off. The memory fraction
reserves prefill-graph memory only when capture stays on, so DeepSeek-V4, Nemotron-H and most
multimodal models get no prefill-graph reserve. Each condition is also a `rule` of the one rule
language (quantity_condition: names spelled as SGLang's code, which apron binds). A rule list or
branch of another shape is one "unread" row."""

from __future__ import annotations

import re
from collections.abc import Mapping

from apron.extractors.engine_api import FactOutput
from apron.extractors.parsing.expressions import python_all, quantity_condition
from apron.extractors.parsing.python_forms import body_statements
from apron.extractors.parsing.python_ts import (
    assigned_name,
    attribute,
    class_methods,
    code_of,
    conjuncts,
    if_clauses,
    parse_python,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    unparenthesize,
    walk,
)
from apron.extractors.records import Record
from apron.extractors.sglang.records import SglangPrefillGraphRule
from apron.extractors.snapshot import Snapshot

FACT = "prefill_graph_rules"
CLASS = "ServerArgs"
COMPATIBILITY = "_apply_cuda_graph_compatibility"
BACKENDS = {"BREAKABLE": "breakable", "TC_PIECEWISE": "tc_piecewise", "FULL": "full"}
RULE_METHODS = {
    "breakable": "_disable_breakable_cudagraph_if_incompatible",
    "tc_piecewise": "_disable_tc_piecewise_cudagraph_if_incompatible",
    "full": "_disable_full_prefill_cudagraph_if_incompatible",
}
PREFILL_BACKEND = "self.cuda_graph_config.prefill.backend"


def _row(backend, kind, order, path, symbol, *, label="", condition="", rule=(), target=""):
    return SglangPrefillGraphRule(
        backend=backend,
        kind=kind,
        order=order,
        name=label,
        condition=condition,
        rule=rule,
        target=target,
        path=path,
        symbol=symbol,
    )


def _backend_name(node) -> str | None:
    """`Backend.BREAKABLE` -> "breakable"."""
    read = attribute(unparenthesize(node))
    return BACKENDS.get(read[1]) if read is not None else None


def _rules(method, backend: str, path: str, symbol: str) -> list[SglangPrefillGraphRule]:
    """The `rules = [(label, lambda: condition), ...]` list of one disable method."""
    for statement in body_statements(method):
        found = assigned_name(statement)
        if found is None or found[0] != "rules":
            continue
        value = unparenthesize(found[1])
        if value.type != "list":
            return [_row(backend, "unread", 0, path, symbol, condition=code_of(value))]
        rows = []
        for order, element in enumerate(value.named_children):
            element = unparenthesize(element)
            parts = element.named_children if element.type == "tuple" else []
            label = string_value(parts[0]) if len(parts) == 2 else None
            body = parts[1].child_by_field_name("body") if len(parts) == 2 else None
            if label is None or parts[1].type != "lambda" or body is None:
                rows.append(
                    _row(backend, "unread", order, path, symbol, condition=code_of(element))
                )
                continue
            rows.append(
                _row(
                    backend,
                    "disable",
                    order,
                    path,
                    symbol,
                    label=label,
                    condition=code_of(body),
                    rule=quantity_condition(body),
                )
            )
        return rows
    return [_row(backend, "unread", 0, path, symbol, condition="no `rules = [...]` list")]


def _switches(method, path: str) -> list[SglangPrefillGraphRule]:
    """`if <backend> == Backend.X and <condition>: <backend> = Backend.Y` in the compatibility
    method: the default backend X becomes Y when the rest of the condition holds."""
    rows = []
    for node in walk(method):
        if node.type != "if_statement":
            continue
        clauses, _ = if_clauses(node)
        test, block = clauses[0]
        assigned = [single_assignment(s) for s in statements(block)]
        targets = [
            _backend_name(a[1])
            for a in assigned
            if a is not None and code_of(a[0]) == PREFILL_BACKEND
        ]
        if len(targets) != 1 or targets[0] is None:
            continue
        parts = conjuncts(unparenthesize(test))
        source = None
        rest: list = []
        for part in parts:
            compared = single_comparison(unparenthesize(part))
            if (
                compared is not None
                and source is None
                and compared[1] == "=="
                and code_of(compared[0]) == PREFILL_BACKEND
            ):
                source = _backend_name(compared[2])
            else:
                rest.append(part)
        if source is None:
            rows.append(_row("", "unread", len(rows), path, COMPATIBILITY, condition=code_of(test)))
            continue
        rows.append(
            _row(
                source,
                "switch",
                len(rows),
                path,
                COMPATIBILITY,
                condition=" and ".join(code_of(p) for p in rest),
                rule=python_all(quantity_condition(p) for p in rest),
                target=targets[0],
            )
        )
    return rows


ARCH_DEFAULT = re.compile(r"_apply_\w*_prefill_cuda_graph_default")
EXPLICIT_BACKEND = "self.cuda_graph_backend_prefill"


def _arch_defaults(name: str, method, path: str) -> list[SglangPrefillGraphRule]:
    """`if arch in ("A", "B"): self.cuda_graph_backend_prefill = Backend.X` in a per-model
    default hook: kind "default", one row per architecture (`name`), backend X (`target`)."""
    rows = []
    for node in walk(method):
        if node.type != "if_statement":
            continue
        clauses, _ = if_clauses(node)
        test, block = clauses[0]
        compared = single_comparison(unparenthesize(test))
        assigned = [single_assignment(s) for s in statements(block)]
        targets = [
            _backend_name(a[1])
            for a in assigned
            if a is not None and code_of(a[0]) == EXPLICIT_BACKEND
        ]
        if len(targets) != 1:
            continue
        members = unparenthesize(compared[2]) if compared and compared[1] == "in" else None
        archs = [string_value(m) for m in members.named_children] if members is not None else []
        if not archs or any(a is None for a in archs) or targets[0] is None:
            rows.append(_row("", "unread", len(rows), path, name, condition=code_of(test)))
            continue
        rows += [
            _row("", "default", i, path, name, label=str(a), target=targets[0])
            for i, a in enumerate(archs)
        ]
    return rows


def prefill_graph_rules(text: str, path: str) -> list[SglangPrefillGraphRule]:
    methods = dict(class_methods(parse_python(text, path), CLASS))
    rows: list[SglangPrefillGraphRule] = []
    for name, method in methods.items():
        if ARCH_DEFAULT.fullmatch(name):
            rows += _arch_defaults(name, method, path)
    if COMPATIBILITY in methods:
        rows += _switches(methods[COMPATIBILITY], path)
    else:
        rows.append(_row("", "unread", 0, path, COMPATIBILITY, condition=f"no {COMPATIBILITY}"))
    for backend, name in RULE_METHODS.items():
        if name in methods:
            rows += _rules(methods[name], backend, path, name)
        else:
            rows.append(_row(backend, "unread", 0, path, name, condition=f"no {name}"))
    return rows


def prefill_graph_fact(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    from apron.extractors.sglang.serving_defaults import SERVER_ARGS_PATHS

    path = snapshot.first_existing(SERVER_ARGS_PATHS, anchor=COMPATIBILITY)
    return FactOutput(tuple(prefill_graph_rules(snapshot.read_text(path), path)))
