"""The unknowns apron may answer for a measured figure (conformance/vllm/accept_unknown.json):
each entry names a figure (or a list, or "*"), the inputs it covers ("*" for all) and optional settings, the text
apron's reason must contain, and why the figure is not yet apron's. Applied to the rows as
their `accept_unknown` when the measurements are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load(path: Path) -> list[dict[str, Any]]:
    entries = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    for number, entry in enumerate(entries):
        if not {"figure", "inputs", "reason", "why"} <= set(entry):
            raise SystemExit(f"{path}: entry {number} needs figure, inputs, reason and why")
    return entries


def _matches(entry: dict[str, Any], row: dict[str, Any]) -> bool:
    name = Path(row["input"]).name
    figures = entry["figure"]
    if figures != "*" and row["figure"] not in ([figures] if isinstance(figures, str) else figures):
        return False
    if entry["inputs"] != "*" and name not in entry["inputs"]:
        return False
    wanted = entry.get("settings", {})
    return all(row["settings"].get(k) == v for k, v in wanted.items())


def annotate(row: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The row with accept_unknown set from the first entry that covers it (or removed)."""
    row = {k: v for k, v in row.items() if k != "accept_unknown"}
    for entry in entries:
        if _matches(entry, row):
            return {**row, "accept_unknown": entry["reason"]}
    return row
