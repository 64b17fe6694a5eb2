"""A module's text with the bodies of its methods elided, so the class tree parses less.

The class tree reads a method's name and parameters, never its body; method bodies are most of
a model file's bytes. A method is a `def` whose nearest enclosing block is a `class`; its body
(the lines after the signature, indented deeper than the `def`) becomes one `...` line.
Module-level functions and the functions nested in them keep their bodies (the flag functions,
adapters and decorator factories are evaluated). The pass is line-based: a body ends at the
first code line indented no deeper than its `def` outside a triple-quoted string. The caller
parses the full text instead whenever the skeleton does not parse cleanly.

`module_outline` goes further: it elides the bodies of top-level classes and functions too and
says where each came from, so that the class tree parses a module's top level first and then
only the classes and functions it needs, each from its own span (most classes of a model file,
its layers and blocks, are never needed).

`clean_tree` is the tree of a skeleton for a reader of class headers and a few methods (the
hybrid page rule), else of the whole file."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from tree_sitter import Node

from apron.extractors.errors import ParseError
from apron.extractors.parsing.limits import check_syntax_tree
from apron.extractors.parsing.python_ts import parse_python, parse_tree

TRIPLE_QUOTES = ('"""', "'''")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


SHORT_STRING = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")


def _signature_end(text: str, start: int) -> int | None:
    """The offset of the line after the `def`/`class` header that starts at `start` (brackets
    closed, the line ends with `:`), or None when it does not end so (a one-line body, a
    triple-quoted string, an unclosed string)."""
    depth = 0
    position = start
    for _ in range(200):
        newline = text.find("\n", position)
        line = text[position : len(text) if newline < 0 else newline]
        if '"""' in line or "'''" in line:
            return None
        if '"' in line or "'" in line:
            line = SHORT_STRING.sub("", line)
            if '"' in line or "'" in line:
                return None
        if "#" in line:
            line = line.split("#", 1)[0]
        depth += line.count("(") + line.count("[") + line.count("{")
        depth -= line.count(")") + line.count("]") + line.count("}")
        if depth <= 0 or newline < 0:
            if depth == 0 and newline >= 0 and line.rstrip().endswith(":"):
                return newline + 1
            return None
        position = newline + 1
    return None


def _open_quote(line: str, quote: str) -> str:
    """The triple quote still open after `line`, given the one open before it."""
    return _open_quote_in(line, 0, len(line), quote)


def _open_quote_in(text: str, position: int, end: int, quote: str) -> str:
    """The triple quote still open after text[position:end], given the one open before it."""
    # the next `"""` and `'''` at or after `position` as last found (-1: none before `end`)
    double: int | None = None
    single: int | None = None
    while True:
        if quote:
            found = text.find(quote, position, end)
            if found < 0:
                return quote
            quote, position = "", found + 3
            continue
        if double is None or 0 <= double < position:
            double = text.find('"""', position, end)
        if single is None or 0 <= single < position:
            single = text.find("'''", position, end)
        if double < 0 and single < 0:
            return ""
        if single < 0 or 0 <= double < single:
            quote, position = '"""', double + 3
        else:
            quote, position = "'''", single + 3


