"""SGLang's default context length as data: the keys `get_context_length` tries in order
(`CONTEXT_LENGTH_KEYS`), the rope-scaling factor it multiplies by and when that factor is 1, and
the number it returns when no key is set (python/sglang/srt/utils/hf_transformers/common.py at
the 2026 layout, utils/hf_transformers_utils.py or hf_transformers_utils.py before). A statement
of the function that is none of these shapes is one "unread" row, and apron's SGLang default
is then unknown."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.parsing.python_forms import body_statements
from apron.extractors.parsing.python_ts import (
    assigned_name,
    call_parts,
    callee,
    code_of,
    comparison,
    defined_name,
    if_clauses,
    number_literal,
    parse_python,
    returned,
    statements,
    string_value,
    top_level_assignments,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import Record
from apron.extractors.runner.base import FactOutput
from apron.extractors.sglang.records import SglangContextRule
from apron.extractors.snapshot import Snapshot

FACT = "context_length_rules"
PATHS = (
    "python/sglang/srt/utils/hf_transformers/common.py",
    "python/sglang/srt/utils/hf_transformers_utils.py",
    "python/sglang/srt/hf_transformers_utils.py",
)
FUNCTION = "get_context_length"
KEYS = "CONTEXT_LENGTH_KEYS"


def _row(kind: str, order: int, path: str, *, name="", value="", code="") -> SglangContextRule:
    symbol = KEYS if kind == "key" else FUNCTION
    return SglangContextRule(
        kind=kind, order=order, name=name, value=value, code=code, path=path, symbol=symbol
    )


def _function(root, name: str):
    for node in root.named_children:
        target = undecorated(node)
        if target.type == "function_definition":
            if defined_name(target) == name:
                return target
    return None


def _keys(root, path: str) -> list[SglangContextRule]:
    value = next((v for n, v in top_level_assignments(root) if n == KEYS), None)
    if value is None:
        return [_row("unread", 0, path, code=f"no {KEYS}")]
    node = unparenthesize(value)
    names = [string_value(unparenthesize(c)) for c in node.named_children]
    if node.type not in ("list", "tuple") or any(n is None for n in names):
        return [_row("unread", 0, path, code=code_of(value))]
    return [_row("key", i, path, name=str(n)) for i, n in enumerate(names)]


def _string_arg(node) -> tuple[str, str | None] | None:
    """`X.get("k", d)` -> ("k", code of d or None)."""
    parts = call_parts(unparenthesize(node))
    if parts is None or not (callee(unparenthesize(node)) or "").endswith(".get"):
        return None
    _function_node, args = parts
    if not args or string_value(args[0]) is None:
        return None
    default = code_of(args[1]) if len(args) > 1 else None
    return str(string_value(args[0])), default


def _condition(test, path: str, order: int) -> SglangContextRule | None:
    """`"k" in rope_scaling` or `rope_scaling.get("rope_type", ...) == "llama3"`."""
    found = comparison(unparenthesize(test))
    if found is None:
        return None
    operands, operators = found
    if len(operators) != 1:
        return None
    left, right = operands
    if operators[0] == "in" and string_value(left) is not None:
        return _row("factor_one_when_key", order, path, name=str(string_value(left)))
    if operators[0] == "==" and string_value(right) is not None:
        got = _string_arg(left)
        if got is not None and got[0] == "rope_type":
            return _row("factor_one_when_rope_type", order, path, value=str(string_value(right)))
    return None


def _factor_one(block) -> bool:
    body = statements(block)
    if len(body) != 1:
        return False
    found = assigned_name(body[0])
    return found is not None and number_literal(found[1]) == "1"


def _rope_rules(body, path: str) -> list[SglangContextRule]:
    rows: list[SglangContextRule] = []
    order = 0
    for statement in body:
        found = assigned_name(statement)
        if found is not None:
            name, value = found
            call = callee(unparenthesize(value)) or ""
            if call == "getattr":
                args = call_parts(unparenthesize(value))[1]
                if len(args) >= 2 and string_value(args[1]) is not None:
                    attribute = str(string_value(args[1]))
                    rows.append(_row("scaling_attribute", 0, path, name=attribute))
                    continue
            if name == "text_config":
                continue
        if statement.type == "if_statement":
            clauses, otherwise = if_clauses(statement)
            test, block = clauses[0]
            if code_of(test) == "rope_scaling":  # if rope_scaling: ... else: factor = 1
                for inner in statements(block):
                    rows.extend(_rope_inner(inner, path, order))
                    order += 1
                continue
        if statement.type in ("for_statement", "return_statement") or returned(statement):
            continue
        if found is not None and found[0] == "rope_scaling_factor":
            continue
        rows.append(_row("unread", 100 + order, path, code=code_of(statement)))
        order += 1
    return rows


def _rope_inner(statement, path: str, order: int) -> list[SglangContextRule]:
    found = assigned_name(statement)
    if found is not None and found[0] == "rope_scaling_factor":
        got = _string_arg(found[1])
        if got is not None:
            return [_row("factor_key", 0, path, name=got[0], value=got[1] or "")]
    if statement.type == "if_statement":
        clauses, otherwise = if_clauses(statement)
        if len(clauses) == 1 and otherwise is None and _factor_one(clauses[0][1]):
            row = _condition(clauses[0][0], path, order)
            if row is not None:
                return [row]
    return [_row("unread", 100 + order, path, code=code_of(statement))]


def _default(body, path: str) -> list[SglangContextRule]:
    last = body[-1] if body else None
    value = returned(last) if last is not None else None
    number = number_literal(value) if value is not None else None
    if number is None:
        return [_row("unread", 99, path, code=code_of(last) if last is not None else "no return")]
    return [_row("default", 0, path, value=number)]


def context_length_rules(text: str, path: str) -> list[SglangContextRule]:
    root = parse_python(text, path)
    function = _function(root, FUNCTION)
    if function is None:
        return [_row("unread", 0, path, code=f"no {FUNCTION}")]
    body = body_statements(function)
    return _keys(root, path) + _rope_rules(body, path) + _default(body, path)


def context_length_fact(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(PATHS, anchor=FUNCTION)
    rows = context_length_rules(snapshot.read_text(path), path)
    return FactOutput(tuple(sorted(rows, key=lambda r: (r.kind, r.order))))
