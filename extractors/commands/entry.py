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


VERSION_FLAGS = ("--version",)
HELP_FLAGS = ("--help", "-h")
HELP = """Usage: extract [OPTIONS] COMMAND [ARGS]...

  Extract engine constraints at pinned commits into generated/ (extract, bump, check,
  support, history). This install leaves out the extractor's parsers: {hint}

Options:
  --version  Print the version and exit.
  -h, --help Show this message and exit.
"""


def _without_parsers(argv: list[str], missing: str) -> None:
    """`extract --version` and `extract -h` answer in any install; anything else names the
    extra and exits 2."""
    if argv[:1] and argv[0] in VERSION_FLAGS:
        from apron.version import version

        print(f"extract {version()}")
        sys.exit(0)
    if not argv or argv[0] in HELP_FLAGS:
        print(HELP.format(hint=INSTALL_HINT))
        sys.exit(0)
    print(
        f"error: extract needs the extractor's parsers, which this install leaves out "
        f"({missing} is not installed): {INSTALL_HINT}",
        file=sys.stderr,
    )
    sys.exit(2)


def main() -> None:
    try:
        from apron.extractors.commands.cli import main as cli_main
    except ModuleNotFoundError as err:
        missing = (err.name or "").partition(".")[0]
        if missing not in EXTRA_MODULES:
            raise
        _without_parsers(sys.argv[1:], missing)
    cli_main()
