"""`extract bump` checks every argument and output path before its first write: a bad branch
name, a title or body path it cannot write, and nothing in generated/ or pins/ changes."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import git, write_pin
from tests.vllm_miniatures import CONVERTOR_PATH, CONVERTOR_V2, tree_v1

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
runner = CliRunner()


@pytest.fixture
def pinned(project, make_repo, monkeypatch):
    repo, shas = make_repo([(tree_v1(), "v1"), ({CONVERTOR_PATH: CONVERTOR_V2}, "v2")])
    write_pin(project, "vllm", URL, shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    git(project.root, "init", "-q", "-b", "main")
    git(project.root, "add", "-A")
    git(project.root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    monkeypatch.setenv("APRON_SOURCE_VLLM", str(repo))
    return project, shas


def files(project: ProjectPaths) -> dict[str, bytes]:
    return {
        str(p.relative_to(project.root)): p.read_bytes()
        for p in sorted(project.root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and "__pycache__" not in p.parts
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--branch=-x"], "--branch '-x' is not an allowed branch name"),
        (["--branch", "a..b"], "--branch 'a..b' is not an allowed branch name"),
        (["--branch", "main"], "--branch main: a branch of that name already exists"),
        (["--pr-title", "/proc/version"], "--pr-title /proc/version is in a kernel file system"),
        (["--pr-body", "{root}/no/dir/b.md"], "/no/dir/b.md: the folder "),
        (["--pr-body", "/"], "--pr-body / is a directory, not a file"),
        (["--pr-title", "{root}/fifo"], "/fifo is not a regular file (a FIFO"),
        (["--pr-body", "{root}/generated/body.md"], "is inside generated/ or pins/"),
        # issue 26: --pr-body .git/config was overwritten after generated/ and the pin moved
        (["--pr-body", "{root}/.git/config", "--branch", "apron/t1"], "inside a .git directory"),
        (["--full-diff", "{root}/.git/hooks/post-commit"], "inside a .git directory"),
        (["--pr-title", "{root}/to-git-config"], "is a symlink; apron does not write through"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_written(pinned, extra, message):
    project, shas = pinned
    os.mkfifo(project.root / "fifo")  # a special file (never /dev/null: old code replaced it)
    (project.root / "to-git-config").symlink_to(project.root / ".git" / "config")
    git_config = (project.root / ".git" / "config").read_bytes()
    before = files(project)
    args = ["bump", "--engine", "vllm", "--to", shas[1], "--root", str(project.root)]
    result = runner.invoke(app, args + [a.format(root=project.root) for a in extra])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert files(project) == before
    assert not (project.root / "no").exists()
    assert (project.root / ".git" / "config").read_bytes() == git_config
    assert not (project.root / ".git" / "hooks" / "post-commit").exists()
    assert git(project.root, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_a_branch_needs_a_git_checkout(project, make_repo, monkeypatch):
    repo, shas = make_repo([(tree_v1(), "v1"), ({CONVERTOR_PATH: CONVERTOR_V2}, "v2")])
    write_pin(project, "vllm", URL, shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    before = files(project)
    result = runner.invoke(
        app,
        ["bump", "--engine", "vllm", "--to", shas[1], "--source", str(repo)]
        + ["--root", str(project.root), "--branch", "apron/bump-vllm"],
    )
    assert result.exit_code == 2
    assert "--branch needs the project" in result.output and "to be a git checkout" in result.output
    assert files(project) == before


def test_good_arguments_write_everything(pinned, tmp_path):
    project, shas = pinned
    result = runner.invoke(
        app,
        ["bump", "--engine", "vllm", "--to", shas[1], "--root", str(project.root)]
        + ["--pr-title", str(tmp_path / "t.txt"), "--pr-body", str(tmp_path / "b.md")]
        + ["--branch", "apron/bump-vllm"],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "t.txt").read_text().startswith("Bump vLLM to")
    assert git(project.root, "status", "--porcelain") == ""
    assert git(project.root, "rev-parse", "--abbrev-ref", "HEAD") == "apron/bump-vllm"
