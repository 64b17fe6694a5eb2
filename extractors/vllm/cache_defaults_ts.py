"""CacheConfig's serving defaults read from tree-sitter's tree as serving_rules reads them from
libcst's (class fields, `Field(default=...)`, `self.<setting> = self.<CONSTANT>` in the methods
the caller's filter keeps). Pure: a tree in, records out."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import code_of, node_text
from apron.extractors.vllm.records import ServingDefault
from apron.extractors.vllm.ts_nodes import (
    class_named,
    class_suite,
    single_assignment,
    undecorated,
    unparenthesize,
    walk,
)


def _fields(cls: Node) -> dict[str, Node]:
    """class_fields: `name: T = value` and `name = value` in the class body; the last wins."""
    found: dict[str, Node] = {}
    for statement in class_suite(cls):
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            continue
        assignment = statement.named_children[0]
        if assignment.type != "assignment":
            continue
        if assignment.child_by_field_name("type") is not None:  # AnnAssign
            left, right = (
                assignment.child_by_field_name("left"),
                assignment.child_by_field_name("right"),
            )
            if left is not None and right is not None and unparenthesize(left).type == "identifier":
                found[node_text(unparenthesize(left))] = right
            continue
        single = single_assignment(assignment)
        if single is not None:
            found[single[0]] = single[1]
    return found


def _field_default(value: Node) -> Node:
    """field_default: `Field(default=X, ...)` -> X; any other value as it is."""
    call = unparenthesize(value)
    function = call.child_by_field_name("function") if call.type == "call" else None
    function = unparenthesize(function) if function is not None else None
    if function is None:
        return value
    if function.type == "identifier":
        name = node_text(function)
    elif function.type == "attribute":
        attribute = function.child_by_field_name("attribute")
        name = node_text(attribute) if attribute is not None else ""
    else:
        return value
    arguments = call.child_by_field_name("arguments")
    if name == "Field" and arguments is not None and arguments.type == "argument_list":
        for argument in arguments.named_children:
            if argument.type == "keyword_argument":
                keyword = argument.child_by_field_name("name")
                if keyword is not None and node_text(keyword) == "default":
                    return argument.child_by_field_name("value") or value
    return value


def _literal(node: Node | None) -> str | None:
    """literal_text: an int or float literal as written (libcst's Integer or Float)."""
    if node is None:
        return None
    node = unparenthesize(node)
    text = node_text(node)
    if node.type in ("integer", "float") and not text.endswith(("j", "J")):
        return text  # `1j` is an Imaginary to libcst
    return None


def _methods(cls: Node, class_name: str, keep: Callable[[str, bytes], bool]) -> dict[str, Node]:
    """class_methods of the outline: the kept methods, the last definition of a name at the
    place of the first."""
    methods: dict[str, Node] = {}
    for member in class_suite(cls):
        method = undecorated(member)
        name = method.child_by_field_name("name")
        if method.type == "function_definition" and name is not None:
            if keep(f"{class_name}.{node_text(name)}", member.text or b""):
                methods[node_text(name)] = member
    return methods


def _self_assignments(methods: dict[str, Node], attribute: str) -> list[tuple[str, Node]]:
    """(method, value) of every `self.<attribute> = value` in the methods."""
    found = []
    for name, method in methods.items():
        for node in walk(method):
            single = node.type == "assignment" and node.child_by_field_name("type") is None
            right = node.child_by_field_name("right") if single else None
            if right is None or right.type == "assignment":
                continue
            if node.parent is not None and node.parent.type == "assignment":
                continue
            target = unparenthesize(node.child_by_field_name("left"))
            owner = target.child_by_field_name("object") if target.type == "attribute" else None
            field = target.child_by_field_name("attribute") if owner is not None else None
            if (
                owner is not None
                and field is not None
                and unparenthesize(owner).type == "identifier"
                and node_text(unparenthesize(owner)) == "self"
                and node_text(field) == attribute
            ):
                found.append((name, right))
    return found


def cache_rows(
    root: Node,
    path: str,
    class_name: str,
    settings: dict[str, str],
    keep: Callable[[str, bytes], bool],
) -> list[ServingDefault]:
    """The row of each setting (serving_rules._cache_default), in `settings`' order."""
    cls = class_named(root, class_name, path)
    fields = _fields(cls)
    methods = _methods(cls, class_name, keep)
    rows = []
    for setting, role in settings.items():
        symbol = f"{class_name}.{setting}"
        if setting not in fields:
            raise AnchorError(f"{symbol} is not a field in {path}", paths=[path], anchor=symbol)
        default = _field_default(fields[setting])
        common = {"setting": setting, "role": role, "candidates": (), "path": path}
        rows.append(_row(default, fields, methods, class_name, symbol, common))
    return rows


def _row(default, fields, methods, class_name, symbol, common) -> ServingDefault:
    literal = _literal(default)
    if literal is not None:
        return ServingDefault(
            kind="literal", value=literal, computed_by="", reason="", symbol=symbol, **common
        )
    bare = unparenthesize(default)
    if bare.type == "none" or (bare.type == "identifier" and node_text(bare) == "None"):
        for method, value in _self_assignments(methods, common["setting"]):
            value = unparenthesize(value)
            owner = value.child_by_field_name("object") if value.type == "attribute" else None
            if (
                owner is not None
                and unparenthesize(owner).type == "identifier"
                and node_text(unparenthesize(owner)) in ("self", "cls", class_name)
            ):
                attribute = value.child_by_field_name("attribute")
                constant = node_text(attribute) if attribute is not None else ""
                literal = _literal(fields.get(constant))
                if literal is not None:
                    return ServingDefault(
                        kind="literal",
                        value=literal,
                        computed_by="",
                        reason=f"None, replaced in {class_name}.{method} by {constant}",
                        symbol=f"{class_name}.{constant}",
                        **common,
                    )
    return ServingDefault(
        kind="opaque",
        value="",
        computed_by="",
        reason=f"the default {code_of(default)} is not a literal",
        symbol=symbol,
        **common,
    )
