"""vLLM rule code -> structured fields: conditions (expressions of apron/expressions.py, the
config read as the converter's hparams), rule values and KV-head rule bodies.

Pure functions over tree-sitter nodes (parsing/python_ts.py). What they cannot structure they
return as None (a term or a value) or as an "opaque" rule with the reason in words; they never
guess."""

from __future__ import annotations

from typing import Any

from tree_sitter import Node

from apron.extractors.parsing.config_reads import truth_when_absent
from apron.extractors.parsing.expressions import (
    config_flag,
    config_has,
    config_value,
    equals,
    one_of,
    python_all,
    python_not,
)
from apron.extractors.parsing.python_describe import (
    ExpressionDescriber,
    int_value,
    string_sequence,
)
from apron.extractors.parsing.python_forms import if_branch
from apron.extractors.parsing.python_ts import (
    arguments,
    assigned_name,
    attribute,
    call_parts,
    conjuncts,
    name_of,
    returned,
    single_comparison,
    statements,
    string_value,
    unparenthesize,
    walk,
)
from apron.extractors.parsing.python_ts import negated as not_of
from apron.extractors.serving.records import BASE_SCAN, CONSTANT, KEY_VALUE

KV_METHOD = "get_total_num_kv_heads"
Value = tuple[str, str, int | None]  # (gives, key, constant) as in KvHeadOverride
Condition = Any  # an expression of apron/expressions.py


def resolved(node: Node, d: ExpressionDescriber) -> Node:
    """`node` with local names replaced by what they were assigned."""
    return d.resolved(node)


def _compared(node: Node, d: ExpressionDescriber) -> Condition | None:
    compared = single_comparison(node)
    if compared is None:
        return None
    left, op, right = compared
    right = resolved(right, d)
    key = string_value(left)
    if key is not None and op in ("in", "not in"):
        base = d.config_ref(right)
        if base is None:
            return None
        has = config_has(f"{base}.{key}" if base else key)
        return has if op == "in" else python_not(has)
    ref = d.config_ref(left)
    if not ref:
        return None
    if op in ("==", "!="):
        value = string_value(right)
        if value is None:
            return None
        return equals(config_value(ref), value, op == "==")
    if op in ("in", "not in"):
        values = string_sequence(right)
        if not values:
            return None
        return one_of(config_value(ref), values, op == "in")
    return None


def term_of(node: Node, d: ExpressionDescriber) -> Condition | None:
    """The condition of one simple test (`hasattr`, a flag, `==`, `in`, their `not`), or None
    when `node` is not one."""
    node = unparenthesize(resolved(node, d))
    inner = not_of(node)
    if inner is not None:
        found = term_of(inner, d)
        return python_not(found) if found is not None else None
    if node.type == "comparison_operator":
        return _compared(node, d)
    args = arguments(node)
    if node.type == "call" and d.callee(node) == "hasattr" and len(args) == 2:
        base = d.config_ref(args[0])
        key = string_value(args[1])
        if base is None or key is None:
            return None
        return config_has(f"{base}.{key}" if base else key)
    ref = d.config_ref(node)
    if ref:
        default = d.getattr_default(node)  # an absent key must read as false, or raise
        absent = truth_when_absent("truthy", d.code(default)) if default is not None else False
        return config_flag(ref) if absent is False else None
    read = attribute(node)
    if read is not None and d.code(read[0]) == "self":
        return config_flag(read[1])  # a ModelConfig property, read like a config flag
    return None


def condition_of(node: Node, d: ExpressionDescriber) -> Condition | None:
    """The condition of a conjunction of simple tests, or None when any part is not one."""
    parts = [term_of(part, d) for part in conjuncts(resolved(node, d))]
    if any(p is None for p in parts):
        return None
    return python_all(parts)


def is_super_call(node: Node | None, method: str) -> bool:
    """`super().<method>(...)`."""
    parts = call_parts(node) if node is not None else None
    called = attribute(parts[0]) if parts is not None else None
    if called is None or called[1] != method:
        return False
    inner = call_parts(called[0])
    return inner is not None and name_of(inner[0]) == "super"


def value_of(node: Node | None, d: ExpressionDescriber) -> Value | None:
    """A constant, a config key read without a default, or the base scan; None otherwise."""
    if node is None:
        return None
    node = resolved(node, d)
    if is_super_call(node, KV_METHOD):
        return (BASE_SCAN, "", None)
    number = int_value(node)
    if number is not None:
        return (CONSTANT, "", number)
    ref = d.config_ref(node)
    if ref and d.getattr_default(node) is None:
        return (KEY_VALUE, ref, None)
    return None


def value_words(node: Node | None, d: ExpressionDescriber) -> str:
    if node is None:
        return "None"
    if is_super_call(node, KV_METHOD):
        return "base scan"
    return d.describe(node)


def rule_fields(kind: str, **given: Any) -> dict[str, Any]:
    """Every structured field of a KvHeadOverride, defaulted; `rule` is rendered by the record."""
    fields: dict[str, Any] = {
        "kind": kind,
        "when": (),
        "gives": "",
        "gives_key": "",
        "gives_constant": None,
        "otherwise": "",
        "otherwise_key": "",
        "otherwise_constant": None,
        "derived_from": "",
        "reason": "",
        "excludes": (),
    }
    for name in ("gives", "otherwise"):
        value = given.pop(name, None)
        if value is not None:
            fields[name], fields[f"{name}_key"], fields[f"{name}_constant"] = value
    fields.update(given)
    return fields


