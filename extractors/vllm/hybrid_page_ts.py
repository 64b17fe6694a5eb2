"""The hybrid page-size rule read from tree-sitter's tree as serving_rules.hybrid_page_rules
reads it from libcst's: the `attn_block_size = ...` assignments under their if-tests, the
alignment they multiply by, and whether the method only raises the block size and pads the
mamba page. Pure: a tree in, records out."""

from __future__ import annotations

from typing import Any

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.expressions import equals, infix, python_all
from apron.extractors.parsing.python_ts import (
    arguments,
    assigned_name,
    attribute_name,
    call_name,
    class_named,
    class_suite,
    code_of,
    comparison,
    node_text,
    string_value,
    undecorated,
    unparenthesize,
    walk,
)
from apron.extractors.vllm.records import HybridPageRule

Bindings = dict[str, Node]


def local_bindings(function: Node) -> Bindings:
    """serving_rules.local_bindings: `name = value` and `name := value`; the first one wins."""
    found: Bindings = {}
    for node in walk(function):
        single = assigned_name(node)
        if single is not None:
            found.setdefault(single[0], single[1])
        elif node.type == "named_expression":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None and name.type == "identifier":
                found.setdefault(node_text(name), value)
    return found


def _assignments(function: Node, name: str) -> list[tuple[Node, tuple[tuple[Node, bool], ...]]]:
    """(assignment, the if-tests enclosing it with their polarity) for `name = ...`, through
    if bodies, the else of an if without elif, and with bodies."""
    found = []

    def visit(block: Node | None, tests: tuple[tuple[Node, bool], ...]) -> None:
        for statement in block.named_children if block is not None else ():
            if statement.type == "expression_statement":
                for small in statement.named_children:
                    single = assigned_name(small)
                    if single is not None and single[0] == name:
                        found.append((small, tests))
            elif statement.type == "if_statement":
                test = statement.child_by_field_name("condition")
                if test is None:
                    continue
                visit(statement.child_by_field_name("consequence"), (*tests, (test, True)))
                others = statement.children_by_field_name("alternative")
                if len(others) == 1 and others[0].type == "else_clause":
                    visit(others[0].child_by_field_name("body"), (*tests, (test, False)))
            elif statement.type == "with_statement":
                visit(statement.child_by_field_name("body"), tests)

    visit(undecorated(function).child_by_field_name("body"), ())
    return found


def _equals_term(test: Node, positive: bool) -> Any:
    """The branch test `obj.setting == "x"` (or a bare `obj.flag`) as an expression over the
    setting's name (`mamba_cache_mode`: apron passes it), negated when not `positive`."""
    compared = comparison(test)
    if compared is not None and compared[1] == ["=="]:
        left, right = compared[0]
        attribute = attribute_name(left)
        value = string_value(right)
        if attribute and value is not None:
            return equals(attribute, value, positive)
    attribute = attribute_name(test)
    if attribute:
        return attribute if positive else ("not", attribute)
    return None


def _product(node: Node) -> tuple[Node, Node] | None:
    node = unparenthesize(node)
    if node.type != "binary_operator":
        return None
    operator = node.child_by_field_name("operator")
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if operator is None or node_text(operator) != "*" or left is None or right is None:
        return None
    return left, right


def _identifier(node: Node) -> str | None:
    node = unparenthesize(node)
    return node_text(node) if node.type == "identifier" else None


def _hybrid_shape(value: Node, bindings: Bindings) -> str:
    outer = _product(value)
    if outer is None or call_name(outer[1]) != "cdiv":
        return "opaque"
    align, ceil = outer
    ceil_args = arguments(unparenthesize(ceil))
    if len(ceil_args) != 2:
        return "opaque"
    divisor = ceil_args[1]
    inner = _product(divisor)
    if inner is not None and code_of(inner[0]) == code_of(align):
        return "align_ceil"
    name = _identifier(align)
    if code_of(divisor) == code_of(align) and name is not None:
        if call_name(bindings.get(name)) == "lcm":
            return "chunk_align_ceil"
    return "opaque"


