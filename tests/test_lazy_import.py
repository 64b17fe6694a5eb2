"""`import apron` is lazy (PEP 562): an `extract` run imports no calculator module, and
`apron.plan` is always the function, never the orchestrator module apron.planning.planner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CALCULATOR = ("apron.planning", "apron.engines", "apron.mechanisms")


def imported_after(code: str) -> list[str]:
    """The apron modules a fresh interpreter has imported after running code."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('apron'))))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_the_extract_command_imports_no_calculator_module():
    loaded = imported_after("import apron.extractors.commands.cli")
    assert "apron.extractors.commands.cli" in loaded
    assert [m for m in loaded if m.startswith(CALCULATOR)] == []


def test_import_apron_imports_only_the_package():
    assert imported_after("import apron") == ["apron"]


def test_apron_plan_is_the_function_even_after_the_planner_module_is_imported():
    import apron
    import apron.planning.planner

    assert callable(apron.plan) and apron.plan is apron.planning.planner.plan
    assert apron.plan.__module__ == "apron.planning.planner"
    assert "plan" in dir(apron) and "planner" not in apron.__all__
