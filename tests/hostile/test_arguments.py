"""Arguments and pins are checked before git sees them, and git only ever gets an argument list.

Extends tests/test_pins.py (the check functions one by one) and tests/test_vllm_e2e.py (CLI
messages): here every bad value goes through the real entry points (pipeline.run, plan_bump,
the CLI) while every process start is recorded, to show that no git process sees it."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.bump import apply_bump, plan_bump
from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import PinError, UsageError
from tests.conftest import commit_tree, git, write_pin
from tests.hostile.helpers import UPSTREAM, clean_tree, folder_bytes
from tests.vllm_miniatures import REGISTRY_PATH, REGISTRY_V2

VLLM = ENGINES["vllm"]
runner = CliRunner()
_REAL_POPEN_INIT = subprocess.Popen.__init__
_POPEN_SIGNATURE = inspect.signature(_REAL_POPEN_INIT)


class Spawned(list):
    """(args, shell) of every process started, whoever started it (the git runner,
    the persistent cat-file reader): all of them construct subprocess.Popen."""

    def git_argvs(self) -> list[list[str]]:
        return [
            list(args)
            for args, _ in self
            if not isinstance(args, str | bytes) and Path(str(args[0])).name == "git"
        ]


@pytest.fixture
def spawned(monkeypatch) -> Spawned:
    calls = Spawned()

    def recording_init(self, *args, **kwargs):
        bound = _POPEN_SIGNATURE.bind(self, *args, **kwargs)
        calls.append((bound.arguments["args"], bound.arguments.get("shell", False)))
        _REAL_POPEN_INIT(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", recording_init)
    return calls


@pytest.fixture(scope="module")
def vllm_repo(tmp_path_factory):
    """Built once: these tests only read it (each test has its own cache and project)."""
    repo = tmp_path_factory.mktemp("vllm-engine")
    git(repo, "init", "-q", "-b", "main")
    shas = [
        commit_tree(repo, clean_tree("vllm"), "v1"),
        commit_tree(repo, {REGISTRY_PATH: REGISTRY_V2}, "v2"),
    ]
    return repo, shas


# ------------------------------------------------------------------ commits


BAD_COMMITS = [
    "-abc123",
    "--upload-pack=touch /tmp/owned",
    "--output=/tmp/x",
    "-c core.pager=sh",
    "abc 123",
    " abcdef12",
    "abcdef12 ",
    "abcdef12\n",
    "abc\tdef",
    "abcdef12\0",
    "HEAD",
    "main",
    "v1.0",
    "origin/main",
    "abcdef12^",
    "abcdef12~1",
    "abcdef12..abcdef13",
    "g" * 40,
    "a" * 41,
    "abc",
    "ａｂｃｄｅｆ１２",  # full-width digits are not hex
]


@pytest.mark.parametrize("commit", BAD_COMMITS)
def test_bad_commit_argument_never_reaches_git(project, vllm_repo, spawned, commit):
    repo, shas = vllm_repo
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    with pytest.raises(UsageError, match="is not a hexadecimal SHA"):
        run(VLLM, project, commit=commit, source=str(repo))
    assert spawned == []
    assert not (project.generated / "vllm").exists()


@pytest.mark.parametrize(
    "commit",
    [
        "--upload-pack=touch /tmp/owned" + "0" * 12,
        "-" + "a" * 39,
        "a" * 39 + " ",
        "A" * 40,
        "g" * 40,
        "a" * 40 + "\n",
        "a" * 12,
    ],
)
def test_bad_pin_commit_never_reaches_git(project, vllm_repo, spawned, commit):
    repo, _ = vllm_repo
    (project.pins / "vllm.toml").write_text(  # a JSON string is a valid TOML basic string
        f'url = "{UPSTREAM["vllm"]}"\ncommit = {json.dumps(commit)}\ndate = "2026-01-01"\n',
        encoding="utf-8",
    )
    with pytest.raises(PinError, match="commit"):
        run(VLLM, project, commit=None, source=str(repo))
    assert spawned == []


@pytest.mark.parametrize(
    "to",
    [
        "--upload-pack=touch /tmp/x",
        "-b",
        "main..HEAD",
        "a b",
        "refs/../../x",
        "x\0y",
        "@{-1}",
        "main\n",
        "abcdef12\n",
    ],
)
def test_bad_bump_target_never_reaches_git(project, vllm_repo, spawned, to):
    repo, shas = vllm_repo
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    with pytest.raises(UsageError, match="neither a hexadecimal SHA nor a plain branch"):
        plan_bump(VLLM, project, to=to, source=str(repo), with_impact=False)
    assert spawned == []


# ------------------------------------------------------------------ sources


BAD_SOURCES = [
    "ssh://host/repo",
    "git://host/repo",
    "http://plain/repo",
    "ftp://host/repo",
    "ext::sh -c touch% /tmp/owned",
    "ext::sh",
    "git@github.com:a/b",
    "user@host:repo",
    "-uhack",
    "--upload-pack=touch",
    "https://github.com/a/b --upload-pack=touch",
    "https://github.com/a/b\n--upload-pack=x",
    "https://github.com/a\0b",
    "file:///srv/x\x1b[2J",
    "HTTPS://github.com/a/b",
    "file://srv x",
    "fd::3\n",
]


@pytest.mark.parametrize("source", BAD_SOURCES)
def test_bad_source_never_reaches_git(project, vllm_repo, spawned, source):
    _, shas = vllm_repo
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    with pytest.raises(UsageError):
        run(VLLM, project, commit=None, source=source)
    assert spawned == []


@pytest.mark.parametrize("source", ["ext::sh -c touch% /tmp/owned", "ssh://host/r", "-uhack"])
def test_bad_source_from_the_environment_never_reaches_git(
    project, vllm_repo, spawned, monkeypatch, source
):
    _, shas = vllm_repo
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    monkeypatch.setenv("APRON_SOURCE_VLLM", source)
    with pytest.raises(UsageError):
        run(VLLM, project, commit=None, source=None)
    assert spawned == []


@pytest.mark.parametrize(
    "url", ["ext::sh -c touch% /tmp/owned", "ssh://host/r", "git@github.com:a/b", "http://h/r"]
)
def test_bad_pin_url_never_reaches_git(project, spawned, url):
    write_pin(project, "vllm", url, "a" * 40)
    with pytest.raises(PinError, match="must start with https:// or file://"):
        run(VLLM, project, commit=None, source=None)
    assert spawned == []


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/a/b --upload-pack=touch",
        "https://github.com/a/b\\nimport os",
        "file:///srv/x\\u001b[2J",
    ],
)
def test_pin_url_with_whitespace_or_control_characters_is_rejected(
    project, vllm_repo, spawned, url
):
    """Checked in the pin itself: the pin URL is also written into generated headers, even
    when --source names another place to read from."""
    repo, _ = vllm_repo
    write_pin(project, "vllm", url, "a" * 40)  # TOML unescapes \\n and \\u001b
    with pytest.raises(PinError, match="whitespace or a control character"):
        run(VLLM, project, commit=None, source=str(repo))
    assert spawned == []


# ------------------------------------------------------------------ pin paths


@pytest.mark.parametrize(
    "engine",
    [
        "../vllm",
        "vllm/../../etc/passwd",
        "/etc/passwd",
        "vllm\0",
        "..",
        "vllm.toml",
        "VLLM;touch x",
    ],
)
def test_cli_engine_id_cannot_name_a_path(project, spawned, engine):
    result = runner.invoke(app, ["--engine", engine, "--root", str(project.root)])
    assert result.exit_code == 2 and "unknown engine" in result.output
    assert "Traceback" not in result.output and spawned == []


def test_pin_symlinked_out_of_pins_is_rejected_and_left_alone(
    project, vllm_repo, tmp_path, spawned
):
    repo, shas = vllm_repo
    outside = tmp_path / "elsewhere.toml"
    outside.write_text(f'url = "{UPSTREAM["vllm"]}"\ncommit = "{shas[0]}"\ndate = "2026-01-01"\n')
    os.symlink(outside, project.pins / "vllm.toml")
    before = outside.read_bytes()
    with pytest.raises(PinError, match="escapes"):
        run(VLLM, project, commit=None, source=str(repo))
    with pytest.raises(PinError, match="escapes"):
        plan_bump(VLLM, project, to=shas[1], source=str(repo), with_impact=False)
    assert spawned == [] and outside.read_bytes() == before
    assert not (project.generated / "vllm").exists()


def test_bump_cannot_write_a_pin_through_a_symlink_made_after_planning(
    project, vllm_repo, tmp_path
):
    """The pin path is checked again when the bump writes it; generated/ and the symlink's
    target are left as they were."""
    repo, shas = vllm_repo
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    plan = plan_bump(VLLM, project, to=shas[1], source=str(repo), with_impact=False)
    outside = tmp_path / "elsewhere.toml"
    outside.write_text("untouched\n")
    (project.pins / "vllm.toml").unlink()
    os.symlink(outside, project.pins / "vllm.toml")
    before = folder_bytes(project.root)
    with pytest.raises(PinError, match="escapes"):
        apply_bump(project, plan)
    assert folder_bytes(project.root) == before and outside.read_text() == "untouched\n"


# ------------------------------------------------------------------ git never through a shell


def test_git_is_always_an_argument_list_never_a_shell(project, vllm_repo, spawned, monkeypatch):
    repo, shas = vllm_repo
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    run(VLLM, project, commit=None, source=str(repo))  # fresh cache: init, fetch, blob reads
    run(VLLM, project, commit=shas[0], source=str(repo))  # cached
    run(VLLM, project, commit=shas[1][:10], source=str(repo), write=False)  # abbreviated SHA
    monkeypatch.setenv("APRON_SOURCE_VLLM", str(repo))
    plan = plan_bump(VLLM, project, to="main", source=None, with_impact=True)  # ls-remote
    apply_bump(project, plan)
    assert spawned, "the recorder saw no process at all"
    for args, shell in spawned:
        assert not shell, args
        assert isinstance(args, list | tuple) and all(
            isinstance(a, str | os.PathLike) for a in args
        ), args
    argvs = spawned.git_argvs()
    assert len(argvs) >= 4 and {"fetch", "ls-remote", "cat-file"} <= {w for a in argvs for w in a}
    others = [args for args, _ in spawned if list(args) not in argvs]
    assert all(Path(str(a[0])) == Path(sys.executable) for a in others), others  # apron impact
