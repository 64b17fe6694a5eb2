"""The project checkout's own git: the branch `bump --branch` creates, checked before anything
is written, and its one commit. Never pushes."""

from __future__ import annotations

import re
from pathlib import Path

from apron.extractors.errors import UsageError
from apron.extractors.git.runner import GitFailed, run_git
from apron.extractors.runner.writer import WriteError

BRANCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,200}\Z")


def check_new_branch(repo_root: Path, branch: str) -> None:
    """`branch` is a valid, new branch name in the git checkout at `repo_root`."""
    if not BRANCH_NAME.match(branch) or ".." in branch or branch.endswith((".lock", "/", ".")):
        raise UsageError(f"--branch {branch!r} is not an allowed branch name")
    try:
        run_git("check-ref-format", "--branch", branch)
    except GitFailed as err:
        raise UsageError(f"--branch {branch!r} is not a valid branch name") from err
    try:
        top = run_git("rev-parse", "--show-toplevel", cwd=repo_root).strip()
    except GitFailed as err:
        raise UsageError(
            f"--branch needs the project {repo_root} to be a git checkout ({err.last_line})"
        ) from err
    if Path(top).resolve() != repo_root.resolve():
        raise UsageError(f"--branch: {repo_root} is inside the git checkout {top}, not its root")
    try:
        run_git("show-ref", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repo_root)
    except GitFailed:
        return
    raise UsageError(f"--branch {branch}: a branch of that name already exists")


def commit_on_new_branch(repo_root: Path, branch: str, paths: list[str], message: str) -> str:
    """Create `branch` at HEAD of the project checkout, switch to it and commit `paths` as one
    commit; returns its SHA."""
    check_new_branch(repo_root, branch)
    try:
        run_git("switch", "--quiet", "-c", branch, cwd=repo_root)
        run_git("add", "--", *paths, cwd=repo_root)
        run_git("commit", "--quiet", "-m", message, "--", *paths, cwd=repo_root)
        return run_git("rev-parse", "HEAD", cwd=repo_root).strip()
    except GitFailed as err:
        raise WriteError(
            f"cannot commit the bump on branch {branch} in {repo_root}: {err.last_line}"
        ) from err
