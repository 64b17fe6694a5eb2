"""The default view of `apron plan --batch N` states the batch's total, not only --verbose."""

from __future__ import annotations

from typer.testing import CliRunner

from apron.command_line.cli import app

runner = CliRunner()


def default_view(*args: str) -> str:
    result = runner.invoke(app, ["plan", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_batch_total_of_kv():
    out = default_view("--sample", "llama-3.1-8b", "--context", "8192", "--batch", "8")
    # 131,072 B/token x 8,192 tokens x 8 sequences = 8,589,934,592 B = 8.00 GiB
    assert "\n  batch 8: KV 8.00 GiB in total\n" in out


def test_batch_total_of_kv_and_state():
    out = default_view("--sample", "jamba-v0.1", "--context", "4096", "--batch", "3")
    # (16,384 B x 4,096 + 8,716,288 B) x 3 = 227,475,456 B = 217 MiB
    assert "\n  batch 3: KV + state 217 MiB in total\n" in out


def test_no_total_line_for_one_sequence():
    out = default_view("--sample", "llama-3.1-8b", "--context", "8192")
    assert "in total" not in out
