"""Reading the committed engine measurements (conformance/<engine>/<commit>/): one loader for
every engine's conformance test, so each test only maps apron's answer onto a figure."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"
RECORD_KEYS = {"input", "settings", "figure", "value", "refused", "accept_unknown"}


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One figure an engine reported for one input at some settings."""

    engine: str
    commit: str
    input: Path
    settings: dict[str, Any] = field(hash=False)
    figure: str
    value: Any = field(hash=False)
    refused: str | None = None
    accept_unknown: str | None = None

    @property
    def label(self) -> str:
        settings = ",".join(f"{k}={v}" for k, v in sorted(self.settings.items()))
        return f"{self.engine}@{self.commit[:8]}:{self.input.name}[{settings}]:{self.figure}"


def commit_dirs(engine: str) -> list[Path]:
    """The measured commits of one engine (folders named by a full SHA)."""
    root = CONFORMANCE / engine
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and len(p.name) == 40 and _is_hex(p.name))


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def measurements(engine: str, commit: str) -> list[Measurement]:
    """Every line of conformance/<engine>/<commit>/measurements.jsonl, checked for shape."""
    folder = CONFORMANCE / engine / commit
    path = folder / "measurements.jsonl"
    found: list[Measurement] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        unknown_keys = set(row) - RECORD_KEYS
        if unknown_keys or not {"input", "settings", "figure"} <= set(row):
            raise ValueError(f"{path}:{number}: keys {sorted(row)} (allowed {sorted(RECORD_KEYS)})")
        source = folder / row["input"]
        if not source.is_file():
            raise ValueError(f"{path}:{number}: input {row['input']} is not in {folder}")
        found.append(
            Measurement(
                engine=engine,
                commit=commit,
                input=source,
                settings=row["settings"],
                figure=row["figure"],
                value=row.get("value"),
                refused=row.get("refused"),
                accept_unknown=row.get("accept_unknown"),
            )
        )
    return found


def facts(engine: str, commit: str) -> dict[str, Any]:
    """conformance/<engine>/<commit>/facts.json: the static facts the engine reported."""
    return json.loads((CONFORMANCE / engine / commit / "facts.json").read_text(encoding="utf-8"))
