"""vLLM code facts from the model-arch convertor (or the older ModelConfig): MLA model types,
MLA gates, the KV-head alias scan, its fallback, and per-model_type KV-head overrides.

Pure functions: file text in, records out."""

from __future__ import annotations

import re
from functools import lru_cache

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
    unparenthesized,
    walk_code,
)
from apron.extractors.parsing.python_ts import node_text, parse_tree
from apron.extractors.rule_terms import EQUALS, negated
from apron.extractors.vllm.cst_outline import parse_outline
from apron.extractors.vllm.records import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
    MlaGate,
    MlaModelType,
)
from apron.extractors.vllm.rule_fields import (
    KV_METHOD,
    condition_of,
    kv_rule_bodies,
    opaque,
    star_rule,
    term_of,
)

MLA_METHOD = "is_deepseek_mla"
CONVERTOR_MAP = "MODEL_ARCH_CONFIG_CONVERTORS"
SCOPE_BY_REF = {"model_type": "main", "model.model_type": "eagle_inner"}


# `self.<name>`, also split by blanks, line joins or comments inside brackets: how a method of
# the class is named where the describer follows it (`self.<name>()`, `self.<name>` as a factory)
SELF_MEMBER = re.compile(r"\bself(?:\s|\\|#[^\n]*)*\.(?:\s|\\|#[^\n]*)*(\w+)")


def _undecorated(statement):
    if statement.type == "decorated_definition":
        return statement.child_by_field_name("definition") or statement
    return statement


@lru_cache(maxsize=16)
def read_methods(text: str) -> frozenset[str]:
    """`C.m` for every method these readers may read: in each top-level class C, is_deepseek_mla,
    get_total_num_kv_heads and the methods of C they reach through `self.<name>`, transitively
    (the describer looks `self.<name>` up among the class's own methods, never elsewhere)."""
    methods: dict[str, dict[str, list[str]]] = {}
    for statement in parse_tree(text).named_children:
        cls = _undecorated(statement)
        name = cls.child_by_field_name("name")
        body = cls.child_by_field_name("body")
        if cls.type != "class_definition" or name is None or body is None:
            continue
        members = methods.setdefault(node_text(name), {})
        for member in body.named_children:
            method = _undecorated(member)
            method_name = method.child_by_field_name("name")
            if method.type == "function_definition" and method_name is not None:
                members.setdefault(node_text(method_name), []).append(node_text(member))
    wanted = set()
    for class_name, members in methods.items():
        todo = [MLA_METHOD, KV_METHOD]
        while todo:
            method = todo.pop()
            if f"{class_name}.{method}" in wanted or method not in members:
                continue
            wanted.add(f"{class_name}.{method}")
            todo += [m for code in members[method] for m in SELF_MEMBER.findall(code)]
    return frozenset(wanted)


@lru_cache(maxsize=16)
def _parsed(text: str, path: str) -> cst.Module:
    """The module as these readers need it: the outline (cst_outline) with the module-level
    statements that can assign (their text holds `=`), every class header and the methods
    `read_methods` names."""
    wanted = read_methods(text)
    return parse_outline(
        text,
        path,
        lambda qualname, _code: qualname in wanted,
        module_statements=lambda code: b"=" in code,
    )


def parsed(text: str, path: str) -> cst.Module:
    """The outline these readers parse (shared: tp_rules reads a base-class getter from it)."""
    return _parsed(text, path)


def _method(
    text: str, path: str, class_name: str, method: str
) -> tuple[cst.Module, cst.FunctionDef]:
    module = _parsed(text, path)
    cls = top_level_classes(module).get(class_name)
    if cls is None:
        raise AnchorError(
            f"class {class_name} not found in {path}", paths=[path], anchor=f"{class_name}.{method}"
        )
    found = class_methods(cls).get(method)
    if found is None:
        raise AnchorError(
            f"method {class_name}.{method} not found in {path}",
            paths=[path],
            anchor=f"{class_name}.{method}",
        )
    return module, found


def defines_method(text: str, path: str, class_name: str, method: str) -> bool:
    """Whether `class_name.method` is defined in this file (used to pick the layout)."""
    cls = top_level_classes(_parsed(text, path)).get(class_name)
    return cls is not None and method in class_methods(cls)


def _describer(module: cst.Module, class_name: str) -> ExpressionDescriber:
    cls = top_level_classes(module).get(class_name)
    return ExpressionDescriber(module, methods=class_methods(cls) if cls else {})


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
    module, method = _method(text, path, class_name, MLA_METHOD)
    describer = _describer(module, class_name)
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
    module, method = _method(text, path, class_name, MLA_METHOD)
    describer = _describer(module, class_name)
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


def _alias_list(method: cst.FunctionDef) -> cst.BaseExpression | None:
    """The string list the scan iterates: a local list used as a `for` iterable or passed to a
    call (`getattr_iter(config, attributes, ...)`), not one used in a membership test."""
    lists: dict[str, cst.BaseExpression] = {}
    for node in statements(method.body):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and string_sequence(node.value) is not None
        ):
            lists[node.targets[0].target.value] = node.value
    for node in walk_code(method):
        if (
            isinstance(node, cst.For)
            and isinstance(node.iter, cst.Name)
            and node.iter.value in lists
        ):
            return lists[node.iter.value]
        if isinstance(node, cst.Call):
            for arg in node.args:
                if isinstance(arg.value, cst.Name) and arg.value.value in lists:
                    return lists[arg.value.value]
    return None


