"""Semantics-preserving edits of engine source, for the metamorphic tests: each edit changes the
form of a file (comments, parentheses, line breaks, annotations, imports, docstrings, quotes,
and inside expressions redundant brackets, operator spacing, line breaks before operators and
split string literals; in C++ comments, braces, parentheses, case-label order, operator and
cast spacing, redundant brackets around operands) and never its meaning. The facts read
from an edited tree must be byte-identical to the facts read from the original.

Every Python edit is checked against Python's own parser: the edited file's AST must equal the
original's (`ast.dump` ignores comments, parentheses and layout), or for the edits that change
the AST on purpose (annotations, import splitting and aliases, docstrings) it must parse and
the rest of the AST be equal. The C++ edits of spacing and brackets must leave the parse the
same once brackets around an expression are looked through (`cpp_shape`). An edit that cannot
be applied to a file safely leaves that file as it was, so `changed` tells a test whether an
edit really ran."""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections.abc import Callable

import tree_sitter_cpp
import tree_sitter_python
from tree_sitter import Language, Parser

PYTHON = Language(tree_sitter_python.language())

# ------------------------------------------------------------------ Python


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def _offsets(text: str) -> list[int]:
    """The string offset of the start of each line (1-based line numbers index it)."""
    starts = [0, 0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _apply(text: str, inserts: list[tuple[int, str]]) -> str:
    """`text` with each (offset, string) inserted; equal offsets keep their list order."""
    ordered = sorted(enumerate(inserts), key=lambda item: (item[1][0], item[0]))
    parts, last = [], 0
    for _, (at, piece) in ordered:
        parts += [text[last:at], piece]
        last = at
    parts.append(text[last:])
    return "".join(parts)


def _bracket_depths(tokens: list[tokenize.TokenInfo]) -> list[int]:
    depth, found = 0, []
    for token in tokens:
        if token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        found.append(depth)
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
    return found


def comments_in_brackets(text: str, comment: str = "# noqa: E501") -> str:
    """A comment at the end of every line that breaks inside brackets."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    commented = {t.start[0] for t in tokens if t.type == tokenize.COMMENT}
    depths = _bracket_depths(tokens)
    inserts = [
        (starts[t.start[0]] + t.start[1], "  " + comment)
        for t, depth in zip(tokens, depths, strict=True)
        if t.type == tokenize.NL and depth > 0 and t.start[0] not in commented
    ]
    return _apply(text, inserts)


def break_after_open_brackets(text: str, comment: str = "# type: ignore[misc]") -> str:
    """Every opening bracket followed on its line by code gets a comment and a line break after
    it: comments inside base lists, argument lists and subscripts, and implicit line joins."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    inserts = []
    for i, token in enumerate(tokens[:-1]):
        following = tokens[i + 1]
        if (
            token.type == tokenize.OP
            and token.string in "([{"
            and following.start[0] == token.end[0]
            and following.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
            and not (following.type == tokenize.OP and following.string in ")]}")
        ):
            at = starts[token.end[0]] + token.end[1]
            inserts.append((at, f"  {comment}\n" + " " * (token.start[1] + 4)))
    return _apply(text, inserts)


def break_after_commas(text: str) -> str:
    """A line break after every comma inside brackets that code follows on the same line."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    depths = _bracket_depths(tokens)
    inserts = []
    for i, token in enumerate(tokens[:-1]):
        following = tokens[i + 1]
        if (
            token.type == tokenize.OP
            and token.string == ","
            and depths[i] > 0
            and following.start[0] == token.end[0]
            and following.type not in (tokenize.NL, tokenize.COMMENT)
        ):
            inserts.append((starts[token.end[0]] + token.end[1], "\n" + " " * 8))
    return _apply(text, inserts)


def own_line_comments(text: str) -> str:
    """An own-line comment before every decorator, `def` and `class` line, and between
    decorators, at the statement's indentation."""
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(("@", "def ", "async def ", "class ")):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}# reviewed: form only\n")
        out.append(line)
    return "".join(out)


