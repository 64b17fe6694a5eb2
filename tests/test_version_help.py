"""`--version` and `-h` on both tools; the version has one source, pyproject.toml."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import version as version_module
from apron.command_line.cli import app as apron_app
from apron.extractors.commands.cli import app as extract_app

REPO = Path(__file__).resolve().parent.parent
PYPROJECT_VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
runner = CliRunner()


def test_version_is_pyprojects():
    assert version_module.version() == PYPROJECT_VERSION == metadata.version("apron-extract")


def test_version_falls_back_to_pyproject_without_an_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(version_module.metadata, "version", missing)
    assert version_module.version() == PYPROJECT_VERSION
    monkeypatch.setattr(version_module, "PYPROJECT", REPO / "no-such-pyproject.toml")
    assert version_module.version() == "unknown"


@pytest.mark.parametrize(("app", "name"), [(apron_app, "apron"), (extract_app, "extract")])
def test_version_flag(app, name):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{name} {PYPROJECT_VERSION}\n"


@pytest.mark.parametrize(
    ("app", "args", "usage"),
    [
        # what follows [OPTIONS] differs between typer versions
        (apron_app, ["-h"], "Usage: apron [OPTIONS]"),
        (apron_app, ["plan", "-h"], "Usage: apron plan [OPTIONS]"),
        (extract_app, ["-h"], "Usage: extract [OPTIONS]"),
        (extract_app, ["support", "-h"], "Usage: extract support [OPTIONS]"),
    ],
)
def test_short_help(app, args, usage):
    result = runner.invoke(app, args, prog_name=usage.split()[1])
    assert result.exit_code == 0, result.output
    assert usage in result.stdout
    assert "Show this message and exit." in result.stdout
