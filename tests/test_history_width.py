"""`extract history` prints its table at the terminal's width: 80 columns in a pipe (or
$COLUMNS), cells wrapped at spaces and items never split."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from tests.test_history import registry_repo  # noqa: F401  (a fixture)


@pytest.mark.parametrize("columns", ["80", "120"])
def test_history_table_follows_the_width(registry_repo, project, monkeypatch, columns):  # noqa: F811
    repo, shas = registry_repo
    monkeypatch.setenv("COLUMNS", columns)
    result = CliRunner().invoke(
        app,
        ["history", "-e", "vllm", "-f", "registry_rows", "--since", shas[0], "--until",
         shas[-1], "--source", str(repo), "--root", str(project.root)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert max(len(line) for line in table) <= int(columns)
    assert any(len(line) == int(columns) for line in table)  # the table takes the width
    assert "…" not in result.stdout
    assert any("MistralForCausalLM" in line for line in table)
