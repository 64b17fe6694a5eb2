"""Reading a small JSON object file that sits beside a config (an index, a quantization config)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apron.errors import ApronInputError


def read_json_object(path: Path, max_bytes: int, what: str) -> dict[str, Any]:
    """The JSON object in `path`; ApronInputError naming the file when it is over `max_bytes`
    (said as "not a `what`"), unreadable, not JSON or not an object."""
    try:
        if path.stat().st_size > max_bytes:
            raise ApronInputError(f"{path} is over {max_bytes // 1_000_000} MB; not a {what}")
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as err:
        raise ApronInputError(f"cannot read {path}: {err.strerror or err}") from err
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ApronInputError(f"{path} is not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise ApronInputError(f"{path} is JSON but not an object")
    return data
