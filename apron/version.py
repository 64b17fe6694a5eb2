"""The project's version, kept in one place: pyproject.toml. Installed, it is read from the
distribution's metadata; in a checkout without an install, from pyproject.toml itself."""

from __future__ import annotations

import json
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


def editable_install() -> bool:
    """True when apron runs from a checkout: installed with `pip install -e` (PEP 610's
    direct_url.json says dir_info.editable) or not installed at all; False for a wheel or an
    index install."""
    try:
        direct_url = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return True
    try:
        info = json.loads(direct_url) if direct_url else {}
    except ValueError:
        return False
    dir_info = info.get("dir_info") if isinstance(info, dict) else None
    return isinstance(dir_info, dict) and dir_info.get("editable") is True


def extra_install_hint(extra: str) -> str:
    """The pip command that adds an optional extra, as this copy of apron was installed."""
    if editable_install():
        return f"pip install -e '.[{extra}]'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


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