def _alignment(value: Node, bindings: Bindings, depth: int = 0) -> Node | None:
    if depth > 4:
        return None
    product = _product(value)
    node = product[0] if product is not None else value
    name = _identifier(node)
    if name is not None and name in bindings:
        node = bindings[name]
    if call_name(node) == "max":
        return node
    if call_name(node) == "lcm":
        for argument in arguments(unparenthesize(node)):
            found = _alignment(argument, bindings, depth + 1)
            if found is not None:
                return found
    return None


def _disjuncts(node: Node) -> list[Node]:
    bare = unparenthesize(node)
    operator = bare.child_by_field_name("operator") if bare.type == "boolean_operator" else None
    if operator is not None and node_text(operator) == "or":
        left, right = bare.child_by_field_name("left"), bare.child_by_field_name("right")
        if left is not None and right is not None:
            return _disjuncts(left) + _disjuncts(right)
    return [node]


def _raises_block_size(test: Node) -> bool:
    compared = comparison(test)
    return (
        compared is not None
        and attribute_name(compared[0][0]) == "block_size"
        and compared[1][:1] == ["<"]
        and code_of(compared[0][1]) == "attn_block_size"
    )


def _method(root: Node, class_name: str, method_name: str, path: str) -> Node:
    """The method node (decorators and all), or the anchor errors of class_named/method_named."""
    cls = class_named(root, class_name, path)
    found = None
    for member in class_suite(cls):
        method = undecorated(member)
        name = method.child_by_field_name("name")
        if method.type == "function_definition" and name is not None:
            if node_text(name) == method_name:
                found = member  # the last one, as class_methods
    if found is None:
        anchor = f"{class_name}.{method_name}"
        raise AnchorError(f"{anchor} is not defined in {path}", paths=[path], anchor=anchor)
    return found


def hybrid_rows(root: Node, path: str, class_name: str, method_name: str) -> list[HybridPageRule]:
    """hybrid_page_rules over tree-sitter's tree (of the file or its skeleton)."""
    method = _method(root, class_name, method_name, path)
    symbol = f"{class_name}.{method_name}"
    bindings = local_bindings(method)
    found = _assignments(method, "attn_block_size")
    if not found:
        raise AnchorError(
            f"{symbol} assigns no attn_block_size in {path}",
            paths=[path],
            anchor=f"{symbol}: attn_block_size",
        )
    nodes = list(walk(method))
    raises_only = any(
        any(_raises_block_size(part) for part in _disjuncts(node.child_by_field_name("condition")))
        for node in nodes
        if node.type in ("if_statement", "elif_clause")
        and node.child_by_field_name("condition") is not None
    )
    pads = any(
        attribute_name(node.child_by_field_name("left")) == "mamba_page_size_padded"
        for node in nodes
        if node.type == "assignment"
        and node.child_by_field_name("type") is None
        and node.child_by_field_name("right") is not None
        and (node.parent is None or node.parent.type != "assignment")
    )
    rows = []
    for assignment, tests in found:
        value = assignment.child_by_field_name("right")
        when = python_all(t for t in (_equals_term(test, pos) for test, pos in tests) if t)
        alignment = _alignment(value, bindings)
        alignment_args = arguments(unparenthesize(alignment)) if alignment is not None else []
        rows.append(
            HybridPageRule(
                when=when,
                shape=_hybrid_shape(value, bindings),
                alignment=code_of(alignment) if alignment is not None else "",
                alignment_floor_is_block_size=alignment is not None
                and any(attribute_name(a) == "block_size" for a in alignment_args),
                kernel_sizes_from=next(
                    (
                        call_name(n)
                        for n in walk(alignment)
                        if n.type == "call"
                        and call_name(n).startswith("get_supported_kernel_block_sizes")
                    ),
                    "",
                )
                if alignment is not None
                else "",
                raises_only=raises_only,
                pads_mamba_page=pads,
                formula=code_of(assignment),
                path=path,
                symbol=symbol,
            )
        )
    return sorted(rows, key=lambda r: (infix(r.when), repr(r.when)))
