"""`extract` outside a checkout: `--project DIR` (alias `--root`) names the checkout; without
one, commands that only read the pins and generated/ use those installed with the package, and
a command that writes says to pass --project."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.errors import UsageError
from apron.extractors.runner.pipeline import find_project, installed_project

runner = CliRunner()


def test_installed_project_is_the_packaged_pins_and_generated():
    installed = installed_project()
    assert installed is not None and installed.installed
    assert (installed.pins / "vllm.toml").is_file()
    assert (installed.generated / "vllm" / "__init__.py").is_file()


def test_outside_a_checkout_a_reading_command_uses_the_installed_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_project(read_only=True) == installed_project()
    with pytest.raises(UsageError, match=r"pass --project DIR"):
        find_project()  # a command that writes never falls back
    with pytest.raises(
        UsageError, match=r"at or above .*; run from the checkout or pass --project"
    ):
        find_project(tmp_path, read_only=True)  # a named folder that is no checkout


def test_support_and_offline_check_run_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(
        app, ["support", "--engine", "llamacpp", "--arch", "JambaForCausalLM", "--json"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["answer"] == "yes"
    done = runner.invoke(app, ["check", "--offline"])
    assert done.exit_code == 0, done.output
    assert "re-renders byte for byte" in done.output
    assert not (tmp_path / "pins").exists() and not (tmp_path / "generated").exists()


def test_writing_outside_a_checkout_names_the_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["--engine", "vllm"])
    assert done.exit_code == 2
    assert "pass --project DIR" in done.output


def test_project_and_root_name_the_same_checkout(project):
    for option in ("--project", "--root"):
        done = runner.invoke(app, ["check", "--offline", option, str(project.root)])
        assert done.exit_code == 0, done.output
