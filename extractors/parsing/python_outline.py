"""libcst parses of a module's outline: the definitions a fact reads, whole, and little else.

`parse_module_keeping` hands libcst every signature, class field and docstring; a fact that reads
two methods of a 95 KB file still pays for 35 KB of them. An outline keeps the module-scope
statements that are not definitions (imports, assignments, `if`/`try` blocks), the header of
every top-level class (decorators, name, bases), and only the top-level functions and methods
`keep(qualified name, definition bytes)` keeps. Everything else is left out, whole lines and
the blank lines between them (libcst pays for a blank line as for a statement), so line numbers
change: a libcst error in the outline is reported from the file as parse_module_keeping parses it.
A class with nothing kept keeps its header and a `...` body.

A fact may parse an outline only when it reads nothing but what the outline keeps: the names
of the definitions that are dropped are gone too, so an anchor lookup must be for a kept name
or a class. When the file has syntax errors, or the outline does not parse cleanly (say, `;`
between statements of a class body), the module is parsed as `parse_module_keeping` parses it,
so errors are those of parse_module and the fact reads the same definitions. (parse_outline
can leave out more: see its options. With `skeleton_keep`, the whole file is not parsed at
all unless the skeleton fails.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

import libcst as cst
from tree_sitter import Node

from apron.extractors.errors import ParseError
from apron.extractors.parsing.limits import CST_COST_BUDGET, check_syntax_tree
from apron.extractors.parsing.python_cst import KeepBody, parse_module, parse_module_keeping
from apron.extractors.parsing.python_skeleton import ODD_SPACE, method_skeleton
from apron.extractors.parsing.python_ts import (
    code_text,
    defined_name,
    node_text,
    parse_python,
    parse_tree,
    undecorated,
)

# Comments and string literals, left to right: where the line-based skeleton pass could read a
# triple quote wrongly. (A prefix such as r or f is read as code before the quote; a backslash
# escapes the next character in every kind of literal, raw ones too, as far as where the
# literal ends is concerned.)
LITERALS = re.compile(
    r"#[^\n]*"
    r'|"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\[\s\S]|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\[\s\S])*"'
    r"|'(?:[^'\\\n]|\\[\s\S])*'"
)
TRIPLES = ('"""', "'''")


def _misread(text: str) -> bool:
    """Whether the skeleton pass may cut `text` where its statements do not end: at a line
    joined by a backslash (a body could end early), or past a triple quote that does not open
    or close a triple-quoted string (in a comment, in a one-line string, escaped inside a
    triple-quoted one): the pass tracks triple quotes only, so it would see a string there."""
    if "\\\n" in text:
        return True
    for literal in LITERALS.findall(text):
        quote = literal[:3]
        if quote in TRIPLES and len(literal) >= 6:
            if quote in literal[3:-3]:  # an escaped quote: the pass ends the string there
                return True
        elif '"""' in literal or "'''" in literal:
            return True
    return False


def parse_outline(
    text: str,
    path: str,
    keep: KeepBody,
    *,
    class_statements: bool = False,
    class_docs: bool = True,
    method_docs: bool = True,
    module_statements: bool | Callable[[bytes], bool] = True,
    skeleton_keep: Callable[[str], bool] | None = None,
) -> cst.Module:
    """The module as libcst parses its outline; `class_statements` also keeps each class's
    statements other than methods (fields, constants, docstrings), and `class_docs=False` leaves
    out the strings and comments among them (a field reader reads assignments only);
    `method_docs=False` leaves out the comments and docstrings on lines of their own between
    the statements of the kept definitions (for a reader that renders expressions and simple
    statements only, never a compound statement's code);
    `module_statements=False` drops the module-scope statements that are not definitions too
    (the caller reads imports some other way, or none), and a predicate keeps only those whose
    source bytes it accepts (a reader of one module-level assignment keeps those that name it).

    `skeleton_keep`, for an outline of class headers and methods only (no class or module
    statements), is a predicate on the text of a method or top-level function (its `def` line
    to the end of its body) that accepts every one `keep` keeps, and may accept more: the
    outline is then cut from the file's skeleton (python_skeleton.method_skeleton, the other
    bodies of methods and top-level functions elided) and tree-sitter parses that instead of
    the whole file. The skeleton is not used when the text has what the line-based pass may
    misread (`_misread`, odd line breaks) or when it does not parse cleanly. The outline may
    differ from the whole file's in blank lines only (the pass elides those after a body). A
    syntax error inside a body the skeleton elides is not seen."""
    cut = Cut(class_statements and (class_docs or "code"), method_docs, module_statements)
    if (
        skeleton_keep is not None
        and not class_statements
        and module_statements is False
        and not ODD_SPACE.search(text)
        and not _misread(text)
    ):
        skeleton = method_skeleton(text, keep=skeleton_keep, functions=True)
        root = parse_tree(skeleton)
        if not root.has_error and _within_limits(root, path):
            found = _outline_of(skeleton, root, path, keep, cut)
            if found is not None:
                return found
    root = parse_tree(text)
    check_syntax_tree(root, path, "Python", cost_budget=CST_COST_BUDGET)
    if root.has_error:
        return parse_module_keeping(text, path, keep)
    found = _outline_of(text, root, path, keep, cut)
    return found if found is not None else parse_module_keeping(text, path, keep)