def kv_head_aliases(text: str, path: str, class_name: str) -> list[KvHeadAlias]:
    """The ordered config keys of the scan; the first present key wins."""
    _, method = _method(text, path, class_name, KV_METHOD)
    symbol = f"{class_name}.{KV_METHOD}"
    alias_list = _alias_list(method)
    keys = string_sequence(alias_list) if alias_list is not None else None
    if not keys:
        raise AnchorError(
            f"{symbol} in {path} has no list of config keys to scan",
            paths=[path],
            anchor=f"{symbol}: attributes = [...]",
        )
    return [KvHeadAlias(position=i, key=k, path=path, symbol=symbol) for i, k in enumerate(keys)]


def kv_head_fallback(text: str, path: str, class_name: str) -> list[KvHeadFallback]:
    """What the scan returns when no alias key is present."""
    module, method = _method(text, path, class_name, KV_METHOD)
    describer = _describer(module, class_name)
    symbol = f"{class_name}.{KV_METHOD}"
    fallback: cst.BaseExpression | None = None
    for node in walk_code(method):
        if isinstance(node, cst.Arg) and node.keyword and node.keyword.value == "default_factory":
            fallback = node.value
    body = statements(method.body)
    for node in body:
        if isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Name):
            describer.env[node.targets[0].target.value] = node.value
    if fallback is None and body and isinstance(body[-1], cst.Return) and body[-1].value:
        fallback = body[-1].value
    if fallback is None:
        raise AnchorError(
            f"{symbol} in {path} has no fallback after the alias scan",
            paths=[path],
            anchor=f"{symbol}: final return / default_factory",
        )
    fallback = unparenthesized(fallback)
    if isinstance(fallback, cst.Name) and fallback.value in describer.env:
        fallback = unparenthesized(describer.env[fallback.value])
    if isinstance(fallback, cst.Attribute) and describer.code(fallback.value) == "self":
        words = describer.describe(cst.Call(func=fallback))  # a bound method used as a factory
        key = _method_return_key(describer, fallback.attr.value)
    else:
        words = describer.describe(fallback)
        key = describer.config_ref(fallback) or ""
    return [
        KvHeadFallback(
            fallback=words,
            fallback_key=key,
            expression=describer.code(fallback),
            path=path,
            symbol=symbol,
        )
    ]


def _method_return_key(describer: ExpressionDescriber, name: str) -> str:
    """The config key a one-line method returns (`return getattr(cfg, "k", 0)`); "" otherwise."""
    method = describer.methods.get(name)
    body = statements(method.body) if method is not None else []
    if len(body) == 1 and isinstance(body[0], cst.Return) and body[0].value is not None:
        return describer.config_ref(body[0].value) or ""
    return ""


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
    module = _parsed(text, path)
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
    module = _parsed(text, path)
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
            statements(method.body), _describer(module, owner), f"{path}::{symbol}"
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


def _model_types_tested(test: cst.BaseExpression, d: ExpressionDescriber) -> list[str] | None:
    """[types] when `test` is `model_type == "x"` or `model_type in [...]`, else None."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    if d.config_ref(test.left) != "model_type":
        return None
    op = test.comparisons[0].operator
    right = test.comparisons[0].comparator
    if isinstance(right, cst.Name) and right.value in d.env:
        right = d.env[right.value]
    if isinstance(op, cst.Equal) and string_value(right) is not None:
        return [string_value(right)]  # type: ignore[list-item]
    if isinstance(op, cst.In):
        return string_sequence(right)
    return None


def kv_head_overrides_inline(text: str, path: str, class_name: str) -> list[KvHeadOverride]:
    """The special cases at the top of ModelConfig.get_total_num_kv_heads (2025 layouts)."""
    module, method = _method(text, path, class_name, KV_METHOD)
    d = _describer(module, class_name)
    symbol = f"{class_name}.{KV_METHOD}"
    alias_list = _alias_list(method)
    rows: list[KvHeadOverride] = []
    order = 0
    for node in statements(method.body):
        if isinstance(node, cst.Assign) and node.value is alias_list:
            break
        if isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Name):
            d.env[node.targets[0].target.value] = node.value
            continue
        if not isinstance(node, cst.If):
            continue
        model_types = _model_types_tested(node.test, d)
        if model_types:
            bodies = kv_rule_bodies(statements(node.body), d, f"{path}::{symbol}")
            for model_type in model_types:
                rows += [
                    KvHeadOverride(
                        model_type=model_type,
                        rule_order=order + offset,
                        convertor_class="",
                        **fields,
                        path=path,
                        symbol=symbol,
                    )
                    for offset, fields in enumerate(bodies)
                ]
            order += len(bodies)
            continue
        fields = star_rule(node.test, statements(node.body), d, f"{path}::{symbol}")
        rows.append(
            KvHeadOverride(
                model_type="*",
                rule_order=order,
                convertor_class="",
                **fields,
                path=path,
                symbol=symbol,
            )
        )
        order += 1
    return rows
