"""A module's text reduced to the top-level statements that bind names by import, assignment
or class definition: each top-level `class` becomes `class Name: ...`; top-level functions,
decorators, plain `import` statements, string statements and the comments above the first
statement are dropped; `from` imports are set aside (a reader may parse them only when it needs
them); everything else (assignments, top-level if/try/with blocks) stays as written.

For a reader that takes from a class definition only its name, never looks into a function,
and reads `from` imports only (the EntryClass scan of SGLang's models package): model files are
mostly class bodies, so the parse gets a thirtieth of the bytes. The pass is line-based. A top-level statement starts on a line whose
first character is code (not a closing bracket), outside a triple-quoted string as counting the
triple quotes tells and not after a backslash continuation, and ends where the next one starts.
A statement is kept as written whenever that is in doubt: its brackets do not balance outside
strings and comments (a line at column 0 inside brackets), a line in it starts with code
outside the strings a tokenizer of strings and comments finds, or a simple statement holds a
`;`. The caller parses the full text instead whenever the reduced text does not parse cleanly.
Lines are not kept: the reader must not report positions."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A line starting with code, except a closing bracket (which never starts a statement).
TOP_LEVEL = re.compile(rb"\n[^ \t\f\r\n#)\]}]")
NOT_A_START = b" \t\f\r\n#)]}"
TRIPLE_QUOTES = (b'"""', b"'''")
HEADER = re.compile(rb"(class|def|async[ \t]+def)[ \t]+(\w+)")
STRING_OR_COMMENT = re.compile(
    rb'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*'
)
UNREAD_SIMPLE = (b"import ", b"import\t", b'"', b"'")  # `import x`; a string statement
FROM_IMPORT = (b"from ", b"from\t")
NOT_BRACKETS = bytes(set(range(256)) - set(b"()[]{}"))


def _triple_quotes(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, quote) of every triple quote, in order."""
    found = []
    for quote in TRIPLE_QUOTES:
        at = data.find(quote)
        while at >= 0:
            found.append((at, quote))
            at = data.find(quote, at + 3)
    return sorted(found)


def _line_starts(data: bytes) -> list[tuple[int, bool]]:
    """(offset, may start a statement) of every line whose first character is code: False
    inside a triple-quoted string (as far as counting the triple quotes tells) or after a line
    that ends in a backslash."""
    quotes = _triple_quotes(data)
    offsets = [m.start() + 1 for m in TOP_LEVEL.finditer(data)]
    if data[:1] and data[:1] not in NOT_A_START:
        offsets.insert(0, 0)
    lines = []
    at, open_quote = 0, b""
    for position in offsets:
        while at < len(quotes) and quotes[at][0] < position:
            quote = quotes[at][1]
            at += 1
            if not open_quote:
                open_quote = quote
            elif quote == open_quote:
                open_quote = b""
        before = position - 2  # the last character of the line above
        while before >= 0 and data[before] in b" \t\r":
            before -= 1
        continued = before >= 0 and data[before] == ord("\\")
        lines.append((position, not open_quote and not continued))
    return lines


def _brackets_balance(code: bytes) -> bool:
    brackets = code.translate(None, NOT_BRACKETS)
    return (
        brackets.count(b"(") == brackets.count(b")")
        and brackets.count(b"[") == brackets.count(b"]")
        and brackets.count(b"{") == brackets.count(b"}")
    )


def _balanced(chunk: bytes, spans_lines: bool) -> bool:
    """The brackets of `chunk` balance, outside strings and comments; with `spans_lines` (lines
    starting with code inside it were taken to be in strings), those lines are in strings or
    comments as a tokenizer of strings reads them too."""
    if not spans_lines and _brackets_balance(chunk):
        return True
    code = STRING_OR_COMMENT.sub(b"", chunk)
    return _brackets_balance(code) and (not spans_lines or TOP_LEVEL.search(code) is None)


FROM = b"from"  # a `from` import, set aside


def _reduced(data: bytes, start: int, end: int, spans_lines: bool) -> bytes | None:
    """What the statement data[start:end] becomes (FROM: set aside), or None to keep it."""
    header = HEADER.match(data, start, end)
    if header is not None:
        kind, name = header.groups()
        replacement = b"class " + name + b": ...\n" if kind == b"class" else b""
    elif data.startswith(b"@", start):
        replacement = b""  # a decorator: what it decorates is a statement of its own
    elif data.startswith(UNREAD_SIMPLE, start) and data.find(b";", start, end) < 0:
        replacement = b""
    elif data.startswith(FROM_IMPORT, start) and data.find(b";", start, end) < 0:
        replacement = FROM
    else:
        return None
    return replacement if _balanced(data[start:end], spans_lines) else None


def _only_comments(region: bytes) -> bool:
    return all(not line.strip() or line.lstrip().startswith(b"#") for line in region.splitlines())


@dataclass(frozen=True)
class Outline:
    """`names`: the reduced module; `imports`: its top-level `from` imports as written, in
    order (empty when they stay in `names`: when another statement kept may import too, so
    the order of all imports is that of `names`)."""

    names: str
    imports: str


def top_level_outline(text: str) -> Outline:
    """`text` reduced to the top-level statements a reader of names and imports needs: each
    class as `class Name: ...`; functions, decorators, plain `import` statements, string
    statements and the comments before the first statement dropped; `from` imports set aside.

    A statement runs from its line to the next line that may start one; it is reduced only when
    its brackets balance and, where lines in between start with code, a tokenizer of strings
    and comments finds those inside strings too, so what follows it is a statement as the full
    parse reads it."""
    data = text.encode("utf-8")
    lines = _line_starts(data)
    first = lines[0][0] if lines else len(data)
    kept: list[bytes] = []
    imports: list[bytes] = []
    in_place: list[bytes] = []  # kept and imports in source order
    kept_from = first if _only_comments(data[:first]) else 0
    starts = [(index, start) for index, (start, may_start) in enumerate(lines) if may_start]
    for at, (index, start) in enumerate(starts):
        following = starts[at + 1] if at + 1 < len(starts) else (len(lines), len(data))
        end = following[1]
        replacement = _reduced(data, start, end, following[0] > index + 1)
        if replacement is None:
            continue
        kept.append(data[kept_from:start])
        in_place.append(data[kept_from:start])
        if replacement is FROM:
            imports.append(data[start:end])
            in_place.append(data[start:end])
        else:
            kept.append(replacement)
            in_place.append(replacement)
        kept_from = end
    kept.append(data[kept_from:])
    in_place.append(data[kept_from:])
    names = b"".join(kept)
    if b"import" in names:
        return Outline(b"".join(in_place).decode("utf-8"), "")
    return Outline(names.decode("utf-8"), b"".join(imports).decode("utf-8"))
