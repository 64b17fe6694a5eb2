"""The KV-head count as a ModelConfig-shaped class computes it: the config keys
`get_total_num_kv_heads` scans, in order, what it returns when none is present, and the
per-model_type overrides written inline in it. vLLM's model-arch convertor (and its older
ModelConfig) and SGLang's ModelConfig state them alike.

Pure functions: file text in, records out (read from tree-sitter's tree, parsing/python_ts.py)."""

from __future__ import annotations

from functools import lru_cache

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_describe import ExpressionDescriber, string_sequence
from apron.extractors.parsing.python_forms import body_statements, if_branch
from apron.extractors.parsing.python_ts import (
    arguments,
    assigned_name,
    attribute,
    code_of,
    keywords,
    methods_of,
    name_of,
    parse_python,
    returned,
    single_comparison,
    statements,
    string_value,
    top_level_classes,
    unparenthesize,
    walk,
)
from apron.extractors.serving.records import KvHeadAlias, KvHeadFallback, KvHeadOverride
from apron.extractors.serving.rule_fields import (
    KV_METHOD,
    kv_rule_bodies,
    star_rule,
)

MLA_METHOD = "is_deepseek_mla"


@lru_cache(maxsize=16)
def parsed(text: str, path: str) -> Node:
    """The module's tree, checked once per text (parse_python: a file with syntax errors, or
    nested too deeply, is a ParseError naming the file and line)."""
    return parse_python(text, path)


def class_method(text: str, path: str, class_name: str, method: str) -> tuple[Node, Node]:
    """(module, method) of `class_name.method`; a missing class or method is an AnchorError."""
    root = parsed(text, path)
    cls = top_level_classes(root).get(class_name)
    if cls is None:
        raise AnchorError(
            f"class {class_name} not found in {path}", paths=[path], anchor=f"{class_name}.{method}"
        )
    found = methods_of(cls).get(method)
    if found is None:
        raise AnchorError(
            f"method {class_name}.{method} not found in {path}",
            paths=[path],
            anchor=f"{class_name}.{method}",
        )
    return root, found


def class_describer(root: Node, class_name: str) -> ExpressionDescriber:
    cls = top_level_classes(root).get(class_name)
    return ExpressionDescriber(methods=methods_of(cls) if cls is not None else {})


def _alias_list(method: Node) -> Node | None:
    """The string list the scan iterates: a local list used as a `for` iterable or passed to a
    call (`getattr_iter(config, attributes, ...)`), not one used in a membership test."""
    lists: dict[str, Node] = {}
    for node in body_statements(method):
        assigned = assigned_name(node)
        if assigned is not None and string_sequence(assigned[1]) is not None:
            lists[assigned[0]] = assigned[1]
    for node in walk(method):
        if node.type == "for_statement":
            iterated = name_of(node.child_by_field_name("right"))
            if iterated in lists:
                return lists[iterated]
        elif node.type == "call":
            for argument in arguments(node):
                if name_of(argument) in lists:
                    return lists[name_of(argument)]  # type: ignore[index]
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
    root, method = class_method(text, path, class_name, KV_METHOD)
    describer = class_describer(root, class_name)
    symbol = f"{class_name}.{KV_METHOD}"
    fallback: Node | None = None
    for node in walk(method):
        if node.type == "call":
            fallback = keywords(node).get("default_factory", fallback)
    body = body_statements(method)
    for node in body:
        assigned = assigned_name(node)
        if assigned is not None:
            describer.env[assigned[0]] = assigned[1]
    if fallback is None and body:
        fallback = returned(body[-1])
    if fallback is None:
        raise AnchorError(
            f"{symbol} in {path} has no fallback after the alias scan",
            paths=[path],
            anchor=f"{symbol}: final return / default_factory",
        )
    fallback = unparenthesize(fallback)
    if name_of(fallback) in describer.env:
        fallback = unparenthesize(describer.env[name_of(fallback)])  # type: ignore[index]
    method_of_self = attribute(fallback)
    if method_of_self is not None and code_of(method_of_self[0]) == "self":
        name = method_of_self[1]  # a bound method used as a factory: what it returns
        words = describer.describe_method(name)
        key = _method_return_key(describer, name)
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
    body = body_statements(method) if method is not None else []
    value = returned(body[0]) if len(body) == 1 else None
    return (describer.config_ref(value) or "") if value is not None else ""


def _model_types_tested(test: Node, d: ExpressionDescriber) -> list[str] | None:
    """[types] when `test` is `model_type == "x"` or `model_type in [...]`, else None."""
    compared = single_comparison(test)
    if compared is None or d.config_ref(compared[0]) != "model_type":
        return None
    _, op, right = compared
    right = d.resolved(right)
    if op == "==" and string_value(right) is not None:
        return [string_value(right)]  # type: ignore[list-item]
    if op == "in":
        return string_sequence(right)
    return None


def kv_head_overrides_inline(text: str, path: str, class_name: str) -> list[KvHeadOverride]:
    """The special cases at the top of ModelConfig.get_total_num_kv_heads (2025 layouts)."""
    root, method = class_method(text, path, class_name, KV_METHOD)
    d = class_describer(root, class_name)
    symbol = f"{class_name}.{KV_METHOD}"
    alias_list = _alias_list(method)
    rows: list[KvHeadOverride] = []
    order = 0
    for node in body_statements(method):
        assigned = assigned_name(node)
        if assigned is not None and alias_list is not None and assigned[1].id == alias_list.id:
            break
        if assigned is not None:
            d.env[assigned[0]] = assigned[1]
            continue
        branch = if_branch(node)
        if branch is None:
            continue
        model_types = _model_types_tested(branch.test, d)
        if model_types:
            bodies = kv_rule_bodies(statements(branch.body), d, f"{path}::{symbol}")
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
        fields = star_rule(branch.test, statements(branch.body), d, f"{path}::{symbol}")
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
