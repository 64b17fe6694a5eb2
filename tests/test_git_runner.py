"""The git runner: no variable of the caller's environment redirects git, only the sources'
transports are allowed, and a failure keeps the line that names its cause."""

from __future__ import annotations

import pytest

from apron.extractors.git.runner import GitFailed, git_env, run_git


@pytest.mark.parametrize(
    "name",
    [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "GIT_CONFIG_PARAMETERS",
        "GIT_EXEC_PATH",
        "GIT_SSH_COMMAND",
        "GIT_PROXY_COMMAND",
        "GIT_INDEX_FILE",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    ],
)
def test_a_variable_that_redirects_git_is_not_passed_on(monkeypatch, name):
    monkeypatch.setenv(name, "/somewhere/else")
    env = git_env()
    assert name not in env
    assert env["GIT_ALLOW_PROTOCOL"] == "file:https:ssh"
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_tracing_and_other_variables_are_kept(monkeypatch):
    monkeypatch.setenv("GIT_TRACE_PACKET", "/tmp/trace")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy")
    env = git_env(GIT_NO_LAZY_FETCH="1")
    assert env["GIT_TRACE_PACKET"] == "/tmp/trace" and env["HTTPS_PROXY"] == "http://proxy"
    assert env["GIT_NO_LAZY_FETCH"] == "1"


def test_a_config_from_the_environment_cannot_run_a_command(monkeypatch, tmp_path):
    marker = tmp_path / "ran"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"touch {marker}; false")
    repo = tmp_path / "r"
    run_git("init", "-q", str(repo))
    run_git("status", "--porcelain", cwd=repo)
    assert not marker.exists()


def test_the_ext_transport_is_refused(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(GitFailed) as err:
        run_git("ls-remote", f"ext::sh -c touch% {marker}", cwd=tmp_path)
    assert not marker.exists()
    assert "ext" in err.value.last_line


def test_the_cause_line_is_kept_not_the_hint_after_it():
    stderr = (
        "fatal: detected dubious ownership in repository at '/m'\n"
        "To add an exception for this directory, call:\n\n"
        "\tgit config --global --add safe.directory /m\n"
    )
    failed = GitFailed(["fetch"], 128, stderr)
    assert failed.last_line == "fatal: detected dubious ownership in repository at '/m'"
    assert "dubious ownership" in str(failed)
    assert GitFailed(["x"], 1, "warning: a\nsomething else\n").last_line == "something else"
    assert GitFailed(["x"], 3, "").last_line == "exit status 3"
