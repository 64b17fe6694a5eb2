"""Markdown table helpers shared by every page the project renders for people."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def md_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple | list):
        text = ", ".join(str(v) for v in value)
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(md_cell(v) for v in row) + " |")
    return lines