class Cut(NamedTuple):
    """What an outline leaves out besides the definitions `keep` does not keep."""

    class_statements: bool | str  # True: keep them; "code": keep all but strings and comments
    method_docs: bool  # False: leave out the docs between a kept definition's statements
    module_statements: bool | Callable[[bytes], bool]


def _outline_of(text: str, root: Node, path: str, keep: KeepBody, cut: Cut) -> cst.Module | None:
    """libcst's module for the outline cut from `text` (whose clean tree is `root`); None when
    the outline does not parse cleanly."""
    data = code_text(text).encode("utf-8")  # the ranges are those of the blanked tree
    pieces, at = [], 0
    for start, end, filler in _whole_lines(data, _dropped(root, keep, cut)):
        pieces += [data[at:start], filler]
        at = end
    pieces.append(data[at:])
    outline = b"".join(pieces).decode("utf-8")
    if parse_tree(outline).has_error:
        return None
    try:
        return parse_module(outline, path)
    except ParseError:  # reported as parse_module_keeping reports it, lines and all
        return None


def _within_limits(root: Node, path: str) -> bool:
    try:
        check_syntax_tree(root, path, "Python", cost_budget=CST_COST_BUDGET)
    except ParseError:
        return False  # the whole file is measured, and reported, instead
    return True


def _whole_lines(data: bytes, ranges: list[tuple[int, int, bytes]]) -> list[tuple[int, int, bytes]]:
    """The dropped statements with their indentation and line end, and the blank lines between
    two of them: libcst pays for every blank line as much as for a statement."""
    merged: list[tuple[int, int, bytes]] = []
    for start, end, filler in ranges:
        if not filler:
            start, end = _line_start(data, start), _line_end(data, end)
            if merged and not merged[-1][2] and not data[merged[-1][1] : start].strip():
                start = merged.pop()[0]
        merged.append((start, end, filler))
    return merged


def _line_start(data: bytes, start: int) -> int:
    """`start` moved back over the indentation before it and the blank lines above it, when
    nothing else precedes it on its line."""
    at = start
    while at > 0 and data[at - 1] in b" \t":
        at -= 1
    if at > 0 and data[at - 1] != ord("\n"):
        return start
    while at > 0:
        above = data.rfind(b"\n", 0, at - 1) + 1  # the start of the line above
        if data[above : at - 1].strip():
            break
        at = above
    return at


def _line_end(data: bytes, end: int) -> int:
    """`end` moved past the blanks and the newline after it and the blank lines below it,
    when nothing else follows it on its line."""
    at = end
    while at < len(data) and data[at] in b" \t\r":
        at += 1
    if at < len(data) and data[at] != ord("\n"):
        return end
    while at < len(data):
        below = data.find(b"\n", at + 1)  # the end of the line below
        below = len(data) if below < 0 else below
        if data[at + 1 : below].strip():
            return at + 1
        at = below
    return at


