"""Help text at 80 columns (a pipe, or COLUMNS=80): no option name or word is cut with an
ellipsis, no line is wider than 80, and every option of `apron plan` is named whole."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apron.command_line.cli import app as apron_app
from apron.extractors.commands.cli import app as extract_app

runner = CliRunner()
PLAN_OPTIONS = (
    "--context", "--kv-dtype", "--batch", "--json", "--sample", "--tp", "--gpu-memory",
    "--memory-fraction", "--verbose", "--weights", "--weights-bytes", "--params",
    "--weights-dtype", "--help", "--gpu", "--revision", "--block-size", "--kv-memory", "--pp",
    "--cache-type-k", "-ctk", "--cache-type-v", "-ctv", "--flash-attn", "-fa", "--kv-unified",
    "-kvu", "--swa-full", "--batch-size", "-b", "--ubatch-size", "-ub",
)  # fmt: skip


@pytest.mark.parametrize(
    ("app", "args"),
    [
        (apron_app, []),
        (apron_app, ["plan"]),
        (apron_app, ["plot"]),
        (apron_app, ["gguf"]),
        (extract_app, []),
        (extract_app, ["support"]),
        (extract_app, ["history"]),
        (extract_app, ["bump"]),
        (extract_app, ["check"]),
    ],
)
def test_help_is_whole_at_80_columns(app, args, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = runner.invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_plan_help_names_every_option_and_the_engine_aliases(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = runner.invoke(apron_app, ["plan", "--help"]).stdout
    names = {word.strip("│ ,") for line in out.splitlines() for word in line.split()}
    assert set(PLAN_OPTIONS) <= names
    text = " ".join(out.replace("│", " ").split())
    for alias in ("--max-model-len", "--context-length", "--kv-cache-dtype", "--max-num-seqs",
                  "--tensor-parallel-size", "--gpu-memory-utilization", "--mem-fraction-static"):  # fmt: skip
        assert alias in text
