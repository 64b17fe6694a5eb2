"""Issue 27: the shared options (--engine, --source, --root) work before or after the command:
`extract --engine vllm bump` is `extract bump --engine vllm`, for bump, history and check as for
support; an option of `extract` itself before a command that does not take it is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()
UNKNOWN = "unknown engine 'nosuch'"
COMMANDS = {
    "bump": ["bump"],
    "history": ["history", "--fact", "registry_rows", "--since", "0" * 40],
    "check": ["check", "--offline"],
}


def message(result) -> str:
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("before", [True, False])
def test_engine_before_or_after_the_command(command, before):
    # an unknown id is the first thing checked: the answer shows the --engine was read
    engine = ["--engine", "nosuch"]
    args = [*engine, *COMMANDS[command]] if before else [*COMMANDS[command], *engine]
    result = runner.invoke(app, [*args, "--root", str(REPO)])
    assert result.exit_code == 2, result.output
    assert UNKNOWN in message(result)
    assert "Missing option" not in message(result)


@pytest.mark.parametrize("command", ["bump", "history"])
def test_root_before_the_command(tmp_path, command):
    nowhere = tmp_path / "no-checkout"
    args = ["--root", str(nowhere), "--engine", "vllm", *COMMANDS[command]]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert str(nowhere) in message(result)


@pytest.mark.parametrize("command", ["bump", "history"])
def test_no_engine_anywhere(command):
    result = runner.invoke(app, [*COMMANDS[command], "--root", str(REPO)])
    assert result.exit_code == 2
    assert f"give --engine (after or before `{command}`)" in message(result)


@pytest.mark.parametrize(("flag", "value"), [("--commit", "abc"), ("--dry-run", None)])
def test_an_option_of_extract_itself_before_bump_is_refused(flag, value):
    args = [flag, *([value] if value else []), "bump", "--engine", "vllm", "--root", str(REPO)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"{flag} is an option of `extract` itself, not of `extract bump`" in message(result)


SHA = "0231dd5467c61dca76f66269b6298a43772b3519"
UNREACHABLE = "https://127.0.0.1:9/vllm.git"  # nothing listens on port 9: refused at once


@pytest.mark.parametrize(
    "args",
    [
        ["--engine", "vllm", "--commit", SHA, "--source", UNREACHABLE, "--dry-run"],
        ["--engine", "vllm", "bump", "--to", SHA, "--source", UNREACHABLE],
        ["--engine", "vllm", "bump", "--source", UNREACHABLE],  # the source's HEAD: ls-remote
    ],
    ids=["extract at a commit", "bump --to", "bump to HEAD"],
)
def test_an_unreachable_source_names_both_ways_to_give_one(args):
    result = runner.invoke(app, [*args, "--root", str(REPO)])
    assert result.exit_code == 2, result.output
    assert "offline, give a local clone or mirror with --source PATH or APRON_SOURCE_VLLM=PATH" in (
        message(result)
    )
