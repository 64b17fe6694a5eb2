"""A module outline's plain top-level `from m import a, b` statements read from its text, so that
tree-sitter parses only the rest (imports are about half of a model file's outline).

A statement is taken out only when it is at column 0, on its own line(s), in the plain shape
`python_ts.from_import` reads from text (names in parentheses or not, no comments, strings,
semicolons or line joins) and spelled with ASCII names that are not keywords. Its lines are left
blank, so the rest keeps its rows. The caller must still check, on the rest's tree, that no
top-level statement spans those rows (`outside_statements`): a line that looks like an import
inside a string or brackets is not one, and then the whole outline is parsed instead."""

from __future__ import annotations

import keyword
import re

from tree_sitter import Node

# words the plain reading leaves to the tree: keywords, and `__future__` (its import is a
# statement of its own that binds nothing)
NOT_NAMES = ("__future__", "print", "exec", *keyword.kwlist, *keyword.softkwlist)
_NAME = rf"(?!(?:{'|'.join(NOT_NAMES)})\b)[A-Za-z_]\w*"
_ITEM = rf"{_NAME}(?:[ \t]+as[ \t]+{_NAME})?"
_ITEM_IN_BRACKETS = rf"{_NAME}(?:[ \t\n]+as[ \t\n]+{_NAME})?"
# a newline and a plain `from` statement ending at the next newline: (dots, module, `*`, names
# without brackets, names in brackets)
PLAIN_FROM = re.compile(
    rf"\nfrom[ \t]+(\.*)({_NAME}(?:\.{_NAME})*)?[ \t]+import[ \t]+(?:(\*)"
    rf"|({_ITEM}(?:[ \t]*,[ \t]*{_ITEM})*)"
    rf"|\([ \t\n]*({_ITEM_IN_BRACKETS}(?:[ \t\n]*,[ \t\n]*{_ITEM_IN_BRACKETS})*)"
    r"[ \t\n]*,?[ \t\n]*\))[ \t]*(?=\n)",
    re.ASCII,
)
NAME_PAIR = re.compile(r"(\w+)(?:[ \t\n]+as[ \t\n]+(\w+))?", re.ASCII)

# (first row, last row, level, module, "*" or the [(name, alias or "")] it imports)
TextImport = tuple[int, int, int, str, str | list[tuple[str, str]]]


def split_plain_imports(outline: str) -> tuple[str, list[TextImport]]:
    """(the outline with its plain top-level `from` imports blanked, those imports in order)."""
    found: list[TextImport] = []
    pieces: list[str] = []
    copied = 0  # the outline before this offset is in `pieces`
    row = 0  # the row at `copied`
    count = outline.count
    for match in PLAIN_FROM.finditer(f"\n{outline}\n"):  # each line is between newlines
        dots, module, star, names, bracketed = match.groups()
        start, end = match.span()  # in the outline, the statement is outline[start:end - 1]
        end -= 1
        row += count("\n", copied, end)
        if bracketed is None:
            # (the one newline after the statement before is common: no slice for it)
            pieces.append("\n" if start == copied + 1 else outline[copied:start])
            found.append((row, row, len(dots), module or "", star or NAME_PAIR.findall(names)))
        else:
            lines = count("\n", start, end)
            pieces.append(outline[copied:start])
            pieces.append("\n" * lines)
            found.append((row - lines, row, len(dots), module or "", NAME_PAIR.findall(bracketed)))
        copied = end
    if not found:
        return outline, found
    pieces.append(outline[copied:])
    return "".join(pieces), found


def outside_statements(root: Node, imports: list[TextImport]) -> bool:
    """True when no top-level node of `root` (the tree of the blanked outline) spans a row of
    `imports`: each blanked statement then sat between the outline's top-level statements."""
    if not imports:
        return True
    rows = iter(imports)
    current = next(rows)
    for node in root.children:
        start_row = node.start_point[0]
        end_row, end_column = node.end_point
        if end_column == 0 and end_row > start_row:
            end_row -= 1  # a node that ends at a line start ends on the line before
        while current[1] < start_row:
            current = next(rows, None)
            if current is None:
                return True
        if current[0] <= end_row:
            return False
    return True
