"""Calculator impact of a bump: `apron` over the sample configs, before and after.

Each side runs in a subprocess whose import path puts that side's `generated/` first, so the
calculator sees exactly the constraints it would see after the pull request is merged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# The subprocess must see only the `generated/` under its root: an editable install would
# otherwise supply a missing `generated.<engine>` from the project checkout.
SCRIPT = """
import importlib.abc, importlib.machinery, json, os, sys
ROOT = os.environ["APRON_IMPACT_ROOT"]

class OnlyThisGenerated(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "generated" and not name.startswith("generated."):
            return None
        search = [os.path.join(ROOT, *name.split(".")[:-1])]
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(name)
        return spec

sys.meta_path.insert(0, OnlyThisGenerated())
from apron.impact import sample_figures
print(json.dumps(sample_figures(), sort_keys=True))
"""
TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class ImpactChange:
    sample: str
    field: str
    before: str
    after: str


def _figures(root: Path) -> dict[str, dict[str, str]]:
    env = {**os.environ, "APRON_IMPACT_ROOT": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last)
    return json.loads(done.stdout)


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
        after_root = Path(tmp)
        shutil.copytree(
            paths.generated, after_root / "generated", ignore=shutil.ignore_patterns("__pycache__")
        )
        for relative, text in rendered.items():
            target = after_root / "generated" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        try:
            before = _figures(paths.root)
            after = _figures(after_root)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as err:
            return None, f"the calculator did not run ({err})"
    return compare(before, after), ""
