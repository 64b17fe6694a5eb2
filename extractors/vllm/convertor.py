"""vLLM code facts from the model-arch convertor (or the older ModelConfig): MLA model types,
MLA gates, the KV-head alias scan, its fallback, and per-model_type KV-head overrides.

Pure functions: file text in, records out."""

from __future__ import annotations

from typing import Any

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.expressions import config_value, equals, python_not
from apron.extractors.parsing.python_classes import base_names
from apron.extractors.parsing.python_describe import ExpressionDescriber, string_sequence
from apron.extractors.parsing.python_forms import body_statements, if_branch
from apron.extractors.parsing.python_ts import (
    code_of,
    conjuncts,
    methods_of,
    name_of,
    returned,
    single_comparison,
    statements,
    string_value,
    top_level_assignments,
    top_level_classes,
    unparenthesize,
    walk,
)
from apron.extractors.serving.kv_heads import (
    MLA_METHOD,
    class_describer,
    class_method,
    parsed,
)
from apron.extractors.serving.records import KvHeadOverride
from apron.extractors.serving.rule_fields import (
    KV_METHOD,
    condition_of,
    kv_rule_bodies,
    opaque,
    term_of,
)
from apron.extractors.vllm.records import MlaGate, MlaModelType

CONVERTOR_MAP = "MODEL_ARCH_CONFIG_CONVERTORS"
SCOPE_BY_REF = {"model_type": "main", "model.model_type": "eagle_inner"}


def defines_method(text: str, path: str, class_name: str, method: str) -> bool:
    """Whether `class_name.method` is defined in this file (used to pick the layout)."""
    cls = top_level_classes(parsed(text, path)).get(class_name)
    return cls is not None and method in methods_of(cls)


def _model_type_membership(
    node: Node, describer: ExpressionDescriber, constants: dict[str, Node]
) -> tuple[str, list[str]] | None:
    """(scope, model types) when `node` is `<config>.model_type in (...)`, else None."""
    compared = single_comparison(node)
    if compared is None or compared[1] != "in":
        return None
    scope = SCOPE_BY_REF.get(describer.config_ref(compared[0]) or "")
    if scope is None:
        return None
    comparator = compared[2]
    if name_of(comparator) in constants:
        comparator = constants[name_of(comparator)]  # type: ignore[index]
    values = string_sequence(comparator)
    return (scope, values) if values is not None else None


def _constants(root: Node) -> dict[str, Node]:
    return dict(top_level_assignments(root))


def mla_model_types(text: str, path: str, class_name: str) -> list[MlaModelType]:
    """Every model_type string `is_deepseek_mla()` compares with, by scope, in source order."""
    root, method = class_method(text, path, class_name, MLA_METHOD)
    describer = class_describer(root, class_name)
    constants = _constants(root)
    symbol = f"{class_name}.{MLA_METHOD}"
    rows: list[MlaModelType] = []
    for node in walk(method):
        found = (
            _model_type_membership(node, describer, constants)
            if node.type == "comparison_operator"
            else None
        )
        if found:
            scope, values = found
            rows += [
                MlaModelType(scope=scope, model_type=v, path=path, symbol=symbol) for v in values
            ]
    if not any(r.scope == "main" for r in rows):
        raise AnchorError(
            f"{symbol} in {path} has no `model_type in (...)` list",
            paths=[path],
            anchor=f"{symbol}: model_type tuple",
        )
    return rows


