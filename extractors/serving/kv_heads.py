"""The KV-head count as a ModelConfig-shaped class computes it, read with libcst (the single
reader of these rules): the config keys `get_total_num_kv_heads` scans, in order, what it returns
when none is present, and the per-model_type overrides written inline in it. vLLM's model-arch
convertor (and its older ModelConfig) and SGLang's ModelConfig state them alike.

Pure functions: file text in, records out."""

from __future__ import annotations

import re
from functools import lru_cache

import libcst as cst

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_cst import (
    ExpressionDescriber,
    class_methods,
    statements,
    string_sequence,
    string_value,
    top_level_classes,
    unparenthesized,
    walk_code,
)
from apron.extractors.parsing.python_outline import parse_outline
from apron.extractors.parsing.python_ts import node_text, parse_tree, undecorated
from apron.extractors.serving.records import KvHeadAlias, KvHeadFallback, KvHeadOverride
from apron.extractors.serving.rule_fields import (
    KV_METHOD,
    kv_rule_bodies,
    star_rule,
)

MLA_METHOD = "is_deepseek_mla"


# `self.<name>`, also split by blanks, line joins or comments inside brackets: how a method of
# the class is named where the describer follows it (`self.<name>()`, `self.<name>` as a factory)
SELF_MEMBER = re.compile(r"\bself(?:\s|\\|#[^\n]*)*\.(?:\s|\\|#[^\n]*)*(\w+)")


@lru_cache(maxsize=16)
def read_methods(text: str) -> frozenset[str]:
    """`C.m` for every method these readers may read: in each top-level class C, is_deepseek_mla,
    get_total_num_kv_heads and the methods of C they reach through `self.<name>`, transitively
    (the describer looks `self.<name>` up among the class's own methods, never elsewhere)."""
    methods: dict[str, dict[str, list[str]]] = {}
    for statement in parse_tree(text).named_children:
        cls = undecorated(statement)
        name = cls.child_by_field_name("name")
        body = cls.child_by_field_name("body")
        if cls.type != "class_definition" or name is None or body is None:
            continue
        members = methods.setdefault(node_text(name), {})
        for member in body.named_children:
            method = undecorated(member)
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
def parsed(text: str, path: str) -> cst.Module:
    """The module as these readers (and vLLM's MLA and convertor readers, and tp_rules' base-class
    getter) need it: the outline (parsing/python_outline) with the module-level
    statements that can assign (their text holds `=`), every class header and the methods
    `read_methods` names."""
    wanted = read_methods(text)
    return parse_outline(
        text,
        path,
        lambda qualname, _code: qualname in wanted,
        module_statements=lambda code: b"=" in code,
    )


def class_method(
    text: str, path: str, class_name: str, method: str
) -> tuple[cst.Module, cst.FunctionDef]:
    module = parsed(text, path)
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


def class_describer(module: cst.Module, class_name: str) -> ExpressionDescriber:
    cls = top_level_classes(module).get(class_name)
    return ExpressionDescriber(module, methods=class_methods(cls) if cls else {})


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
    _, method = class_method(text, path, class_name, KV_METHOD)
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
    module, method = class_method(text, path, class_name, KV_METHOD)
    describer = class_describer(module, class_name)
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
    module, method = class_method(text, path, class_name, KV_METHOD)
    d = class_describer(module, class_name)
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
