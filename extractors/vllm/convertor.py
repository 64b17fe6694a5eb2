"""vLLM code facts from the model-arch convertor (or the older ModelConfig): MLA model types,
MLA gates, the KV-head alias scan, its fallback, and per-model_type KV-head overrides.

Pure functions: file text in, records out."""

from __future__ import annotations

import libcst as cst

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_cst import (
    ExpressionDescriber,
    base_names,
    class_methods,
    conjuncts,
    statements,
    string_sequence,
    string_value,
    top_level_assignments,
    top_level_classes,
    walk_code,
)
from apron.extractors.rule_terms import EQUALS, negated
from apron.extractors.serving.kv_heads import MLA_METHOD, class_describer, class_method, parsed
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
    return cls is not None and method in class_methods(cls)


def _model_type_membership(
    node: cst.CSTNode, describer: ExpressionDescriber, constants: dict[str, cst.BaseExpression]
) -> tuple[str, list[str]] | None:
    """(scope, model types) when `node` is `<config>.model_type in (...)`, else None."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    if not isinstance(target.operator, cst.In):
        return None
    scope = SCOPE_BY_REF.get(describer.config_ref(node.left) or "")
    if scope is None:
        return None
    comparator = target.comparator
    if isinstance(comparator, cst.Name) and comparator.value in constants:
        comparator = constants[comparator.value]
    values = string_sequence(comparator)
    return (scope, values) if values is not None else None


def mla_model_types(text: str, path: str, class_name: str) -> list[MlaModelType]:
    """Every model_type string `is_deepseek_mla()` compares with, by scope, in source order."""
    module, method = class_method(text, path, class_name, MLA_METHOD)
    describer = class_describer(module, class_name)
    constants = top_level_assignments(module)
    symbol = f"{class_name}.{MLA_METHOD}"
    rows: list[MlaModelType] = []
    for node in walk_code(method):
        found = _model_type_membership(node, describer, constants)
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
    expr: cst.BaseExpression, describer: ExpressionDescriber, constants: dict
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    requires: list[str] = []
    other: list[str] = []
    for part in conjuncts(expr):
        if _model_type_membership(part, describer, constants):
            continue  # the membership test itself is recorded as MlaModelType rows
        if (
            isinstance(part, cst.Comparison)
            and len(part.comparisons) == 1
            and isinstance(part.comparisons[0].operator, cst.IsNot)
            and isinstance(part.comparisons[0].comparator, cst.Name)
            and part.comparisons[0].comparator.value == "None"
            and describer.config_ref(part.left)
        ):
            requires.append(describer.config_ref(part.left))  # type: ignore[arg-type]
        else:
            other.append(describer.describe(part))
    return tuple(requires), tuple(other)


def _gates_of_body(
    body: list[cst.CSTNode],
    scope: str,
    describer: ExpressionDescriber,
    constants: dict,
    path: str,
    symbol: str,
) -> list[MlaGate]:
    def gate(condition: tuple[tuple[str, ...], ...], expr: cst.BaseExpression | None) -> MlaGate:
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

    if len(body) == 1 and isinstance(body[0], cst.Return):
        return [gate((), body[0].value)]
    if len(body) == 1 and isinstance(body[0], cst.If) and isinstance(body[0].orelse, cst.Else):
        branch = body[0]
        then_body = statements(branch.body)
        else_body = statements(branch.orelse.body)
        test = term_of(branch.test, describer)
        if (
            test is not None
            and len(then_body) == 1
            and isinstance(then_body[0], cst.Return)
            and len(else_body) == 1
            and isinstance(else_body[0], cst.Return)
        ):
            return [
                gate((test,), then_body[0].value),
                gate((negated(test),), else_body[0].value),
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
    module, method = class_method(text, path, class_name, MLA_METHOD)
    describer = class_describer(module, class_name)
    constants = top_level_assignments(module)
    symbol = f"{class_name}.{MLA_METHOD}"
    gates: list[MlaGate] = []
    for node in walk_code(method):
        if not isinstance(node, cst.If):
            continue
        found = _model_type_membership(node.test, describer, constants)
        body = statements(node.body)
        if found and found[0] == "main":
            gates += _gates_of_body(body, "main", describer, constants, path, symbol)
        elif condition_of(node.test, describer) == (("model_type", EQUALS, "eagle"),):
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
    classes: dict[str, cst.ClassDef], name: str, method: str, seen: frozenset[str] = frozenset()
) -> str | None:
    """The class (among `classes`) whose `method` `name` would run; None when not found here."""
    if name in seen or name not in classes:
        return None
    if method in class_methods(classes[name]):
        return name
    for base in base_names(classes[name]):
        found = _resolve_method(classes, base, method, seen | {name})
        if found:
            return found
    return None


def convertor_map(text: str, path: str) -> dict[str, str]:
    """MODEL_ARCH_CONFIG_CONVERTORS: model_type -> convertor class name."""
    module = parsed(text, path)
    value = top_level_assignments(module).get(CONVERTOR_MAP)
    if not isinstance(value, cst.Dict):
        raise AnchorError(
            f"{CONVERTOR_MAP} dict not found in {path}", paths=[path], anchor=CONVERTOR_MAP
        )
    mapping: dict[str, str] = {}
    for element in value.elements:
        if isinstance(element, cst.DictElement):
            key = string_value(element.key)
            if key is not None and isinstance(element.value, cst.Name | cst.Attribute):
                mapping[key] = ExpressionDescriber(module).code(element.value).split(".")[-1]
    if not mapping:
        raise AnchorError(f"{CONVERTOR_MAP} in {path} is empty", paths=[path], anchor=CONVERTOR_MAP)
    return mapping


def kv_head_overrides_by_convertor(text: str, path: str, base_class: str) -> list[KvHeadOverride]:
    """Per-model_type overrides of the scan, from the convertor classes (2026 layout)."""
    module = parsed(text, path)
    classes = top_level_classes(module)
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
        method = class_methods(classes[owner])[KV_METHOD]
        symbol = f"{owner}.{KV_METHOD}"
        bodies = kv_rule_bodies(
            statements(method.body), class_describer(module, owner), f"{path}::{symbol}"
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