def _dropped(root: Node, keep: KeepBody, cut: Cut) -> list[tuple[int, int, bytes]]:
    """(start, end, filler) byte ranges to blank, in order."""
    module_statements = cut.module_statements
    ranges: list[tuple[int, int, bytes]] = []
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type == "function_definition":
            if not keep(defined_name(definition), statement.text or b""):
                ranges.append((statement.start_byte, statement.end_byte, b""))
            elif not cut.method_docs:
                ranges += _inner_docs(definition)
        elif definition.type == "class_definition":
            ranges += _dropped_members(definition, keep, cut)
        elif module_statements is False or (
            module_statements is not True and not module_statements(statement.text or b"")
        ):
            ranges.append((statement.start_byte, statement.end_byte, b""))
    return ranges


def _dropped_members(cls: Node, keep: KeepBody, cut: Cut) -> list[tuple[int, int, bytes]]:
    body = cls.child_by_field_name("body")
    if body is None or body.end_byte <= body.start_byte:
        return []
    prefix = defined_name(cls) + "."
    class_statements = cut.class_statements
    dropped, kept_any = [], False
    for member in body.named_children:
        definition = undecorated(member)
        if definition.type == "function_definition":
            if keep(prefix + defined_name(definition), member.text or b""):
                kept_any = True
                if not cut.method_docs:
                    dropped += _inner_docs(definition)
                continue
        elif class_statements is True or (class_statements and not _is_doc(member)):
            kept_any = True
            continue
        dropped.append((member.start_byte, member.end_byte, b""))
    if not kept_any:
        return [(body.start_byte, body.end_byte, b"...")]
    return dropped


def _is_doc(member: Node) -> bool:
    """A comment or a statement that is only a string (a docstring), on a line of its own."""
    before = member.prev_sibling
    if before is None and member.parent is not None:
        before = member.parent.prev_sibling  # the `:` of the class header
    if before is not None and before.end_point[0] == member.start_point[0]:
        return False  # `x = 1  # note` or `x = 1; "doc"`: the line stays whole
    if member.type == "comment":
        return True
    if member.type != "expression_statement" or member.named_child_count != 1:
        return False
    string = member.named_children[0]
    parts = string.named_children if string.type == "concatenated_string" else [string]
    return all(_plain_string(part) for part in parts)


def _plain_string(node: Node) -> bool:
    """A str literal that is not an f-string: what `statements` drops as a docstring (an
    f-string may call; a bytes literal is a statement to it)."""
    if node.type != "string" or not node.named_children:
        return False
    start = node.named_children[0]
    return start.type == "string_start" and not set(node_text(start).lower()) & {"f", "b"}


# Statements whose blocks hold statements (the blocks an outline's docs are left out of).
COMPOUND = frozenset(
    {
        "block",
        "if_statement",
        "elif_clause",
        "else_clause",
        "for_statement",
        "while_statement",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "with_statement",
        "match_statement",
        "case_clause",
        "function_definition",
        "class_definition",
        "decorated_definition",
    }
)


def _inner_docs(definition: Node) -> list[tuple[int, int, bytes]]:
    """The comments and docstrings on lines of their own in `definition`'s blocks, in order; a
    block's docstring stays when nothing else is in the block."""
    found = []
    stack = [definition]
    while stack:
        node = stack.pop()
        if node.type == "block":
            members = node.named_children
            docs = [m for m in members if _is_doc(m)]
            if len(docs) < len(members):
                found += [(m.start_byte, m.end_byte, b"") for m in docs]
            else:  # only comments and strings: the comments go, one statement stays
                found += [(m.start_byte, m.end_byte, b"") for m in docs if m.type == "comment"]
        stack += [c for c in node.named_children if c.type in COMPOUND]
    return sorted(found)


def clean_tree(text: str, path: str, skeleton_keep: Callable[[str], bool]) -> Node:
    """For a tree-sitter reader of class headers and methods: the tree of the skeleton
    parse_outline would cut the outline from (`skeleton_keep` as there), else of the whole file.
    The whole file over the parse limits, or with syntax errors, is a ParseError naming its
    first bad line (python_ts.parse_python)."""
    if not ODD_SPACE.search(text) and not _misread(text):
        root = parse_tree(method_skeleton(text, keep=skeleton_keep, functions=True))
        if not root.has_error and _within_limits(root, path):
            return root
    return parse_python(text, path, cost_budget=CST_COST_BUDGET)


__all__ = ["clean_tree", "parse_outline"]
