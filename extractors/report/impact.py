"""Calculator impact of a bump: `apron` over the sample configs, before and after.

Both sides run in this process on their own directory: the committed `generated/`, and a copy
with the rendered files of the bump laid over it. apron's strict loader reads each directory
on its own (no import path edits), so the calculator sees exactly the constraints it would see
after the pull request is merged."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from apron.errors import ConstraintsError
from apron.impact import sample_figures


@dataclass(frozen=True)
class ImpactChange:
    sample: str
    field: str
    before: str
    after: str


def compare(
    before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]
) -> list[ImpactChange]:
    changes = []
    for sample in sorted(set(before) | set(after)):
        old, new = before.get(sample, {}), after.get(sample, {})
        for field in sorted(set(old) | set(new)):
            if old.get(field) != new.get(field):
                changes.append(
                    ImpactChange(sample, field, str(old.get(field, "-")), str(new.get(field, "-")))
                )
    return changes


def calculator_impact(paths, rendered: dict[str, str]) -> tuple[list[ImpactChange] | None, str]:
    """(changes, note). None when the calculator cannot run; the note says why."""
    with tempfile.TemporaryDirectory(prefix="apron-impact-") as tmp:
        after = Path(tmp) / "generated"
        shutil.copytree(paths.generated, after, ignore=shutil.ignore_patterns("__pycache__"))
        for relative, text in rendered.items():
            target = after / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        try:
            before_figures = sample_figures(paths.generated)
            after_figures = sample_figures(after)
        except ConstraintsError as err:
            return None, f"the calculator did not run ({err})"
    return compare(before_figures, after_figures), ""
