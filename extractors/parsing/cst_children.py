"""The children of a libcst node in lexical order, read from its fields (libcst's own
`children` runs a visitor over every child and costs ~40 µs a node).

libcst visits a node's fields in `_visit_and_replace_children`, each through one
`visit_*(self, "<field>", ...)` call, in lexical order; that method's source gives the order of
the fields once per node type (its lines read from libcst's file as one indented block: what
`inspect.getsource` gives, without tokenizing the file, which cost ~40 ms a process). A type whose method does not read that way, or a node holding a
CSTNode in a field the order does not name, is answered by libcst's `children` itself."""

from __future__ import annotations

import dataclasses
import functools
import linecache
import operator
import re
from collections.abc import Callable

import libcst as cst

_VISIT_FIELD = re.compile(r'\bvisit_\w+\(\s*self\s*,\s*"(\w+)"')
_VISIT_CALL = re.compile(r"\bvisit_\w+\(")


@functools.cache
def field_order(node_type: type) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(the node fields in visit order, the other fields), or None when the type's visit
    method does not read as one `visit_*(self, "<field>", ...)` call per field."""
    try:
        source = _method_source(node_type._visit_and_replace_children)
        fields = [f.name for f in dataclasses.fields(node_type)]
    except (OSError, TypeError, AttributeError, IndexError):
        return None
    visited = _VISIT_FIELD.findall(source)
    if len(visited) != len(_VISIT_CALL.findall(source)) or not set(visited) <= set(fields):
        return None
    order = tuple(dict.fromkeys(visited))
    return order, tuple(f for f in fields if f not in order)


def _method_source(method: Callable) -> str:
    """The lines of a method's definition: its decorators, its signature and every line after
    it that is blank or indented deeper. (A body line indented less, inside a string, only ends the block early:
    fewer fields read, and the caller then falls back to libcst's `children`.)"""
    code = method.__code__
    lines = linecache.getlines(code.co_filename)
    start = code.co_firstlineno - 1
    indent = len(lines[start]) - len(lines[start].lstrip())
    block = []
    while lines[start].lstrip().startswith("@"):  # a decorated method starts at its decorator
        block.append(lines[start])
        start += 1
    depth = 0
    while True:  # the signature, over as many lines as its brackets take
        block.append(lines[start])
        depth += lines[start].count("(") - lines[start].count(")")
        start += 1
        if depth <= 0:
            break
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    return "".join(block)


Getter = Callable[[cst.CSTNode], tuple]


@functools.cache
def _getters(node_type: type) -> tuple[Getter, Getter] | None:
    plan = field_order(node_type)
    if plan is None:
        return None
    order, others = plan

    def get(names: tuple[str, ...]) -> Getter:
        if not names:
            return lambda node: ()
        if len(names) == 1:
            one = operator.attrgetter(names[0])
            return lambda node: (one(node),)
        return operator.attrgetter(*names)

    return get(order), get(others)


@functools.cache
def _is_node_type(value_type: type) -> bool:
    """issubclass(value_type, CSTNode), memoized: CSTNode is an ABC, whose isinstance is slow."""
    return issubclass(value_type, cst.CSTNode)


def _holds_node(value: object) -> bool:
    if _is_node_type(value.__class__):
        return True
    return isinstance(value, tuple | list) and any(_is_node_type(v.__class__) for v in value)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The same nodes as `node.children`, in the same order."""
    getters = _getters(node.__class__)
    if getters is None:
        return list(node.children)
    ordered, others = getters
    for value in others(node):
        if _holds_node(value):
            return list(node.children)
    out: list[cst.CSTNode] = []
    for value in ordered(node):
        kind = value.__class__
        if kind is tuple or kind is list:
            out += [v for v in value if _is_node_type(v.__class__)]
        elif _is_node_type(kind):
            out.append(value)
    return out