SIMPLE_ASSIGNMENT = re.compile(r"^(?P<indent>[ \t]*)(?P<target>[A-Za-z_]\w*) = (?P<value>.+)$")


def _logical_one_liners(text: str) -> set[int]:
    """Line numbers (1-based) of logical lines that are one physical line, without comments."""
    tokens = _tokens(text)
    if tokens is None:
        return set()
    found, line_start, spans_lines, has_comment = set(), None, False, False
    for token in tokens:
        if token.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.ENCODING):
            continue
        if line_start is None:
            line_start, spans_lines, has_comment = token.start[0], False, False
        if token.type == tokenize.COMMENT:
            has_comment = True
        if token.end[0] != line_start or token.start[0] != line_start:
            spans_lines = True
        if token.type == tokenize.NEWLINE:
            if not spans_lines and not has_comment:
                found.add(line_start)
            line_start = None
    return found


def extra_parentheses(text: str) -> str:
    """The value of every one-line `name = value` and `return value` in parentheses."""
    one_liners = _logical_one_liners(text)
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        body = line.rstrip("\n")
        if number in one_liners:
            found = SIMPLE_ASSIGNMENT.match(body)
            if found and not found.group("value").rstrip().endswith((":", "\\")):
                line = f"{found['indent']}{found['target']} = ({found['value'].rstrip()})\n"
            elif body.lstrip().startswith("return ") and not body.rstrip().endswith(":"):
                indent = body[: len(body) - len(body.lstrip())]
                value = body.lstrip()[len("return ") :].rstrip()
                line = f"{indent}return ({value})\n"
        out.append(line)
    return "".join(out)


KEYWORDS_BEFORE_BRACKET = {
    "if",
    "elif",
    "while",
    "return",
    "in",
    "and",
    "or",
    "not",
    "assert",
    "yield",
    "await",
    "else",
    "for",
    "with",
    "lambda",
    "is",
    "del",
    "print",
}


