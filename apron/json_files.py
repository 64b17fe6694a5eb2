"""JSON input (config.json, an index, a quantization config, a safetensors header) parsed with
limits: read through apron.input_files (regular files, a byte cap), at most MAX_JSON_ITEMS
values and MAX_JSON_DEPTH levels of nesting (so memory stays bounded whatever the bytes are), and
integers checked as they are parsed (at most MAX_INT_DIGITS digits, below 2**63 in magnitude).
NaN and Infinity parse (Mamba configs hold `Infinity`); the fields apron computes from are
checked where they are read (apron.config, apron.bounds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apron.errors import ApronInputError
from apron.input_files import read_input
from apron.terminal import shown

MAX_JSON_DEPTH = 64  # Hugging Face configs nest 3-4 levels; a header 2
# values (counted as commas and colons, which bounds them from above): a safetensors header takes
# about 9 per tensor, so 2,000,000 is over 200,000 tensors in one file; the largest published
# headers hold a few thousand
MAX_JSON_ITEMS = 2_000_000
MAX_INT_DIGITS = 19  # a signed 64-bit integer has at most 19 digits
MAX_INT = 2**63 - 1


def _parse_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS or abs(int(text)) > MAX_INT:
        raise ApronInputError(
            f"integer {shown(text, 24)} ({len(digits):,} digits) is out of range; apron reads "
            "integers up to 2**63-1"
        )
    return int(text)


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """The deepest nesting of lists and dicts in a parsed value, counted without recursion and
    no further than limit + 1."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, list | dict):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend(
            (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
        )
    return deepest


def parse_json(data: bytes, where: str) -> Any:
    """JSON from `data` within the item, depth and number limits; ApronInputError prefixed by
    `where`. UnicodeDecodeError and json.JSONDecodeError propagate for the caller's message."""
    items = data.count(b",") + data.count(b":")
    if items > MAX_JSON_ITEMS:
        raise ApronInputError(
            f"{where} holds over {MAX_JSON_ITEMS:,} JSON values ({items:,} commas and colons); "
            f"apron reads at most {MAX_JSON_ITEMS:,}"
        )
    text = data.decode("utf-8")
    try:
        value = json.loads(text, parse_int=_parse_int)
    except ApronInputError as err:
        raise ApronInputError(f"{where}: {err}") from err
    except RecursionError as err:
        raise ApronInputError(
            f"{where} nests deeper than {MAX_JSON_DEPTH} levels; apron reads JSON up to "
            f"{MAX_JSON_DEPTH} levels"
        ) from err
    depth = json_depth(value)
    if depth > MAX_JSON_DEPTH:
        raise ApronInputError(
            f"{where} nests deeper than {MAX_JSON_DEPTH} levels; apron reads JSON up to "
            f"{MAX_JSON_DEPTH} levels"
        )
    return value


def read_json_object(path: Path, cap: int, what: str) -> dict[str, Any]:
    """The JSON object in `path` (a regular file of at most `cap` bytes, apron.input_files);
    ApronInputError naming the file when it cannot be read, is not JSON or not an object."""
    raw = read_input(path, cap, what)
    try:
        data = parse_json(raw, shown(path))
    except (UnicodeDecodeError, ValueError) as err:
        raise ApronInputError(f"{shown(path)} is not valid JSON ({shown(str(err))})") from err
    if not isinstance(data, dict):
        raise ApronInputError(f"{shown(path)} is JSON but not an object")
    return data
