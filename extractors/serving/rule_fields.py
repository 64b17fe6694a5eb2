"""vLLM rule code -> structured fields: condition terms, rule values and KV-head rule bodies.

Pure functions over libcst nodes. What they cannot structure they return as None (a term or a
value) or as an "opaque" rule with the reason in words; they never guess."""

from __future__ import annotations

from typing import Any

import libcst as cst

from apron.extractors.parsing.config_reads import truth_when_absent
from apron.extractors.parsing.python_cst import (
    ExpressionDescriber,
    conjuncts,
    int_value,
    statements,
    string_sequence,
    string_value,
    walk_code,
)
from apron.extractors.rule_terms import (
    EQUALS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    PRESENT,
    TRUTHY,
    Term,
    negated,
)
from apron.extractors.serving.records import BASE_SCAN, CONSTANT, KEY_VALUE

KV_METHOD = "get_total_num_kv_heads"
Value = tuple[str, str, int | None]  # (gives, key, constant) as in KvHeadOverride


def resolved(node: cst.BaseExpression, d: ExpressionDescriber) -> cst.BaseExpression:
    """`node` with local names replaced by what they were assigned."""
    seen: set[str] = set()
    while isinstance(node, cst.Name) and node.value in d.env and node.value not in seen:
        seen.add(node.value)
        node = d.env[node.value]
    return node


def _reads_false_when_absent(default: cst.BaseExpression | None, d: ExpressionDescriber) -> bool:
    """A getattr default under which an absent key reads as false (or no default at all)."""
    return default is None or truth_when_absent("truthy", d.code(default)) is False


def _compared(node: cst.BaseExpression, d: ExpressionDescriber) -> Term | None:
    if len(node.comparisons) != 1:  # type: ignore[attr-defined]
        return None
    target = node.comparisons[0]  # type: ignore[attr-defined]
    left, op = node.left, target.operator  # type: ignore[attr-defined]
    right = resolved(target.comparator, d)
    key = string_value(left)
    if key is not None and isinstance(op, cst.In | cst.NotIn):
        base = d.config_ref(right)
        if base is None:
            return None
        term: Term = (f"{base}.{key}" if base else key, PRESENT)
        return term if isinstance(op, cst.In) else negated(term)
    ref = d.config_ref(left)
    if not ref:
        return None
    if isinstance(op, cst.Equal | cst.NotEqual):
        value = string_value(right)
        if value is None:
            return None
        return (ref, EQUALS if isinstance(op, cst.Equal) else NOT_EQUALS, value)
    if isinstance(op, cst.In | cst.NotIn):
        values = string_sequence(right)
        if not values:
            return None
        return (ref, IN if isinstance(op, cst.In) else NOT_IN, *values)
    return None


def term_of(node: cst.BaseExpression, d: ExpressionDescriber) -> Term | None:
    """One condition term for `node`, or None when it is not a single simple test."""
    node = resolved(node, d)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = term_of(node.expression, d)
        return negated(inner) if inner else None
    if isinstance(node, cst.Comparison):
        return _compared(node, d)
    if isinstance(node, cst.Call) and d.code(node.func) == "hasattr" and len(node.args) == 2:
        base = d.config_ref(node.args[0].value)
        key = string_value(node.args[1].value)
        if base is None or key is None:
            return None
        return (f"{base}.{key}" if base else key, PRESENT)
    ref = d.config_ref(node)
    if ref:
        return (ref, TRUTHY) if _reads_false_when_absent(d.getattr_default(node), d) else None
    if isinstance(node, cst.Attribute) and d.code(node.value) == "self":
        return (node.attr.value, TRUTHY)  # a ModelConfig property, read like a config flag
    return None


def condition_of(node: cst.BaseExpression, d: ExpressionDescriber) -> tuple[Term, ...] | None:
    """The terms of a conjunction, or None when any part is not a simple term."""
    terms = [term_of(part, d) for part in conjuncts(resolved(node, d))]
    if any(t is None for t in terms):
        return None
    return tuple(terms)  # type: ignore[arg-type]


def is_super_call(node: cst.BaseExpression | None, method: str) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == method
        and isinstance(node.func.value, cst.Call)
        and isinstance(node.func.value.func, cst.Name)
        and node.func.value.func.value == "super"
    )


