"""Limits that keep hostile source files from costing unbounded time, memory or stack.

Every parser entry point (python_ts, cpp_ts, markdown) checks these before or right after
parsing, so a pathological file is one ParseError naming its path. The numbers leave wide room
over the real engine files (measured at the pins: the files the extractors read are at most 27
levels deep, any C++ or Python file of the three engines at most 156 (long else-if chains))."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.errors import ParseError

# tree-sitter levels. The recursive tree walkers would hit Python's recursion limit (extract_engine
# turns a RecursionError that still happens into a ParseError).
MAX_SYNTAX_DEPTH = 500
# C++ preprocessor: the total text of the distinct line conditions (`#if A` inside `#if B` ...).
MAX_CONDITION_CHARS = 4_000_000
# Markdown pages: markdown-it-py's tokens cost ~400 bytes per source character on table-heavy
# pages; the real supported-model pages are under 100 KB.
MAX_MARKDOWN_CHARS = 1_000_000
MAX_TABLE_COLUMNS = 256


def check_syntax_tree(
    root: Node, path: str, language: str, *, cost_budget: int | None = None
) -> None:
    """Walk the tree once (iteratively, stopping early); ParseError when it nests deeper than
    MAX_SYNTAX_DEPTH or, when `cost_budget` is given, when the sum of node depths exceeds it."""
    if cost_budget is None:
        _check_depth(root, path, language)
        return
    shallow = min(MAX_SYNTAX_DEPTH, cost_budget // max(root.descendant_count, 1))
    if _no_deeper_than(root, shallow):
        return  # both limits hold: n nodes at most `shallow` deep cost at most n * shallow
    cursor = root.walk()
    depth = 0
    cost = 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            cost += depth
            if depth > MAX_SYNTAX_DEPTH:
                line = cursor.node.start_point[0] + 1 if cursor.node is not None else 0
                raise ParseError(
                    f"{path} nests {language} syntax more than {MAX_SYNTAX_DEPTH} levels deep "
                    f"(line {line}); it is nested too deeply to parse safely",
                    paths=[path],
                )
            if cost_budget is not None and cost > cost_budget:
                raise ParseError(
                    f"{path} is too large or too deeply bracketed to parse (over "
                    f"{cost_budget} node-levels)",
                    paths=[path],
                )
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
            depth -= 1
        cost += depth


def _first_deeper(root: Node, limit: int) -> Node | None:
    """The first node (in the order of a full walk) deeper than `limit`, else None; walking
    only where one could be: a node at depth d with n nodes in its subtree (itself included)
    has none deeper than d + n - 1, so the walk enters a subtree only when that passes `limit`."""
    if root.descendant_count - 1 <= limit:
        return None
    cursor = root.walk()
    depth = 0
    while True:
        node = cursor.node
        if (
            node is not None
            and depth + node.descendant_count - 1 > limit
            and cursor.goto_first_child()
        ):
            depth += 1
            if depth > limit:
                return cursor.node
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return None
            depth -= 1


def too_deep(root: Node) -> bool:
    """Whether the tree nests deeper than MAX_SYNTAX_DEPTH (the file a depth check refuses)."""
    return _first_deeper(root, MAX_SYNTAX_DEPTH) is not None


def _no_deeper_than(root: Node, limit: int) -> bool:
    return _first_deeper(root, limit) is None


def _check_depth(root: Node, path: str, language: str) -> None:
    """The depth half of check_syntax_tree: the first node too deep is the one reported."""
    deep = _first_deeper(root, MAX_SYNTAX_DEPTH)
    if deep is not None:
        raise ParseError(
            f"{path} nests {language} syntax more than {MAX_SYNTAX_DEPTH} levels deep "
            f"(line {deep.start_point[0] + 1}); it is nested too deeply to parse safely",
            paths=[path],
        )


def check_markdown_size(text: str, path: str) -> None:
    if len(text) > MAX_MARKDOWN_CHARS:
        raise ParseError(
            f"{path} is {len(text)} characters, over the {MAX_MARKDOWN_CHARS}-character "
            "limit for a markdown page",
            paths=[path],
        )


def check_table_width(columns: int, path: str, line: int) -> None:
    if columns > MAX_TABLE_COLUMNS:
        raise ParseError(
            f"{path} has a table with {columns} columns (line {line + 1}), over the "
            f"limit of {MAX_TABLE_COLUMNS}",
            paths=[path],
        )
