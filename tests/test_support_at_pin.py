"""`extract support` at the pin answers from the committed generated/ with no engine source;
`--engine` may come before `support`; an unreachable source names --source and
APRON_SOURCE_<ENGINE>."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app

REPO = Path(__file__).resolve().parent.parent
LLAMACPP_PIN = tomllib.loads((REPO / "pins/llamacpp.toml").read_text())["commit"]
runner = CliRunner()


@pytest.fixture(autouse=True)
def no_source(tmp_path, monkeypatch):
    """Every engine's source is a path that does not exist: a read of it would fail."""
    for engine in ("VLLM", "LLAMACPP", "SGLANG", "TRTLLM"):
        monkeypatch.setenv(f"APRON_SOURCE_{engine}", str(tmp_path / "no-such-clone"))


def support(*args: str):
    return runner.invoke(app, [*args, "--root", str(REPO)])


def test_yes_from_generated_without_source():
    result = support("support", "--engine", "llamacpp", "--arch", "JambaForCausalLM", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["answer"], answer["commit"], answer["classes"]) == (
        "yes",
        LLAMACPP_PIN,
        ["hybrid"],
    )
    assert answer["decided_by"] == "hf_architectures"
    assert "from the committed generated/llamacpp at the pin (no source)" in answer["notes"]


def test_no_from_generated_without_source():
    result = support("support", "--engine", "llamacpp", "--arch", "NoSuchModelForCausalLM")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("llamacpp NoSuchModelForCausalLM: no\n")


def test_engine_before_the_command():
    result = support("--engine", "llamacpp", "support", "--arch", "JambaForCausalLM")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("llamacpp JambaForCausalLM: yes\n")


def test_no_engine_at_all():
    result = support("support", "--arch", "JambaForCausalLM")
    assert result.exit_code == 2
    assert "give --engine: vllm, llamacpp, sglang or trtllm" in result.stderr


def test_unreachable_source_names_the_ways_to_give_one():
    result = runner.invoke(
        app,
        ["support", "--engine", "llamacpp", "--arch", "JambaForCausalLM", "--commit",
         LLAMACPP_PIN, "--source", "https://127.0.0.1:9/llama.cpp.git", "--root", str(REPO)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "cannot fetch from the source" in message
    assert "give a local clone or mirror with --source PATH or APRON_SOURCE_LLAMACPP=PATH" in (
        message
    )