def trailing_commas(text: str) -> str:
    """A trailing comma after the last item of every multi-line list, dict, set display and
    call whose closing bracket stands on a line of its own (not a subscript, a parenthesized
    expression or a comprehension, where a comma would change the meaning)."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    inserts = []
    stack: list[tuple[str, bool]] = []  # (kind, holds a `for` or a `*`/`**` at its level)
    for i, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            before = tokens[i - 1] if i else None
            is_call_or_subscript = before is not None and (
                (before.type == tokenize.NAME and before.string not in KEYWORDS_BEFORE_BRACKET)
                or (before.type == tokenize.OP and before.string in ")]")
                or before.type == tokenize.STRING
            )
            if token.string == "(":
                kind = "call" if is_call_or_subscript else "paren"
            elif token.string == "[":
                kind = "subscript" if is_call_or_subscript else "display"
            else:
                kind = "display"
            stack.append((kind, False))
            continue
        if token.type == tokenize.NAME and token.string in ("for", "lambda") and stack:
            stack[-1] = (stack[-1][0], True)
        if not (token.type == tokenize.OP and token.string in ")]}"):
            continue
        kind, unsafe = stack.pop() if stack else ("paren", True)
        if kind not in ("call", "display") or unsafe:
            continue
        j = i - 1
        while j >= 0 and tokens[j].type in (tokenize.NL, tokenize.COMMENT):
            j -= 1
        last = tokens[j]
        if last.end[0] == token.start[0] or (last.type == tokenize.OP and last.string in ",([{"):
            continue
        inserts.append((starts[last.end[0]] + last.end[1], ","))
    return _apply(text, inserts)


MODULE_CONSTANT = re.compile(r"^(?P<target>[A-Z_][A-Z0-9_]*) = (?P<value>.+)$")


def annotated_constants(text: str) -> str:
    """Every one-line upper-case module constant `NAME = value` annotated: `NAME: "Final" =`."""
    one_liners = _logical_one_liners(text)
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        found = MODULE_CONSTANT.match(line.rstrip("\n"))
        if number in one_liners and found:
            line = f'{found["target"]}: "Final" = {found["value"]}\n'
        out.append(line)
    return "".join(out)


FROM_IMPORT = re.compile(r"^from (?P<module>[\w.]+) import (?P<names>[\w, ]+)$")


def import_aliases_and_grouping(text: str) -> str:
    """Each one-line module-level `from m import a, b` split into one statement per name, each
    imported `as` itself, in reverse order."""
    one_liners = _logical_one_liners(text)
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        found = FROM_IMPORT.match(line.rstrip("\n"))
        if number in one_liners and found and found["module"] != "__future__":
            names = [n.strip() for n in found["names"].split(",") if n.strip()]
            if all(" " not in n for n in names):
                out += [f"from {found['module']} import {n} as {n}\n" for n in reversed(names)]
                continue
        out.append(line)
    return "".join(out)


def added_docstrings(text: str) -> str:
    """A docstring first in the body of every `def` and `class` whose body starts on the next
    line and has none."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    inserts = []
    for i, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string not in ("def", "class"):
            continue
        previous = tokens[i - 1] if i else None
        if previous is not None and previous.type not in (
            tokenize.NEWLINE,
            tokenize.NL,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            if not (previous.type == tokenize.NAME and previous.string == "async"):
                continue
        depth = 0
        for j in range(i + 1, len(tokens)):
            t = tokens[j]
            if t.type == tokenize.OP and t.string in "([{":
                depth += 1
            elif t.type == tokenize.OP and t.string in ")]}":
                depth -= 1
            elif t.type == tokenize.OP and t.string == ":" and depth == 0:
                after = [x for x in tokens[j + 1 : j + 4] if x.type != tokenize.COMMENT]
                if (
                    len(after) >= 3
                    and after[0].type == tokenize.NEWLINE
                    and after[1].type == tokenize.INDENT
                    and not (after[2].type == tokenize.STRING)
                ):
                    indent = after[1].string
                    inserts.append((starts[after[2].start[0]], f'{indent}"""Form only."""\n'))
                break
            elif t.type == tokenize.NEWLINE:
                break
    return _apply(text, inserts)


def swapped_quotes(text: str) -> str:
    """Plain one-line string literals in the other quote character (no prefix, no escapes,
    neither quote inside)."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    pieces, last = [], 0
    for token in tokens:
        s = token.string
        if (
            token.type == tokenize.STRING
            and len(s) >= 2
            and s[0] in "'\""
            and s[-1] == s[0]
            and not s.startswith(("'''", '"""'))
            and "\\" not in s
            and "'" not in s[1:-1]
            and '"' not in s[1:-1]
        ):
            at = starts[token.start[0]] + token.start[1]
            other = "'" if s[0] == '"' else '"'
            pieces += [text[last:at], other + s[1:-1] + other]
            last = at + len(s)
    pieces.append(text[last:])
    return "".join(pieces)


def _byte_offsets(text: str) -> list[int]:
    """The byte offset of the start of each line, 1-based (ast positions count UTF-8 bytes)."""
    starts = [0, 0]
    for line in text.encode("utf-8").splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _in_fstring(tree: ast.AST) -> set[int]:
    """ids of the nodes inside f-strings (their positions are not reliable before Python 3.12)."""
    return {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}


def _wrapped_operands(tree: ast.AST) -> list[ast.AST]:
    skip = _in_fstring(tree)
    wrapped: list[ast.AST] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp):
            wrapped += [node.left, node.right]
        elif isinstance(node, ast.BoolOp):
            wrapped += node.values
        elif isinstance(node, ast.Compare):
            wrapped += [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and not (
            len(node.args) == 1 and isinstance(node.args[0], ast.GeneratorExp) and not node.keywords
        ):
            wrapped += [a for a in node.args if not isinstance(a, ast.Starred)]
            wrapped += [k.value for k in node.keywords if k.arg is not None]
        elif isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice | ast.Tuple):
            wrapped.append(node.slice)
    return wrapped