def _split_requirements(
    expr: Node, describer: ExpressionDescriber, constants: dict
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    requires: list[str] = []
    other: list[str] = []
    for part in conjuncts(expr):
        if _model_type_membership(part, describer, constants):
            continue  # the membership test itself is recorded as MlaModelType rows
        compared = single_comparison(part)
        if (
            compared is not None
            and compared[1] == "is not"
            and unparenthesize(compared[2]).type == "none"
            and describer.config_ref(compared[0])
        ):
            requires.append(describer.config_ref(compared[0]))  # type: ignore[arg-type]
        else:
            other.append(describer.describe(part))
    return tuple(requires), tuple(other)


def _gates_of_body(
    body: list[Node],
    scope: str,
    describer: ExpressionDescriber,
    constants: dict,
    path: str,
    symbol: str,
) -> list[MlaGate]:
    def gate(condition: Any, expr: Node | None) -> MlaGate:
        if expr is None:
            requires, other = (), ("returns None",)
        else:
            requires, other = _split_requirements(expr, describer, constants)
        return MlaGate(
            scope=scope,
            condition=condition,
            requires_non_null=requires,
            other_conditions=other,
            path=path,
            symbol=symbol,
        )

    if len(body) == 1 and body[0].type == "return_statement":
        return [gate((), returned(body[0]))]
    branch = if_branch(body[0]) if len(body) == 1 else None
    if branch is not None and branch.otherwise is not None:
        then_body = statements(branch.body)
        else_body = statements(branch.otherwise)
        test = term_of(branch.test, describer)
        if (
            test is not None
            and len(then_body) == 1
            and then_body[0].type == "return_statement"
            and len(else_body) == 1
            and else_body[0].type == "return_statement"
        ):
            return [
                gate(test, returned(then_body[0])),
                gate(python_not(test), returned(else_body[0])),
            ]
    code = " ".join(describer.code(s) for s in body)
    return [
        MlaGate(
            scope=scope,
            condition=(),
            requires_non_null=(),
            other_conditions=(f"opaque: {code}",),
            path=path,
            symbol=symbol,
        )
    ]


def mla_gates(text: str, path: str, class_name: str) -> list[MlaGate]:
    """The conditions beyond model_type membership: per scope, when they apply and what they need."""
    root, method = class_method(text, path, class_name, MLA_METHOD)
    describer = class_describer(root, class_name)
    constants = _constants(root)
    symbol = f"{class_name}.{MLA_METHOD}"
    gates: list[MlaGate] = []
    for node in walk(method):
        branch = if_branch(node)
        if branch is None:
            continue
        found = _model_type_membership(branch.test, describer, constants)
        body = statements(branch.body)
        if found and found[0] == "main":
            gates += _gates_of_body(body, "main", describer, constants, path, symbol)
        elif condition_of(branch.test, describer) == equals(config_value("model_type"), "eagle"):
            gates += _gates_of_body(body, "eagle_inner", describer, constants, path, symbol)
    if not gates:
        raise AnchorError(
            f"{symbol} in {path} has no recognisable MLA branch",
            paths=[path],
            anchor=f"{symbol}: if model_type in (...)",
        )
    return gates


# ------------------------------------------------------------------ KV heads


def _resolve_method(
    classes: dict[str, Node], name: str, method: str, seen: frozenset[str] = frozenset()
) -> str | None:
    """The class (among `classes`) whose `method` `name` would run; None when not found here."""
    if name in seen or name not in classes:
        return None
    if method in methods_of(classes[name]):
        return name
    for base in base_names(classes[name]):
        found = _resolve_method(classes, base.rsplit(".", 1)[-1], method, seen | {name})
        if found:
            return found
    return None


def convertor_map(text: str, path: str) -> dict[str, str]:
    """MODEL_ARCH_CONFIG_CONVERTORS: model_type -> convertor class name."""
    value = _constants(parsed(text, path)).get(CONVERTOR_MAP)
    if value is None or unparenthesize(value).type != "dictionary":
        raise AnchorError(
            f"{CONVERTOR_MAP} dict not found in {path}", paths=[path], anchor=CONVERTOR_MAP
        )
    mapping: dict[str, str] = {}
    for element in unparenthesize(value).named_children:
        if element.type != "pair":
            continue
        key = string_value(element.child_by_field_name("key"))
        named = unparenthesize(element.child_by_field_name("value"))
        if key is not None and named.type in ("identifier", "attribute"):
            mapping[key] = code_of(named).split(".")[-1]
    if not mapping:
        raise AnchorError(f"{CONVERTOR_MAP} in {path} is empty", paths=[path], anchor=CONVERTOR_MAP)
    return mapping


def kv_head_overrides_by_convertor(text: str, path: str, base_class: str) -> list[KvHeadOverride]:
    """Per-model_type overrides of the scan, from the convertor classes (2026 layout)."""
    root = parsed(text, path)
    classes = top_level_classes(root)
    rows: list[KvHeadOverride] = []
    for model_type, class_name in convertor_map(text, path).items():
        owner = _resolve_method(classes, class_name, KV_METHOD)
        if owner == base_class:
            continue  # inherits the plain scan
        if owner is None:
            rows.append(
                KvHeadOverride(
                    model_type=model_type,
                    rule_order=0,
                    convertor_class=class_name,
                    **opaque(f"{class_name} is not defined in this file"),
                    path=path,
                    symbol=f"{class_name}.{KV_METHOD}",
                )
            )
            continue
        method = methods_of(classes[owner])[KV_METHOD]
        symbol = f"{owner}.{KV_METHOD}"
        bodies = kv_rule_bodies(
            body_statements(method), class_describer(root, owner), f"{path}::{symbol}"
        )
        rows += [
            KvHeadOverride(
                model_type=model_type,
                rule_order=order,
                convertor_class=class_name,
                **fields,
                path=path,
                symbol=symbol,
            )
            for order, fields in enumerate(bodies)
        ]
    return rows
