"""Branches, parameters and operators as Python reads them: one `if` or `elif` with what follows
it, a function's named parameters with their defaults, and binary and unary operations."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from apron.extractors.parsing.python_ts import (
    if_clauses,
    node_text,
    statements,
    unparenthesize,
    walk,
)


@dataclass(frozen=True)
class Branch:
    """One `if` statement or `elif` clause: `if test: body` followed by `else: otherwise`
    (`otherwise` None when nothing follows or another `elif` does: then `elif_follows`)."""

    test: Node
    body: Node
    otherwise: Node | None
    elif_follows: bool

    @property
    def alone(self) -> bool:
        """Nothing follows the branch: no `elif`, no `else`."""
        return self.otherwise is None and not self.elif_follows


def if_branch(node: Node) -> Branch | None:
    """The Branch of an `if_statement` or an `elif_clause` (the elif read as the `if` it is
    inside the `else` of the one before it); None for any other node."""
    if node.type == "if_statement":
        statement, position = node, 0
    elif node.type == "elif_clause" and node.parent is not None:
        statement = node.parent
        alternatives = statement.children_by_field_name("alternative")
        position = 1 + next(i for i, part in enumerate(alternatives) if part.id == node.id)
    else:
        return None
    clauses, otherwise = if_clauses(statement)
    test, body = clauses[position]
    if test is None or body is None:
        return None
    last = position == len(clauses) - 1
    return Branch(
        test=test,
        body=body,
        otherwise=otherwise if last else None,
        elif_follows=not last,
    )


PLAIN = ("identifier",)
WITH_DEFAULT = ("default_parameter", "typed_default_parameter")


def parameters(function: Node) -> dict[str, Node | None]:
    """name -> default value node (None without one) of a function's named parameters, in
    order, before and after a bare `*`; `*args`, `**kwargs` and the separators left out."""
    found: dict[str, Node | None] = {}
    params = function.child_by_field_name("parameters")
    for param in params.named_children if params is not None else ():
        if param.type in PLAIN:
            found[node_text(param)] = None
        elif param.type == "typed_parameter":
            name = param.named_children[0] if param.named_children else None
            if name is not None and name.type == "identifier":
                found[node_text(name)] = None
        elif param.type in WITH_DEFAULT:
            name, value = param.child_by_field_name("name"), param.child_by_field_name("value")
            if name is not None and name.type == "identifier":
                found[node_text(name)] = unparenthesize(value) if value is not None else None
    return found


def binary(node: Node, operator: str) -> tuple[Node, Node] | None:
    """(left, right) of `left <operator> right` (`//`, `%`, `+`, ...), brackets looked
    through; None for any other node."""
    inner = unparenthesize(node)
    if inner.type != "binary_operator":
        return None
    if node_text(inner.child_by_field_name("operator")) != operator:
        return None
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    return (left, right) if left is not None and right is not None else None


def unary(node: Node, operator: str) -> Node | None:
    """x of `<operator>x` (`-x`, `+x`, `~x`), brackets looked through; else None."""
    inner = unparenthesize(node)
    if inner.type != "unary_operator":
        return None
    if node_text(inner.child_by_field_name("operator")) != operator:
        return None
    return inner.child_by_field_name("argument")


def body_statements(definition: Node | None) -> list[Node]:
    """statements() of the body of a function, class, loop or clause (docstrings and `pass`
    left out); none for a node without a body."""
    return statements(definition.child_by_field_name("body")) if definition is not None else []


def names_in(node: Node) -> list[str]:
    """Every plain name below (and including) `node`, in source order, attribute and keyword
    names too (`a.b(c=d)` -> a, b, c, d)."""
    return [node_text(n) for n in walk(node) if n.type == "identifier"]
