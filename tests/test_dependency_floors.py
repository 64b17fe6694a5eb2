"""The declared minimum versions are ones the project runs with (checked in a venv pinned to
them): lower ones fail in known ways, listed in pyproject.toml above `dependencies`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# the calculator's dependencies and the extractor's extra: .ci/floors pins both
DEPENDENCIES = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["extract"]
PARSERS = ("tree-sitter", "tree-sitter-python", "tree-sitter-cpp", "markdown-it-py")
# the first version that works, and what the one below it does
WORKING_FLOORS = {
    "typer": (0, 16),  # 0.12.0: "Type not yet supported: str | None"; 0.12.5 misparses --sample
    "tree-sitter": (0, 25),  # 0.23/0.24: no tree_sitter.QueryCursor
    "filelock": (3, 13),  # 3.12.x: FileLock has no is_singleton
    "pydantic": (2, 10),  # below: a warning about the model_ namespace on every run
}


def floors() -> dict[str, tuple[int, ...]]:
    found = {}
    for spec in DEPENDENCIES:
        name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([\d.]+)", spec).groups()
        found[name.lower().replace("_", "-")] = tuple(int(p) for p in version.split("."))
    return found


def test_floors_are_versions_that_work():
    declared = floors()
    assert {name: declared[name] for name in WORKING_FLOORS} == WORKING_FLOORS


def test_every_dependency_has_a_floor():
    assert all(">=" in spec for spec in DEPENDENCIES)
    assert "huggingface-hub" in floors()


def test_the_calculator_installs_without_the_parsers():
    """`pip install apron-extract` is the calculator: the parsers are the [extract] extra, and
    [test] (the README's install) pulls that extra in."""
    base = {re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower() for spec in PROJECT["dependencies"]}
    assert not base & set(PARSERS)
    assert "apron-extract[extract]" in PROJECT["optional-dependencies"]["test"]
