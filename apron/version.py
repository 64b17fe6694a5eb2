"""The project's version, kept in one place: pyproject.toml. Installed, it is read from the
distribution's metadata; in a checkout without an install, from pyproject.toml itself."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path
from typing import Annotated

DISTRIBUTION = "apron-extract"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def version() -> str:
    """apron-extract's version: the installed metadata, else pyproject.toml, else "unknown"."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    try:
        return str(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return "unknown"


def version_option(program: str):
    """The eager `--version` option of a typer command line: prints `<program> <version>`."""
    import typer

    def print_version(value: bool) -> None:
        if value:
            typer.echo(f"{program} {version()}")
            raise typer.Exit()

    return Annotated[
        bool,
        typer.Option(
            "--version", callback=print_version, is_eager=True, help="Print the version and exit."
        ),
    ]