def inner_parentheses(text: str) -> str:
    """Redundant brackets inside expressions: around every operand of a binary, boolean or
    comparison operator, every call argument and keyword value, and every subscript, as a
    formatter adds them for a long line: `max(1, a // b)` -> `max((1), ((a) // (b)))`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    starts = _byte_offsets(text)
    inserts: list[tuple[int, str]] = []
    for node in _wrapped_operands(tree):
        if getattr(node, "end_lineno", None) is None:
            continue
        inserts.append((starts[node.end_lineno] + node.end_col_offset, ")"))
        inserts.append((starts[node.lineno] + node.col_offset, "("))
    return _insert_bytes(text, inserts)


SPACED_OPERATORS = frozenset(
    "+ - * / // % ** == != < > <= >= , | & ^ << >> = -> :=".split()
)  # the operators whose surrounding blanks a formatter decides


def operator_spacing(text: str) -> str:
    """The blanks around binary and comparison operators, `=` and commas removed where there
    are some (`a + b` -> `a+b`, `f(a, b=1)` -> `f(a,b=1)`) and one added where there is none
    (`x-1` -> `x - 1`), on every line: another formatter's spacing."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    pieces, last = [], 0
    for i in range(1, len(tokens) - 1):
        token = tokens[i]
        if token.type != tokenize.OP or token.string not in SPACED_OPERATORS:
            continue
        for a, b in ((tokens[i - 1], token), (token, tokens[i + 1])):
            if tokenize.NL in (a.type, b.type) or tokenize.NEWLINE in (a.type, b.type):
                continue
            if tokenize.COMMENT in (a.type, b.type) or a.end[0] != b.start[0]:
                continue
            gap_start = starts[a.end[0]] + a.end[1]
            gap_end = starts[b.start[0]] + b.start[1]
            if gap_start < last or text[gap_start:gap_end].strip():
                continue
            pieces += [text[last:gap_start], "" if gap_end > gap_start else " "]
            last = gap_end
    pieces.append(text[last:])
    return "".join(pieces)


BINARY_WORDS = ("and", "or")


def break_before_operators(text: str) -> str:
    """A line break before every binary operator, `and` and `or` inside brackets that code
    precedes on its line: the layout of a formatter that splits a long expression."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    depths = _bracket_depths(tokens)
    inserts = []
    for i in range(1, len(tokens)):
        token, previous = tokens[i], tokens[i - 1]
        binary = (
            token.type == tokenize.OP and token.string in SPACED_OPERATORS - {",", "=", "->", ":="}
        ) or (token.type == tokenize.NAME and token.string in BINARY_WORDS)
        if not binary or depths[i] <= 0 or previous.end[0] != token.start[0]:
            continue
        if previous.type == tokenize.OP and previous.string in ("(", "[", "{", ",", "=", ":"):
            continue  # a unary sign after an opening bracket, a comma or `=`: not binary
        if previous.type == tokenize.OP and previous.string in SPACED_OPERATORS:
            continue  # a unary sign after another operator
        if previous.type == tokenize.NAME and keyword.iskeyword(previous.string):
            continue  # `not -x`, `return -x`
        inserts.append((starts[token.start[0]] + token.start[1], "\n" + " " * 12))
    return _apply(text, inserts)


TRIPLE_QUOTES = ("'''", '"""')


def split_strings(text: str) -> str:
    """Every plain one-line string literal holding a blank split after its first blank into two
    adjacent literals (`"a b"` -> `"a " "b"`), as a formatter splits a long line."""
    tokens = _tokens(text)
    if tokens is None:
        return text
    starts = _offsets(text)
    pieces, last = [], 0
    for token in tokens:
        s = token.string
        if (
            token.type == tokenize.STRING
            and len(s) >= 4
            and s[0] in "'\""
            and s[-1] == s[0]
            and not s.startswith(TRIPLE_QUOTES)
            and "\\" not in s
            and " " in s[1:-2]
        ):
            at = starts[token.start[0]] + token.start[1]
            cut = s.index(" ", 1) + 1
            pieces += [text[last:at], s[:cut] + s[0] + " " + s[0] + s[cut:]]
            last = at + len(s)
    pieces.append(text[last:])
    return "".join(pieces)


