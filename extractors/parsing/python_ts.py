"""The tree-sitter view of Python that every reader reads: parse entry points and primitives.

Blind to comments by construction: each entry point parses the text with every comment
replaced by spaces of the same byte length, so no comment node reaches a reader while byte
offsets and line numbers stay those of the file. A comment that is data (vLLM's
`# [Encoder-decoder]` registry section labels) is read on purpose, with `comments`."""

from __future__ import annotations

import ast
import re
from functools import lru_cache

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor

from apron.extractors.errors import ParseError
from apron.extractors.parsing.limits import check_syntax_tree

PYTHON = Language(tree_sitter_python.language())


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(PYTHON)


def parse_tree(text: str) -> Node:
    """The module node as tree-sitter parses it, syntax errors and all. The same text is parsed
    once per process while it is among the last few parsed: several facts of one engine read
    the same file (trees are immutable, so they can share one)."""
    return _parsed(text)


@lru_cache(maxsize=16)
def _parsed(text: str) -> Node:
    return _code_tree(text.encode("utf-8"))


def parse_once(text: str) -> Node:
    """tree-sitter's module node for a text read once (an outline, a skeleton, a config module):
    parsed outside parse_tree's memo, so a batch of them does not push out the files that
    several facts read."""
    return _code_tree(text.encode("utf-8"))


@lru_cache(maxsize=1)
def _comment_query() -> Query:
    return Query(PYTHON, "(comment) @comment")


def _comment_spans(root: Node) -> list[tuple[int, int]]:
    found = QueryCursor(_comment_query()).captures(root).get("comment", [])
    return sorted((n.start_byte, n.end_byte) for n in found)