# Characters other than " ", "\t" and "\n" that str.splitlines splits at or str.strip strips.
ODD_SPACE = re.compile(
    "[\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)


class _AtLineStart:
    """A pattern matched at line starts only, as `^` under re.M, but searched for quickly:
    Python's re tries a multiline `^` at every offset, while a leading `\n` is scanned for."""

    def __init__(self, body: str) -> None:
        self.here = re.compile(body)
        self.later = re.compile(f"\n(?={body})")  # the groups of `body` are kept

    def search(
        self, text: str, position: int, end: int | None = None
    ) -> tuple[int, re.Match[str]] | None:
        """(the line start, the match) of the first line start at or after `position` (and
        before `end`) where the pattern matches; None when there is none."""
        end = len(text) if end is None else end
        if position == 0 or text[position - 1] == "\n":
            found = self.here.match(text, position, end)
            if found is not None:
                return position, found
        found = self.later.search(text, position, end)
        return (found.end(), found) if found is not None else None


HEADER = _AtLineStart(r"([ \t]*)(?:async[ \t]+)?(class|def)\b")
METHOD_NAME = re.compile(r"(?:async[ \t]+)?def[ \t]+([^\W\d]\w*)[ \t]*\(")
CLASS_NAME = re.compile(r"class[ \t]+([^\W\d]\w*)[ \t]*[(:]")
FIRST_CODE = _AtLineStart(r"([ \t]*)[^ \t\r\n#]")


@lru_cache(maxsize=64)
def _dedent_pattern(indent: int) -> _AtLineStart:
    """A code line indented no deeper than `indent` characters: where a body ends."""
    return _AtLineStart(rf"[ \t]{{0,{indent}}}(?=[^ \t\r\n#])")


class _Skeleton:
    def __init__(
        self,
        text: str,
        outline: bool = False,
        keep: Callable[[str], bool] | None = None,
        functions: bool = False,
        signatures: bool = True,
        lean_headers: bool = False,
    ) -> None:
        self.text = text
        self.keep = keep  # a method whose definition text it accepts keeps its body
        self.outline = outline  # elide the bodies of top-level classes and functions too
        self.functions = functions  # elide the bodies of top-level functions as of methods
        self.elided: dict[int, tuple[int, int]] = {}  # output row of a header -> its source span
        # False (only without `keep`): an elided method is written as `def name(): ...`
        self.signatures = signatures
        self.lean: dict[int, tuple[int, int]] = {}  # its output row -> its signature's span
        self.rows = 0  # newlines written so far (outline, or without signatures)
        self.counting = outline or not signatures
        # (outline only) an elided top-level definition is written as its name alone
        self.lean_headers = lean_headers
        self.out: list[str] = []
        self.headers: list[tuple[int, str]] = []  # enclosing (indent, "class" | "def") blocks
        self.quote = ""  # a triple-quoted string open outside the elided bodies

    def plain(self, start: int, end: int) -> None:
        """Keeps text[start:end] (whole lines), tracking the open blocks and strings."""
        chunk = self.text[start:end]
        self.out.append(chunk)
        if self.counting:
            self.rows += chunk.count("\n")
        if not ODD_SPACE.search(chunk):  # lines are `\n` lines and blanks are " \t"
            self._plain_lines_outside_strings(chunk)
            return
        for line in chunk.splitlines():
            if not self.quote and _is_code(line):
                indent = _indent(line)
                while self.headers and self.headers[-1][0] >= indent:
                    self.headers.pop()
            if self.quote or '"""' in line or "'''" in line:
                self.quote = _open_quote(line, self.quote)

    def _plain_lines_outside_strings(self, chunk: str) -> None:
        """`plain` for a chunk of `\n` lines: a code line that starts outside a triple-quoted
        string pops the open blocks indented at least as deep, so each run of lines starting
        outside strings pops those as deep as its least indented code line."""
        position = 0
        quote = self.quote
        size = len(chunk)
        while position < size:
            if quote:  # the line that closes the string started inside it: it pops nothing
                closing = chunk.find(quote, position)
                if closing < 0:
                    break
                line_end = chunk.find("\n", closing)
                line_end = size if line_end < 0 else line_end + 1
                quote = _open_quote_in(chunk, closing + 3, line_end, "")
                position = line_end
                continue
            double = chunk.find('"""', position)
            single = chunk.find("'''", position)
            opening = double if single < 0 or 0 <= double < single else single
            run_end = size if opening < 0 else chunk.find("\n", opening)
            run_end = size if run_end < 0 else run_end + 1
            while self.headers and self._dedent(self.headers[-1][0]).search(
                chunk, position, run_end
            ):
                self.headers.pop()
            if opening >= 0:
                quote = _open_quote_in(chunk, chunk.rfind("\n", 0, opening) + 1, run_end, "")
            position = run_end
        self.quote = quote

    def _dedent(self, indent: int) -> _AtLineStart:
        return _dedent_pattern(indent)  # shared: a pattern is immutable

    def body_end(self, start: int, indent: int) -> int:
        """The offset where the body starting at `start` ends (outside triple-quoted strings)."""
        text = self.text
        pattern = self._dedent(indent)
        position = scanned = start
        quote = ""  # the triple quote open at `scanned` (a line start)
        while True:
            found = pattern.search(text, position)
            if found is None:
                return len(text)
            line = found[0]
            quote = _open_quote_in(text, scanned, line, quote)
            scanned = line
            if not quote:
                return line
            closing = text.find(quote, line)
            if closing < 0:
                return len(text)
            position = closing + 3

    def _lean_method(self, header: re.Match[str], signature_end: int) -> int | None:
        """Writes the method whose header is `header` as `def name(): ...` when its body is
        elided and its name plain, and returns where its body ends; else None."""
        text = self.text
        name = METHOD_NAME.match(text, header.end(1))
        if name is None:
            return None
        body = self.body_end(signature_end, len(header.group(1)))
        if FIRST_CODE.search(text, signature_end, body) is None:
            return None
        self.lean[self.rows] = (header.end(1), signature_end)
        self.out.append(f"{header.group(1)}def {name.group(1)}(): ...\n")
        self.rows += 1
        return body

    def _lean_header(self, start: int, header: re.Match[str], signature_end: int) -> int | None:
        """Writes the top-level class or function whose header is `header` (its line starts at
        `start`) as `class Name: ...` or `def name(): ...` when its body is elided and its name
        plain, keeps its span, and returns where its body ends; else None."""
        text = self.text
        kind = header.group(2)
        name = (METHOD_NAME if kind == "def" else CLASS_NAME).match(text, header.end(1))
        if name is None:
            return None
        body = self.body_end(signature_end, 0)
        if FIRST_CODE.search(text, signature_end, body) is None:
            return None
        self.elided[self.rows] = (start, body)
        self.out.append(
            f"def {name.group(1)}(): ...\n" if kind == "def" else f"class {name.group(1)}: ...\n"
        )
        self.rows += 1
        return body

    def run(self) -> str:
        text = self.text
        position = 0
        while (found := HEADER.search(text, position)) is not None:
            header, match = found
            self.plain(position, header)
            position = header
            if self.quote:  # a header-like line inside a string
                line_end = text.find("\n", position)
                self.plain(position, len(text) if line_end < 0 else line_end + 1)
                position = len(text) if line_end < 0 else line_end + 1
                continue
            indent = len(match.group(1))
            while self.headers and self.headers[-1][0] >= indent:
                self.headers.pop()
            kind = match.group(2)
            is_method = kind == "def" and bool(self.headers) and self.headers[-1][1] == "class"
            self.headers.append((indent, kind))
            signature_end = _signature_end(text, header)
            top_level = self.outline and indent == 0
            if self.functions and kind == "def" and indent == 0:
                is_method = True  # elided, or kept, as a method is
            if signature_end is None:  # keep the line; its block (if any) is read as is
                line_end = text.find("\n", header)
                signature_end = len(text) if line_end < 0 else line_end + 1
                is_method = top_level = False
            if is_method and not self.signatures:
                body = self._lean_method(match, signature_end)
                if body is not None:
                    position = body
                    continue
            if top_level and self.lean_headers:
                body = self._lean_header(header, match, signature_end)
                if body is not None:
                    position = body
                    continue
            header_row = self.rows
            self.out.append(text[position:signature_end])
            if self.counting:
                self.rows += text.count("\n", position, signature_end)
            position = signature_end
            if not (is_method or top_level):
                continue
            body = self.body_end(signature_end, indent)
            if is_method and self.keep is not None and self.keep(text[header:body]):
                self.out.append(text[signature_end:body])  # whole, nested definitions too
                if self.counting:
                    self.rows += text.count("\n", signature_end, body)
                self.headers.pop()
                position = body
                continue
            first = FIRST_CODE.search(text, signature_end, body)
            if first is None:
                continue
            self.out.append(f"{first[1].group(1)}...\n")
            if self.counting:
                self.rows += 1
            if top_level:
                self.elided[header_row] = (header, body)
            position = body
        self.plain(position, len(text))
        return "".join(self.out)


def method_skeleton(
    text: str, keep: Callable[[str], bool] | None = None, *, functions: bool = False
) -> str:
    """`text` with each method body replaced by `...` at the body's indentation, except the
    methods whose text (from the `def` line to the end of the body) `keep` accepts: those are
    kept whole, with the functions and classes nested in them. `functions=True` treats the
    top-level functions as methods too (for a reader of class members only)."""
    return _Skeleton(text, keep=keep, functions=functions).run()


# The end of a signature and a docstring opening right after it.
_DOCSTRING = re.compile(
    r":[ \t]*(?:#[^\n]*)?\n(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*[rRuUbB]{0,2}(\"\"\"|\'\'\')"
)


def quotes_only_in_docstring(definition: str) -> bool:
    """Whether the only triple quotes of a method's text are its docstring's. The skeleton finds
    a body's end line by line, and a triple quote inside a one-line string (`'\"\"\"'`) or a
    comment makes it take code for string text, up to the end of the file: a `keep` that also
    keeps every method this is false for never loses text to that."""
    double, single = definition.count('"""'), definition.count("'''")
    if double + single == 0:
        return True
    if (double, single) not in ((2, 0), (0, 2)):
        return False
    quote = '"""' if double else "'''"
    opening = _DOCSTRING.search(definition)
    return (
        opening is not None
        and opening.group(1) == quote
        and opening.start(1) == definition.find(quote)
    )


def module_outline(text: str, lean: bool = False) -> tuple[str, dict[int, tuple[int, int]]]:
    """(`text` with the bodies of its top-level classes and functions elided as well, the
    source span of each elided definition by the row of its `class`/`def` line in the outline).

    A span is the definition from its `class`/`def` line to the end of its body (decorators are
    lines of the outline): `method_skeleton` of it is that definition as the module's skeleton
    has it, so a class or function the tree needs is read from its span alone. With `lean`, an
    elided definition's header is written as its name alone (`class Name: ...`,
    `def name(): ...`, on one line): its bases and parameters are read from its span."""
    skeleton = _Skeleton(text, outline=True, lean_headers=lean)
    return skeleton.run(), skeleton.elided


def lean_class_skeleton(text: str) -> tuple[str, dict[int, tuple[int, int]]]:
    """(`method_skeleton(text)` with each elided method written as `def name(): ...` on one
    line, the span of each such method's signature in `text` (from `def`, or `async`, to the
    line after its `:`) by its row in the result): its parameters are read from that span
    when they are needed."""
    skeleton = _Skeleton(text, signatures=False)
    return skeleton.run(), skeleton.lean


__all__ = [
    "lean_class_skeleton",
    "method_skeleton",
    "module_outline",
    "quotes_only_in_docstring",
]


# ------------------------------------------------------------------ the skeleton as a tree

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


def _within_limits(root: Node, path: str) -> bool:
    try:
        check_syntax_tree(root, path, "Python")
    except ParseError:
        return False  # the whole file is measured, and reported, instead
    return True


def clean_tree(text: str, path: str, skeleton_keep: Callable[[str], bool]) -> Node:
    """For a tree-sitter reader of class headers and methods: the tree of the skeleton
    parse_outline would cut the outline from (`skeleton_keep` as there), else of the whole file.
    The whole file over the parse limits, or with syntax errors, is a ParseError naming its
    first bad line (python_ts.parse_python)."""
    if not ODD_SPACE.search(text) and not _misread(text):
        root = parse_tree(method_skeleton(text, keep=skeleton_keep, functions=True))
        if not root.has_error and _within_limits(root, path):
            return root
    return parse_python(text, path)