class _Normalized(ast.NodeTransformer):
    """What the AST-changing edits change, undone: annotations on module constants, `as`
    aliases naming themselves, split imports, docstrings."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if isinstance(node.target, ast.Name) and node.value is not None and node.simple:
            return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        return node

    def visit_alias(self, node: ast.alias) -> ast.AST:
        if node.asname == node.name:
            node.asname = None
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if isinstance(body, list):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                body = body[1:] or [ast.Pass()]
            merged: list[ast.stmt] = []
            for statement in body:
                if (
                    isinstance(statement, ast.ImportFrom)
                    and merged
                    and isinstance(merged[-1], ast.ImportFrom)
                    and merged[-1].module == statement.module
                    and merged[-1].level == statement.level
                ):
                    merged[-1].names = sorted(
                        merged[-1].names + statement.names, key=lambda a: (a.name, a.asname or "")
                    )
                    continue
                if isinstance(statement, ast.ImportFrom):
                    statement.names = sorted(
                        statement.names, key=lambda a: (a.name, a.asname or "")
                    )
                merged.append(statement)
            node.body = merged
        return node


def _meaning(text: str) -> str | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return ast.dump(_Normalized().visit(tree))


PYTHON_EDITS: dict[str, Callable[[str], str]] = {
    "comments-in-brackets": comments_in_brackets,
    "break-after-open-brackets": break_after_open_brackets,
    "break-after-commas": break_after_commas,
    "own-line-comments": own_line_comments,
    "extra-parentheses": extra_parentheses,
    "trailing-commas": trailing_commas,
    "annotated-constants": annotated_constants,
    "import-aliases-and-grouping": import_aliases_and_grouping,
    "added-docstrings": added_docstrings,
    "swapped-quotes": swapped_quotes,
    "inner-parentheses": inner_parentheses,
    "operator-spacing": operator_spacing,
    "break-before-operators": break_before_operators,
    "split-strings": split_strings,
}


def _tree_sitter_parses(text: str) -> bool:
    return not Parser(PYTHON).parse(text.encode("utf-8")).root_node.has_error


def edit_python(text: str, kinds: tuple[str, ...]) -> str:
    """`text` under each edit of `kinds` in order; an edit whose result does not mean what the
    original means (by Python's AST) is left out for this file, and so is one that
    tree-sitter-python cannot parse where it parsed the original: its grammar (0.25) rejects a
    few shapes Python accepts, such as a line break after the comma of `for _, s in` inside a
    generator or of `dict[str, Any]` in a parameter annotation. The readers give a ParseError
    for those; that is a parser limit, not a misread."""
    original = _meaning(text)
    if original is None:
        return text
    parsed = _tree_sitter_parses(text)
    for kind in kinds:
        edited = PYTHON_EDITS[kind](text)
        if edited != text and _meaning(edited) == original:
            if parsed and not _tree_sitter_parses(edited):
                continue
            text = edited
    return text


# ------------------------------------------------------------------ C++

CPP = Language(tree_sitter_cpp.language())


def _cpp_nodes(text: str, types: tuple[str, ...]):
    root = Parser(CPP).parse(text.encode("utf-8")).root_node
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in types:
            yield node
        stack.extend(node.children)


def _insert_bytes(text: str, inserts: list[tuple[int, str]]) -> str:
    data = text.encode("utf-8")
    ordered = sorted(enumerate(inserts), key=lambda item: (item[1][0], item[0]))
    parts, last = [], 0
    for _, (at, piece) in ordered:
        parts += [data[last:at], piece.encode("utf-8")]
        last = at
    parts.append(data[last:])
    return b"".join(parts).decode("utf-8")


def cpp_comments(text: str) -> str:
    """A block comment after every `,` and `(` and a line comment at the end of every line that
    ends a statement or opens a block, outside strings, comments and preprocessor lines."""
    inserts = []
    for node in _cpp_nodes(text, (",", "(", ";", "{")):
        parent = node.parent
        if parent is None or parent.type.startswith("preproc") or _in_preproc(node):
            continue
        if node.type in (",", "("):
            inserts.append((node.end_byte, " /* form */"))
        else:
            inserts.append((node.end_byte, " // form\n"))
    return _insert_bytes(text, inserts)


def _in_preproc(node) -> bool:
    while node is not None:
        if node.type.startswith("preproc") and node.type not in (
            "preproc_if",
            "preproc_ifdef",
            "preproc_else",
            "preproc_elif",
        ):
            return True
        node = node.parent
    return False


def cpp_case_braces(text: str) -> str:
    """The statements of every case label in braces: `case X: a; break;` -> `case X: { a;
    break; }`."""
    inserts = []
    for case in _cpp_nodes(text, ("case_statement",)):
        colon = next((c for c in case.children if c.type == ":"), None)
        body = [c for c in case.named_children if c.start_byte >= (colon.end_byte if colon else 0)]
        body = [c for c in body if c.type != "comment"]
        if colon is None or not body or _in_preproc(case):
            continue
        if len(body) == 1 and body[0].type == "compound_statement":
            continue
        if any(c.type == "declaration" and "static" in c.text.decode() for c in body):
            continue
        inserts += [(colon.end_byte, " {"), (body[-1].end_byte, " }")]
    return _insert_bytes(text, inserts)


def cpp_extra_parentheses(text: str) -> str:
    """The value of every `return value;` in parentheses (not a braced initializer)."""
    inserts = []
    for statement in _cpp_nodes(text, ("return_statement",)):
        value = next((c for c in statement.named_children if c.type != "comment"), None)
        if value is None or value.type in ("initializer_list", "comma_expression"):
            continue
        if _in_preproc(statement):
            continue
        inserts += [(value.start_byte, "("), (value.end_byte, ")")]
    return _insert_bytes(text, inserts)


CASE_LINE = re.compile(r"^[ \t]*case [^:]+:[ \t]*$")


def cpp_reordered_case_labels(text: str) -> str:
    """Each run of case labels on lines of their own (a fallthrough group) in reverse order."""
    lines = text.splitlines(keepends=True)
    out, run = [], []
    for line in lines:
        if CASE_LINE.match(line.rstrip("\n")) and line.endswith("\n"):
            run.append(line)
            continue
        out += reversed(run)
        run = []
        out.append(line)
    out += reversed(run)
    return "".join(out)


def _cpp_gap(text: str, a, b) -> tuple[int, int] | None:
    """The byte span of blanks between two adjacent nodes on one line, None if anything else
    (a comment, a line break) lies between."""
    data = text.encode("utf-8")
    gap = data[a.end_byte : b.start_byte]
    if gap.strip() or b"\n" in gap:
        return None
    return a.end_byte, b.start_byte


def cpp_operator_spacing(text: str) -> str:
    """The blanks around binary and assignment operators, after commas of argument lists and
    after a cast toggled: removed where there are some, one added where there is none
    (`a + b` -> `a+b`, `(uint32_t) 1` -> `(uint32_t)1`, `f(a, b)` -> `f(a,b)`)."""
    spans: list[tuple[int, int]] = []
    for node in _cpp_nodes(text, ("binary_expression", "assignment_expression", "argument_list")):
        if _in_preproc(node):
            continue
        children = list(node.children)
        if node.type == "argument_list":
            pairs = [(c, children[i + 1]) for i, c in enumerate(children[:-1]) if c.type == ","]
        else:
            operator = node.child_by_field_name("operator")
            if operator is None:
                continue
            at = children.index(next(c for c in children if c.id == operator.id))
            pairs = [(children[at - 1], operator), (operator, children[at + 1])]
        spans += [span for a, b in pairs if (span := _cpp_gap(text, a, b)) is not None]
    for node in _cpp_nodes(text, ("cast_expression",)):
        close = next((c for c in node.children if c.type == ")"), None)
        value = node.child_by_field_name("value")
        if close is not None and value is not None and not _in_preproc(node):
            span = _cpp_gap(text, close, value)
            if span is not None:
                spans.append(span)
    data = text.encode("utf-8")
    pieces, last = [], 0
    for start, end in sorted(set(spans)):
        if start < last:
            continue
        pieces += [data[last:start], b"" if end > start else b" "]
        last = end
    pieces.append(data[last:])
    return b"".join(pieces).decode("utf-8")


ARITHMETIC = ("+", "-", "*", "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&&", "||")
WRAPPABLE = ("identifier", "number_literal", "field_expression", "call_expression")


def cpp_inner_parentheses(text: str) -> str:
    """Redundant brackets around the operands of arithmetic, comparison and logical operators
    that are names, numbers, members, calls or such operations themselves, and around a whole
    call argument: `std::max(1, a / b)` -> `std::max((1), ((a) / (b)))`."""
    inserts: list[tuple[int, str]] = []
    for node in _cpp_nodes(text, ("binary_expression", "argument_list")):
        if _in_preproc(node) or _in_template_context(node):
            continue
        if node.type == "binary_expression":
            operator = node.child_by_field_name("operator")
            if operator is None or operator.type not in ARITHMETIC:
                continue
            operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        else:
            operands = [c for c in node.named_children if c.type != "comment"]
        for operand in operands:
            if operand is None or operand.type not in (*WRAPPABLE, "binary_expression"):
                continue
            inserts += [(operand.start_byte, "("), (operand.end_byte, ")")]
    return _insert_bytes(text, inserts)


def _in_template_context(node) -> bool:
    """Inside template arguments or a declaration's type, where `<` may not be an operator."""
    while node is not None:
        if node.type in ("template_argument_list", "template_parameter_list", "type_descriptor"):
            return True
        node = node.parent
    return False


def cpp_shape(text: str) -> list[str]:
    """The parse of a C++ text without its layout and redundant brackets: the named node types
    and leaf tokens in order, comments left out and a parenthesized expression replaced by its
    content. Two texts with the same shape are one program to every reader."""
    root = Parser(CPP).parse(text.encode("utf-8")).root_node
    shape: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.type == "parenthesized_expression" and node.named_child_count == 1:
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) == 1:
                stack.append(inner[0])
                continue
        if node.child_count == 0:
            shape.append(node.text.decode("utf-8", "replace"))
        elif node.is_named:
            shape.append(node.type)
        stack.extend(reversed(node.children))
    return shape


