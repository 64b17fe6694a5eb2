"""JSON input (config.json, an index, a quantization config, a safetensors header) parsed with
limits: read through apron.input_files (regular files, a byte cap), at most MAX_JSON_ITEMS
values and MAX_JSON_DEPTH levels of nesting (so memory stays bounded whatever the bytes are), and
integers checked as they are parsed (at most MAX_INT_DIGITS digits, below 2**63 in magnitude).
NaN and Infinity parse (Mamba configs hold `Infinity`); the fields apron computes from are
checked where they are read (apron.config, apron.bounds)."""

from __future__ import annotations

import json
import re
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
            f"integer {text[:24]}{'...' if len(text) > 24 else ''} ({len(digits):,} digits) is "
            "out of range; apron reads integers up to 2**63-1"
        )
    return int(text)


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """The deepest nesting of lists and dicts in a parsed value, counted level by level without
    recursion (only containers are visited) and no further than limit + 1."""
    level = [value] if type(value) in (list, dict) else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        below: list[Any] = []
        for node in level:
            children = node.values() if type(node) is dict else node
            below.extend([c for c in children if type(c) is list or type(c) is dict])
        level = below
    return depth


# a run of 19 digits: only then can an integer reach 2**63 (19 digits), so only then is each
# integer parsed through _parse_int (a Python call per integer); else by json's own C parser
_LONG_DIGITS = re.compile(f"[0-9]{{{MAX_INT_DIGITS}}}")


def parse_json(data: bytes, where: str) -> Any:
    """JSON from `data` within the item, depth and number limits; ApronInputError prefixed by
    `where`. UnicodeDecodeError and json.JSONDecodeError propagate for the caller's message."""
    return parse_json_text(data.decode("utf-8"), where)


def parse_json_text(text: str, where: str) -> Any:
    """`parse_json` of decoded text (a caller that drops its bytes first holds one copy less)."""
    items = text.count(",") + text.count(":")
    if items > MAX_JSON_ITEMS:
        raise ApronInputError(
            f"{where} holds over {MAX_JSON_ITEMS:,} JSON values ({items:,} commas and colons); "
            f"apron reads at most {MAX_JSON_ITEMS:,}"
        )
    checked_ints = _parse_int if _LONG_DIGITS.search(text) else None
    try:
        value = json.loads(text, parse_int=checked_ints)
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
