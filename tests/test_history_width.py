"""`extract history` prints its table at the terminal's width: 80 columns in a pipe (or
$COLUMNS). Dates, SHAs and PR numbers are never cut at any width: the item wraps instead, and
where no table fits, each row is a block of lines."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.history import fit_rows, row_blocks
from tests.test_history import registry_repo  # noqa: F401  (a fixture)

COMMIT = re.compile(r"\d{4}-\d\d-\d\d [0-9a-f]{10}( #\d+)?")


@pytest.mark.parametrize("columns", ["40", "60", "80", "120"])
def test_history_keeps_dates_shas_and_prs_whole_at_any_width(
    registry_repo,  # noqa: F811
    project,
    monkeypatch,
    columns,
):
    repo, shas = registry_repo
    monkeypatch.setenv("COLUMNS", columns)
    result = CliRunner().invoke(
        app,
        ["history", "-e", "vllm", "-f", "registry_rows", "--since", shas[0], "--until",
         shas[-1], "--source", str(repo), "--root", str(project.root)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines if line[:1] in "┏┃┡│└ " or not line) <= int(columns)
    words = result.stdout.split()
    for sha in shas[1:]:  # every commit named in a cell is named whole
        if any(sha[:4] in w for w in words):
            assert sha[:10] in words
    assert any("MistralForCausalLM" in line for line in lines)


LONG = "Qwen2_5OmniThinkerForConditionalGeneration (multimodal)"
COLUMNS = ["item", "first commit with it", "last commit with it", "removed in", "note"]
ROWS = [(LONG, "2025-01-01 7500160c98 #18123", "2025-03-01 f982d98502 #18999", "", "")]


def test_a_long_item_wraps_and_the_commit_columns_keep_their_words():
    rows, widths = fit_rows(COLUMNS, ROWS, 80)
    assert sum(widths) + 3 * len(COLUMNS) + 1 <= 80
    assert all(w >= 10 for w in widths[1:3])  # a date or a SHA fits its column whole
    assert rows[0][1:] == ROWS[0][1:]
    item_lines = rows[0][0].split("\n")
    assert "".join(item_lines).replace(" ", "") == LONG.replace(" ", "")
    assert max(len(line) for line in item_lines) <= widths[0] < len(LONG)


def test_where_no_table_fits_each_row_is_a_block():
    assert fit_rows(COLUMNS, ROWS, 56) is None
    assert row_blocks(COLUMNS, ROWS, 56) == [
        LONG,
        "  first commit with it: 2025-01-01 7500160c98 #18123",
        "  last commit with it: 2025-03-01 f982d98502 #18999",
    ]
