"""Reading JSON input (config.json, an index, a quantization config, a safetensors header) with
limits: regular files only, a byte limit, a nesting depth limit, and numbers checked as they are
parsed (integers at most MAX_INT_DIGITS digits and below 2**63 in magnitude). NaN and
Infinity parse (Mamba configs hold `Infinity`); the fields apron computes from are checked finite."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from apron.errors import ApronInputError

MAX_JSON_DEPTH = 64  # Hugging Face configs nest 3-4 levels; a header 2
MAX_INT_DIGITS = 19  # a signed 64-bit integer has at most 19 digits
MAX_INT = 2**63 - 1
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def open_regular_file(path: Path, what: str):
    """`path` opened for binary reading, refused (ApronInputError) unless it is a regular file:
    checked before it is opened, and again on the open descriptor, which is opened non-blocking
    so a FIFO swapped in between cannot hang the open. OSError propagates."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ApronInputError(f"{path} is not a regular file; expected a {what}")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise ApronInputError(f"{path} is not a regular file; expected a {what}")
    return handle


def read_regular_file(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `max_bytes` (a FIFO, a device
    or a symlink to one is refused before it is opened); ApronInputError naming the file."""
    try:
        with open_regular_file(path, what) as handle:
            if os.fstat(handle.fileno()).st_size > max_bytes:
                raise ApronInputError(f"{path} is over {max_bytes:,} B; not a {what}")
            data = handle.read(max_bytes + 1)
    except OSError as err:
        raise ApronInputError(f"cannot read {path}: {err.strerror or err}") from err
    if len(data) > max_bytes:
        raise ApronInputError(f"{path} is over {max_bytes:,} B; not a {what}")
    return data


def _parse_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS or abs(int(text)) > MAX_INT:
        raise ApronInputError(
            f"integer {text[:24]}{'...' if len(text) > 24 else ''} ({len(digits):,} digits) is "
            f"out of range; apron reads integers up to 2**63-1"
        )
    return int(text)


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in `data` (brackets inside strings ignored)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRING.sub(b'""', data)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_json(data: bytes, where: str) -> Any:
    """JSON from `data` with the depth and number limits; ApronInputError prefixed by `where`.
    UnicodeDecodeError and json.JSONDecodeError propagate for the caller's own message."""
    text = data.decode("utf-8")
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise ApronInputError(
            f"{where} nests {depth:,} levels deep; apron reads JSON up to {MAX_JSON_DEPTH} levels"
        )
    try:
        return json.loads(
            text,
            parse_int=_parse_int,
        )
    except ApronInputError as err:
        raise ApronInputError(f"{where}: {err}") from err
    except RecursionError as err:
        raise ApronInputError(f"{where} nests too deep to read") from err


def read_json_object(path: Path, max_bytes: int, what: str) -> dict[str, Any]:
    """The JSON object in `path`; ApronInputError naming the file when it is over `max_bytes`
    (said as "not a `what`"), not a regular file, unreadable, not JSON or not an object."""
    raw = read_regular_file(path, max_bytes, what)
    try:
        data = parse_json(raw, str(path))
    except (UnicodeDecodeError, ValueError) as err:
        raise ApronInputError(f"{path} is not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise ApronInputError(f"{path} is JSON but not an object")
    return data
