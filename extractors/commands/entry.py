"""The `extract` console script: the command line when the [extract] extra is installed, else
one message naming the extra and exit 2 (the calculator installs without the parsers)."""

from __future__ import annotations

import sys

# top-level modules of the [extract] extra (pyproject.toml); any other missing module is a bug
EXTRA_MODULES = frozenset(
    {
        "tree_sitter",
        "tree_sitter_python",
        "tree_sitter_cpp",
        "markdown_it",
        "mdit_py_plugins",
        "platformdirs",
        "filelock",
    }
)
INSTALL_HINT = "pip install 'apron-extract[extract]'"


def main() -> None:
    try:
        from apron.extractors.commands.cli import main as cli_main
    except ModuleNotFoundError as err:
        missing = (err.name or "").partition(".")[0]
        if missing not in EXTRA_MODULES:
            raise
        print(
            f"error: extract needs the extractor's parsers, which this install leaves out "
            f"({missing} is not installed): {INSTALL_HINT}",
            file=sys.stderr,
        )
        sys.exit(2)
    cli_main()
