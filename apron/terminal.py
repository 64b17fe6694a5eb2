"""The one escaping function for strings from input (a config, a file header, a path, an option)
on their way to a terminal: characters that are not printable (C0 and C1 controls such as ESC,
DEL, and the Unicode format characters that reorder or hide text, e.g. U+202E) are written as
Python escapes (\\x1b, \\u202e), and a string longer than MAX_SHOWN characters is cut, with its
length said. `printable` is the last guard on whole messages: it escapes every such character
but the line breaks apron writes itself."""

from __future__ import annotations

import os

MAX_SHOWN = (
    200  # characters of one input string shown in a message or a view (a cache path is ~150)
)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _escaped(text: str, keep: str = "") -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else _escape(c) for c in text)


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """`value` as a terminal may show it: a string or a path as itself, anything else as its repr, with
    unprintable characters escaped and anything past `limit` characters cut, ending
    "... (N characters)" (for a long list, tuple or dict: "... (list of N items)", its repr
    built from the first items only)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        text, size = value, f"{len(value):,} characters"
    elif isinstance(value, list | tuple | dict) and len(value) > limit:
        first = list(value.items() if isinstance(value, dict) else value)[:limit]
        text, size = repr(first), f"{type(value).__name__} of {len(value):,} items"
        return f"{_escaped(text[:limit])}... ({size})"
    else:
        text = repr(value)
        size = f"{len(text):,} characters"
    if len(text) <= limit:
        return _escaped(text)
    return f"{_escaped(text[:limit])}... ({size})"


def printable(message: str) -> str:
    """A whole message with every unprintable character escaped except the line breaks (and
    tabs) apron puts there; no cutting (each input string in it was cut by `shown`)."""
    return _escaped(message, keep="\n\t")


def printable_json(text: str) -> str:
    """JSON text with every unprintable character but its line breaks written as a JSON
    escape (\\u202e; a pair of surrogates above U+FFFF): still the same JSON value, and safe
    on a terminal (pydantic writes U+202E and C1 controls raw)."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable() or char == "\n":
            out.append(char)
        elif ord(char) > 0xFFFF:
            high, low = divmod(ord(char) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return "".join(out)
