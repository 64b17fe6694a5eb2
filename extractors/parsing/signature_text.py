"""A method's parameter names read from its signature's text, for the plain shapes only.

The class tree reads a method's names and whether it takes `**kwargs` (`class_tree._method`,
over tree-sitter nodes). With its one-line strings and its comments taken out, a signature
without line joins or lambdas has as parameters its top-level comma-separated pieces, and each
piece's name is the identifier it starts with; anything else (a piece that is not `[*|**]name[: annotation][= default]`, `*` or
`/`) is None, and the caller parses the signature instead."""

from __future__ import annotations

import re

SIGNATURE_START = re.compile(r"(?:async[ \t]+)?def[ \t]+[^\W\d]\w*[ \t]*\(")
PIECE = re.compile(r"[ \t\n]*(\*{0,2})[ \t\n]*([^\W\d]\w*)?[ \t\n]*(?:([:=])|$)")
# one-line strings without escapes, then comments (the rest of a line after `#`)
STRING = re.compile(r""""[^"\\\n]*"|'[^'\\\n]*'""")
COMMENT = re.compile(r"#[^\n]*")
INNER_GROUP = re.compile(r"\([^()\[\]{}]*\)|\[[^()\[\]{}]*\]|\{[^()\[\]{}]*\}")
BRACKET = re.compile(r"[()\[\]{}]")


def plain_parameters(signature: str) -> tuple[list[str], bool] | None:
    """(parameter names, whether one is `**name`) of `def name(<parameters>)...:` as tree-sitter
    reads them (`*args`, `*` and `/` name nothing), or None for a shape this does not read."""
    start = SIGNATURE_START.match(signature)
    if start is None or "\\" in signature:
        return None
    rest = signature[start.end() :]
    if "'" in rest or '"' in rest:
        rest = STRING.sub("", rest)  # a quote in a comment pairs, if at all, within it
    if "#" in rest:
        rest = COMMENT.sub("", rest)
    if "'" in rest or '"' in rest or "lambda" in rest:
        return None
    while True:  # innermost bracket groups out, until the parameters' `)` is the first one left
        stripped = INNER_GROUP.sub("", rest)
        if stripped == rest:
            break
        rest = stripped
    end = rest.find(")")
    if end < 0 or BRACKET.search(rest, 0, end):
        return None
    pieces = rest[:end].split(",")
    if len(pieces) > 1 and not pieces[-1].strip():
        pieces.pop()  # a trailing comma
    names: list[str] = []
    var_keyword = False
    for piece in pieces:
        bare = piece.strip()
        if not bare:
            if len(pieces) == 1:
                break  # no parameters
            return None
        if bare == "/":
            continue  # the positional-only separator
        found = PIECE.match(piece)
        if found is None:
            return None
        stars, name, separator = found.groups()
        if name is None:
            if stars == "*" and separator is None:
                continue  # the keyword-only separator
            return None
        if stars == "**":
            if separator == "=":
                return None
            var_keyword = True
        elif stars == "*":
            if separator == "=":
                return None
        else:
            names.append(name)
    return names, var_keyword