def blank_comments(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """`data` with each (start, end) byte span replaced by as many spaces."""
    parts, last = [], 0
    for start, end in spans:
        parts += [data[last:start], b" " * (end - start)]
        last = end
    parts.append(data[last:])
    return b"".join(parts)


def _code_tree(data: bytes) -> Node:
    """The module node of `data` with its comments blanked (see the module docstring). A text
    without `#` has no comment and is parsed once."""
    tree = _parser().parse(data)
    if b"#" not in data:
        return tree.root_node
    spans = _comment_spans(tree.root_node)
    if not spans:
        return tree.root_node
    return _parser().parse(blank_comments(data, spans)).root_node


def code_text(text: str) -> str:
    """`text` with every comment blanked, as the readers' trees see it (same length in bytes)."""
    data = text.encode("utf-8")
    if b"#" not in data:
        return text
    spans = _comment_spans(_parser().parse(data).root_node)
    return blank_comments(data, spans).decode("utf-8") if spans else text


@lru_cache(maxsize=16)
def comments(text: str) -> tuple[tuple[int, str], ...]:
    """(start byte, text) of every comment of `text`, in order: for the readers of comments that
    are data, which place them among the code by byte offset."""
    data = text.encode("utf-8")
    if b"#" not in data:
        return ()
    spans = _comment_spans(_parser().parse(data).root_node)
    return tuple((start, data[start:end].decode("utf-8")) for start, end in spans)


def parse_python(text: str, path: str, *, check_depth: bool = True) -> Node:
    """The module node; a file with syntax errors, or nested too deeply, is a ParseError.

    `check_depth=False` skips the depth walk (a third of the cost of a parse) for callers that
    only read statements, never expressions: their recursion follows compound statements, and
    a RecursionError there still ends as a ParseError (extract_engine's backstop)."""
    root = parse_tree(text)
    if check_depth:
        check_syntax_tree(root, path, "Python")
    if root.has_error:
        bad = _first_error(root)
        where = f" (line {bad.start_point[0] + 1})" if bad is not None else ""
        raise ParseError(f"{path} does not parse as Python{where}", paths=[path])
    return root


def _first_error(node: Node) -> Node | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "ERROR" or current.is_missing:
            return current
        stack.extend(reversed(current.children))
    return None


def node_text(node: Node) -> str:
    return node.text.decode("utf-8") if node.text is not None else ""


CLOSING = (")", "]", "}")
# a one-line literal in single quotes, no prefix, no escapes, no quote of either kind inside
SINGLE_QUOTED = re.compile(rb"'[^'\"\\\n]*'")
JOINED_ATTRIBUTE = re.compile(r"(?<=[\w)\]])\s*\.\s+(?=[A-Za-z_])|(?<=[\w)\]])\s+\.(?=[A-Za-z_])")


def code_of(node: Node) -> str:
    """A node's code as one canonical line, for the fields that carry code (conditions,
    expressions, annotations, reasons): no comments (the tree has none); line breaks and runs of
    blanks as one space, none inside brackets or before a joined `.attribute`; no trailing comma
    before a closing bracket (but the one of a one-element tuple); a plain string literal in
    double quotes; no brackets around the node itself or around a whole assigned or returned
    value."""
    data = bytearray(node.text or b"")
    base = node.start_byte
    stack = [node]
    while stack:
        current = stack.pop()
        start, end = current.start_byte - base, current.end_byte - base
        if current.type == "," and current.next_sibling is not None:
            parent = current.parent
            one_tuple = (
                parent is not None and parent.type == "tuple" and parent.named_child_count == 1
            )
            if current.next_sibling.type in CLOSING and not one_tuple:
                data[start:end] = b" "
        elif current.type == "parenthesized_expression" and _whole_value(current, node):
            data[start : start + 1] = b" "
            data[end - 1 : end] = b" "
        elif current.type == "string":
            literal = bytes(data[start:end])
            if SINGLE_QUOTED.fullmatch(literal):
                data[start:end] = b'"' + literal[1:-1] + b'"'
            continue
        stack.extend(current.children)
    return compact_text(data.decode("utf-8"))


def _whole_value(expression: Node, top: Node) -> bool:
    """Brackets that group nothing: around the node rendered, a whole assigned, returned or
    yielded value, or a whole statement."""
    if expression.named_child_count != 1:
        return False
    parent = expression.parent
    if expression.id == top.id or parent is None:
        return True
    if parent.type in ("assignment", "augmented_assignment"):
        right = parent.child_by_field_name("right")
        return right is not None and right.id == expression.id
    return parent.type in ("return_statement", "expression_statement", "parenthesized_expression")


def canonical_text(code: str) -> str:
    """code_of for code given as text (what libcst renders of a node): parsed with
    tree-sitter; text that does not parse on its own is only compacted."""
    root = _parser().parse(code.strip().encode("utf-8")).root_node
    if root.has_error:
        return compact_text(code)
    return code_of(root)


def compact_text(code: str) -> str:
    """Code given as text on one line: runs of blanks and line breaks as one space, none inside
    brackets or before a joined `.attribute`."""
    text = " ".join(code.split())
    text = re.sub(r"\s+([)\],}])", r"\1", re.sub(r"([(\[{])\s+", r"\1", text))
    return JOINED_ATTRIBUTE.sub(".", text)


def string_value(node: Node) -> str | None:
    """The value of a string literal without interpolation (also implicit concatenation)."""
    if node.type == "concatenated_string":
        parts = [string_value(c) for c in node.named_children]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if node.type != "string":
        return None
    if any(c.type == "interpolation" for c in node.named_children):
        return None
    text = node_text(node)
    if (
        len(text) >= 2
        and text[0] == text[-1]
        and text[0] in "\"'"
        and "\\" not in text
        and text[1:-1].count(text[0]) == 0
    ):
        return text[1:-1]  # the common case: a plain one-line literal without escapes or prefix
    try:
        value = ast.literal_eval(node_text(node))  # a literal only: never evaluates code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def import_source(statement: Node) -> tuple[int, str] | None:
    """(level, dotted module) of `from <module> import ...`: `from ..a.b import x` -> (2, "a.b");
    None when the statement has no module."""
    source = statement.child_by_field_name("module_name")
    if source is None:
        return None
    if source.type == "relative_import":
        prefix = next((c for c in source.children if c.type == "import_prefix"), None)
        dotted = next((c for c in source.children if c.type == "dotted_name"), None)
        return (
            len(node_text(prefix)) if prefix is not None else 0,
            node_text(dotted) if dotted is not None else "",
        )
    return 0, node_text(source)


def imported_names(statement: Node) -> list[tuple[str, str]]:
    """(local name, imported name) of `from m import a, b as c` -> [("a", "a"), ("c", "b")]."""
    names = []
    for item in statement.children_by_field_name("name"):
        if item.type == "aliased_import":
            name = item.child_by_field_name("name")
            alias = item.child_by_field_name("alias")
            if name is not None and alias is not None:
                names.append((node_text(alias), node_text(name)))
        elif item.type == "dotted_name":
            names.append((node_text(item), node_text(item)))
    return names


FROM_IMPORT_TEXT = re.compile(r"from[ \t]+(\.*)([^\W\d][\w.]*)?[ \t]+import[ \t]+(.*)", re.S)


def from_import(statement: Node) -> tuple[int, str, list[tuple[str, str]], bool] | None:
    """(level, dotted module, imported_names, whether it is `import *`) of a
    `from <module> import ...` statement, or None when the statement has no module: what
    import_source and imported_names say, read from the statement's text when it is plain
    (`from ..a.b import (x, y as z)` without comments or line continuations), else from its
    nodes."""
    parts = _plain_from_import(node_text(statement))
    if parts is not None:
        return parts
    source = import_source(statement)
    if source is None:
        return None
    names = imported_names(statement)
    wildcard = not names and any(c.type == "wildcard_import" for c in statement.children)
    return source[0], source[1], names, wildcard


def _plain_from_import(text: str) -> tuple[int, str, list[tuple[str, str]], bool] | None:
    found = FROM_IMPORT_TEXT.match(text)
    if found is None:
        return None
    dots, dotted, listed = found.groups()
    listed = listed.strip()
    if listed == "*":
        return len(dots), dotted or "", [], True
    if listed.startswith("("):
        if not listed.endswith(")"):
            return None
        listed = listed[1:-1]
    if "#" in listed or "\\" in listed:
        return None
    items = listed.split(",")
    if len(items) > 1 and not items[-1].strip():
        items.pop()  # a trailing comma
    names = []
    for item in items:
        words = item.split()
        if len(words) == 1 and words[0].isidentifier():
            names.append((words[0], words[0]))
        elif len(words) == 3 and words[1] == "as" and words[0].isidentifier():
            if not words[2].isidentifier():
                return None
            names.append((words[2], words[0]))
        else:
            return None
    return len(dots), dotted or "", names, False


def if_clauses(statement: Node) -> tuple[list[tuple[Node, Node]], Node | None]:
    """An `if_statement`'s (condition, block) pairs, the `if` then each `elif` in order, and the
    `else` block (None without one)."""
    clauses = [
        (statement.child_by_field_name("condition"), statement.child_by_field_name("consequence"))
    ]
    otherwise = None
    for part in statement.children_by_field_name("alternative"):
        if part.type == "elif_clause":
            clauses.append(
                (part.child_by_field_name("condition"), part.child_by_field_name("consequence"))
            )
        else:
            otherwise = part.child_by_field_name("body")
    return clauses, otherwise


def unparenthesize(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def call_name(node: Node | None) -> str:
    """The name a call calls, brackets looked through: `f(...)` -> "f", `a.b.f(...)` -> "f";
    "" when `node` is not a call or calls something else (`fs[0](...)`)."""
    if node is None:
        return ""
    node = unparenthesize(node)
    if node.type != "call":
        return ""
    function = unparenthesize(node.child_by_field_name("function"))
    if function.type == "identifier":
        return node_text(function)
    if function.type == "attribute":
        return node_text(function.child_by_field_name("attribute"))
    return ""


def assignments(block: Node, *, include_bare: bool = False) -> list[tuple[str, Node | None]]:
    """(name, value node) for every `NAME = value` / `NAME: T = value` directly in a module or
    class body, in order, the value's brackets looked through; with `include_bare`, also
    `NAME: T` with None as the value."""
    found: list[tuple[str, Node | None]] = []
    for statement in block.named_children:
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            continue
        assignment = statement.named_children[0]
        if assignment.type != "assignment":
            continue
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is not None and left.type == "identifier" and (right is not None or include_bare):
            found.append((node_text(left), unparenthesize(right) if right is not None else None))
    return found


def top_level_assignments(root: Node) -> list[tuple[str, Node]]:
    """(name, value node) for every `NAME = value` / `NAME: T = value` at module level, in order."""
    return assignments(root)  # type: ignore[return-value]


def _undecorated(node: Node) -> Node:
    if node.type == "decorated_definition":
        return node.child_by_field_name("definition")
    return node


def class_methods(root: Node, class_name: str) -> list[tuple[str, Node]]:
    """(name, function_definition) of every method of the top-level classes named `class_name`,
    decorators looked through, in source order."""
    found = []
    for statement in root.named_children:
        definition = _undecorated(statement)
        if definition.type != "class_definition":
            continue
        if node_text(definition.child_by_field_name("name")) != class_name:
            continue
        for member in definition.child_by_field_name("body").named_children:
            method = _undecorated(member)
            if method.type == "function_definition":
                found.append((node_text(method.child_by_field_name("name")), method))
    return found