SHAPE_CHECKED = ("cpp-operator-spacing", "cpp-inner-parentheses")


CPP_EDITS: dict[str, Callable[[str], str]] = {
    "cpp-comments": cpp_comments,
    "cpp-case-braces": cpp_case_braces,
    "cpp-extra-parentheses": cpp_extra_parentheses,
    "cpp-reordered-case-labels": cpp_reordered_case_labels,
    "cpp-operator-spacing": cpp_operator_spacing,
    "cpp-inner-parentheses": cpp_inner_parentheses,
}


def _cpp_errors(text: str) -> int:
    root = Parser(CPP).parse(text.encode("utf-8")).root_node
    return sum(1 for _ in _cpp_nodes(text, ("ERROR",))) + int(root.has_error)


def edit_cpp(text: str, kinds: tuple[str, ...]) -> str:
    """`text` under each C++ edit of `kinds`; an edit that gives tree-sitter-cpp more errors
    than the original has is left out for this file."""
    errors = _cpp_errors(text)
    for kind in kinds:
        edited = CPP_EDITS[kind](text)
        if edited != text and _cpp_errors(edited) <= errors:
            if kind in SHAPE_CHECKED and cpp_shape(edited) != cpp_shape(text):
                continue  # the edit changed how the program parses: not a form-only edit
            text = edited
    return text


ALL_KINDS = tuple(PYTHON_EDITS) + tuple(CPP_EDITS)


def edit_file(path: str, text: str, kinds: tuple[str, ...]) -> str:
    """The edit of one engine file by its language; other files are left as they are."""
    if path.endswith(".py"):
        return edit_python(text, tuple(k for k in kinds if k in PYTHON_EDITS))
    if path.endswith((".cpp", ".h", ".hpp", ".cc")):
        return edit_cpp(text, tuple(k for k in kinds if k in CPP_EDITS))
    return text