def opaque(reason: str) -> dict[str, Any]:
    return rule_fields("opaque", reason=reason)


def _single_value(last: Node | None, d: ExpressionDescriber) -> dict[str, Any]:
    value = value_of(last, d)
    if value is not None and value[0] == CONSTANT:
        return rule_fields("constant", gives=value)
    if value is not None and value[0] == BASE_SCAN:
        return rule_fields("base", gives=value)
    ref = d.config_ref(resolved(last, d)) if last is not None else None
    if ref:
        default = d.getattr_default(resolved(last, d))  # type: ignore[arg-type]
        if default is None:
            return rule_fields("reads", gives=(KEY_VALUE, ref, None))
        otherwise = value_of(default, d)
        if otherwise is None:
            return opaque(f"reads {ref}, else {d.describe(default)}")
        return rule_fields("reads", gives=(KEY_VALUE, ref, None), otherwise=otherwise)
    return opaque(f"returns {value_words(last, d)}")


def kv_rule_bodies(body: list[Node], d: ExpressionDescriber, where: str) -> list[dict[str, Any]]:
    """Structured fields for the body of a get_total_num_kv_heads override or inline rule.

    One entry per rule, in evaluation order: `if c1: return v1; if c2: return v2; return v3`
    is two rules, "v1 when c1" (no else: the next rule) and "v2 when c2; else v3"."""
    real = []
    for node in body:
        assigned = assigned_name(node)
        if assigned is not None:
            d.env[assigned[0]] = assigned[1]
        elif node.type != "assert_statement":
            real.append(node)
    for node in real:
        if node.type == "for_statement":
            loop = " ".join(d.code(node).split())
            return [
                rule_fields(
                    "derived",
                    derived_from=d.config_ref(node.child_by_field_name("right")) or "",
                    reason=f"computed in a loop: {loop}",
                )
            ]
    if not real or real[-1].type != "return_statement":
        return [opaque(f"see {where}")]
    branches = []
    for node in real[:-1]:
        branch = if_branch(node)
        if branch is None or not branch.alone:
            return [opaque(f"see {where}")]
        inner = statements(branch.body)
        if len(inner) != 1 or inner[0].type != "return_statement":
            return [opaque(f"see {where}")]
        branches.append((branch.test, returned(inner[0])))
    last = returned(real[-1])
    if not branches:
        return [_single_value(last, d)]
    if len(branches) == 1:
        test, value = branches[0]
        ref = d.config_ref(value) if value is not None else None
        otherwise = value_of(last, d)
        if ref and otherwise and condition_of(test, d) == config_has(ref):
            return [rule_fields("reads", gives=(KEY_VALUE, ref, None), otherwise=otherwise)]
    rules = []
    for position, (test, value) in enumerate(branches):
        when, gives = condition_of(test, d), value_of(value, d)
        otherwise = value_of(last, d) if position == len(branches) - 1 else None
        if (
            when is None
            or when == ()
            or gives is None
            or (position == len(branches) - 1 and otherwise is None)
        ):
            parts = [f"{value_words(v, d)} when {d.describe(t)}" for t, v in branches]
            return [opaque("; ".join(parts) + f"; else {value_words(last, d)}")]
        rules.append(rule_fields("conditional", when=when, gives=gives, otherwise=otherwise))
    return rules


def mentions_model_type(node: Node, d: ExpressionDescriber) -> bool:
    node = resolved(node, d)
    return any(d.config_ref(n) == "model_type" for n in walk(node))


def star_rule(test: Node, body: list[Node], d: ExpressionDescriber, where: str) -> dict[str, Any]:
    """Fields of an inline rule that applies to every model type (`if <test>: return <value>`).

    A negated conjunction that tests model_type (`not (model_type in [...] and flag)`) becomes
    `excludes`; the other conjuncts are the rule's condition."""
    if len(body) != 1 or body[0].type != "return_statement":
        return opaque(f"see {where}")
    value = returned(body[0])
    parts = conjuncts(test)
    excluded = [
        c
        for c in parts
        if not_of(c) is not None and term_of(c, d) is None and mentions_model_type(not_of(c), d)  # type: ignore[arg-type]
    ]
    excluded_ids = {c.id for c in excluded}
    kept = [c for c in parts if c.id not in excluded_ids]
    words = f"{value_words(value, d)} when " + (
        " and ".join(d.describe(c) for c in kept) or "always"
    )
    parts_read = [term_of(c, d) for c in kept]
    excludes = condition_of(not_of(excluded[0]), d) if len(excluded) == 1 else ()  # type: ignore[arg-type]
    gives = value_of(value, d)
    unread_exclusion = excluded and (excludes is None or excludes == ())
    if any(p is None for p in parts_read) or gives is None or unread_exclusion or len(excluded) > 1:
        return opaque(words)
    when = python_all(parts_read)
    if when == ():
        if gives[0] != CONSTANT:
            return opaque(words)
        return rule_fields("constant", gives=gives, excludes=excludes)
    return rule_fields("conditional", when=when, gives=gives, excludes=excludes)
