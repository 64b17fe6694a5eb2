"""A Python file cut down to the top-level statements and class members one libcst reader looks
into, so that libcst parses only those: the kept pieces are copied as written, whole lines at
their own indentation, in file order; a kept class is written `class Name:` (its bases,
decorators and keywords are never read by these readers) followed by its kept members, or `...`
when it keeps none.

A member is kept by `method(class name, method name, code)`; with `by_name`, the last definition
of a name decides for every definition of it (readers that look methods up in a dict by name
see the same definition at the same place). `None` instead of a text when tree-sitter finds an
error in the file or a layout the cut does not handle (a class body on its header's line, a
member whose line holds other code before it, a kept class whose header names `needle`): the
caller then parses as before."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from apron.extractors.parsing.python_ts import node_text, parse_tree

INDENT = b" \t\f"


def _never(_node: Node) -> bool:
    return False


@dataclass(frozen=True)
class Cut:
    """What to keep: `statement(node)` for a top-level statement that is not a class (kept
    whole), `cls(name)` for a class, `method(class, name, code)` for one of its methods,
    `member(node)` for its other statements (kept whole)."""

    cls: Callable[[str], bool]
    method: Callable[[str, str, bytes], bool]
    statement: Callable[[Node], bool] = _never
    member: Callable[[Node], bool] = _never
    by_name: bool = True
    needle: bytes = b""


def definition(statement: Node) -> Node:
    """The class or function a (possibly decorated) statement defines, else the statement."""
    if statement.type == "decorated_definition":
        return statement.child_by_field_name("definition") or statement
    return statement


def defined_name(statement: Node, kind: str) -> str | None:
    """The name of the `kind` ("class_definition" / "function_definition") `statement`
    defines, decorators looked through; None for any other statement."""
    found = definition(statement)
    if found.type != kind:
        return None
    name = found.child_by_field_name("name")
    return node_text(name) if name is not None else None


class _Uncut(Exception):
    """The file has a layout the cut does not handle."""


class _Writer:
    def __init__(self, data: bytes) -> None:
        self.data = data
        first = data.find(b"\n")
        self.newline = b"\r\n" if first > 0 and data[first - 1 : first] == b"\r" else b"\n"
        self.pieces: list[bytes] = []
        self.copied_to = 0  # lines before this byte are already copied

    def prefix(self, node: Node) -> tuple[int, bytes]:
        """(start of the node's line, the indentation before the node)."""
        start = self.data.rfind(b"\n", 0, node.start_byte) + 1
        before = self.data[start : node.start_byte]
        if before.strip(INDENT):
            raise _Uncut
        return start, before

    def lines(self, node: Node) -> None:
        """Copy the lines the node spans (the rest of its last line included)."""
        start, _ = self.prefix(node)
        end = self.data.find(b"\n", node.end_byte)
        end = len(self.data) if end < 0 else end + 1
        start = max(start, self.copied_to)
        if start < end:
            piece = self.data[start:end]
            self.pieces.append(piece if piece.endswith(b"\n") else piece + self.newline)
            self.copied_to = end

    def write(self, text: bytes) -> None:
        self.pieces.append(text + self.newline)


def _members(body: Node) -> list[Node]:
    return [m for m in body.named_children if m.type != "comment"]


def _write_class(writer: _Writer, statement: Node, name: str, cut: Cut) -> None:
    found = definition(statement)
    body = found.child_by_field_name("body")
    if body is None:
        raise _Uncut
    named = found.child_by_field_name("name")
    decorators = writer.data[statement.start_byte : found.start_byte]
    rest = writer.data[named.end_byte : body.start_byte] if named is not None else b""
    if cut.needle and (cut.needle in decorators or cut.needle in rest):
        raise _Uncut  # a decorator, base or keyword of the class names it
    members = _members(body)
    indents = {writer.prefix(m)[1] for m in members}
    if len(indents) > 1 or b"" in indents:
        raise _Uncut
    last: dict[str, bytes] = {}
    for member in members:
        method = defined_name(member, "function_definition")
        if method is not None:
            last[method] = member.text or b""
    kept = []
    for member in members:
        method = defined_name(member, "function_definition")
        if method is None:
            keep = cut.member(member)
        else:
            code = last[method] if cut.by_name else member.text or b""
            keep = cut.method(name, method, code)
        if keep:
            kept.append(member)
    writer.write(b"class " + name.encode("utf-8") + b":")
    if not kept:
        indent = next(iter(indents), b"    ")
        writer.write(indent + b"...")
    for member in kept:
        writer.lines(member)


def cut_text(text: str, cut: Cut) -> str | None:
    """`text` cut down to what `cut` keeps, or None (see the module docstring)."""
    root = parse_tree(text)
    if root.has_error:
        return None
    writer = _Writer(text.encode("utf-8"))
    try:
        for statement in root.named_children:
            if statement.type == "comment":
                continue
            name = defined_name(statement, "class_definition")
            if name is None:
                if cut.statement(statement):
                    writer.lines(statement)
            elif cut.cls(name):
                _write_class(writer, statement, name, cut)
    except _Uncut:
        return None
    return b"".join(writer.pieces).decode("utf-8")