def value_of(node: cst.BaseExpression | None, d: ExpressionDescriber) -> Value | None:
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


def value_words(node: cst.BaseExpression | None, d: ExpressionDescriber) -> str:
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


def _single_value(last: cst.BaseExpression | None, d: ExpressionDescriber) -> dict[str, Any]:
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


def kv_rule_bodies(
    body: list[cst.CSTNode], d: ExpressionDescriber, where: str
) -> list[dict[str, Any]]:
    """Structured fields for the body of a get_total_num_kv_heads override or inline rule.

    One entry per rule, in evaluation order: `if c1: return v1; if c2: return v2; return v3`
    is two rules, "v1 when c1" (no else: the next rule) and "v2 when c2; else v3"."""
    real = []
    for node in body:
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
        ):
            d.env[node.targets[0].target.value] = node.value
        elif not isinstance(node, cst.Assert):
            real.append(node)
    for node in real:
        if isinstance(node, cst.For):
            loop = " ".join(d.code(node).split())
            return [
                rule_fields(
                    "derived",
                    derived_from=d.config_ref(node.iter) or "",
                    reason=f"computed in a loop: {loop}",
                )
            ]
    if not real or not isinstance(real[-1], cst.Return):
        return [opaque(f"see {where}")]
    branches = []
    for node in real[:-1]:
        if not isinstance(node, cst.If) or node.orelse is not None:
            return [opaque(f"see {where}")]
        inner = statements(node.body)
        if len(inner) != 1 or not isinstance(inner[0], cst.Return):
            return [opaque(f"see {where}")]
        branches.append((node.test, inner[0].value))
    last = real[-1].value
    if not branches:
        return [_single_value(last, d)]
    if len(branches) == 1:
        test, value = branches[0]
        ref = d.config_ref(value) if value is not None else None
        otherwise = value_of(last, d)
        if ref and otherwise and condition_of(test, d) == ((ref, PRESENT),):
            return [rule_fields("reads", gives=(KEY_VALUE, ref, None), otherwise=otherwise)]
    rules = []
    for position, (test, value) in enumerate(branches):
        when, gives = condition_of(test, d), value_of(value, d)
        otherwise = value_of(last, d) if position == len(branches) - 1 else None
        if not when or gives is None or (position == len(branches) - 1 and otherwise is None):
            parts = [f"{value_words(v, d)} when {d.describe(t)}" for t, v in branches]
            return [opaque("; ".join(parts) + f"; else {value_words(last, d)}")]
        rules.append(rule_fields("conditional", when=when, gives=gives, otherwise=otherwise))
    return rules


def mentions_model_type(node: cst.BaseExpression, d: ExpressionDescriber) -> bool:
    node = resolved(node, d)
    return any(
        d.config_ref(n) == "model_type"
        for n in walk_code(node)
        if isinstance(n, cst.BaseExpression)
    )


def star_rule(
    test: cst.BaseExpression, body: list[cst.CSTNode], d: ExpressionDescriber, where: str
) -> dict[str, Any]:
    """Fields of an inline rule that applies to every model type (`if <test>: return <value>`).

    A negated conjunction that tests model_type (`not (model_type in [...] and flag)`) becomes
    `excludes`; the other conjuncts are the rule's condition."""
    if len(body) != 1 or not isinstance(body[0], cst.Return):
        return opaque(f"see {where}")
    value = body[0].value
    parts = conjuncts(test)
    excluded = [
        c
        for c in parts
        if isinstance(c, cst.UnaryOperation)
        and isinstance(c.operator, cst.Not)
        and term_of(c, d) is None
        and mentions_model_type(c.expression, d)
    ]
    kept = [c for c in parts if c not in excluded]
    words = f"{value_words(value, d)} when " + (
        " and ".join(d.describe(c) for c in kept) or "always"
    )
    when = tuple(term_of(c, d) for c in kept)
    excludes = condition_of(excluded[0].expression, d) if len(excluded) == 1 else ()
    gives = value_of(value, d)
    if None in when or gives is None or (excluded and not excludes) or len(excluded) > 1:
        return opaque(words)
    if not when:
        if gives[0] != CONSTANT:
            return opaque(words)
        return rule_fields("constant", gives=gives, excludes=excludes)
    return rule_fields("conditional", when=when, gives=gives, excludes=excludes)
