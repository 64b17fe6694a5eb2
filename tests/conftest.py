"""Shared fixtures: temporary git repositories built from hand-written miniature trees."""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from apron.extractors.runner.pipeline import ProjectPaths

REPO_ROOT = Path(__file__).resolve().parent.parent

# The tests start hundreds of Python subprocesses (the command line, kill and lock tests), each
# importing the project. Where bytecode caching is off (PYTHONDONTWRITEBYTECODE, as in some
# sandboxes) each start compiles ~300 modules from source, seconds each on a busy machine; the
# subprocesses cache their bytecode in one folder outside the checkout instead.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault(
    "PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"apron-tests-pycache-{os.getuid()}")
)


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def commit_tree(
    repo: Path,
    files: Mapping[str, str | bytes | None],
    message: str,
    date: str = "2026-01-01T00:00:00+00:00",
) -> str:
    """Make the work tree match `files` (None deletes a path) and commit; returns the SHA."""
    for path, content in files.items():
        target = repo / path
        if content is None:
            if target.exists():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    git(repo, "add", "-A")
    env_date = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    os.environ.update(env_date)
    try:
        git(repo, "commit", "-q", "--allow-empty", "-m", message)
    finally:
        for key in env_date:
            os.environ.pop(key, None)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def make_repo(tmp_path):
    """`make_repo([(files, message, date), ...])` -> (repo path, [commit SHAs])."""

    def build(commits, name: str = "engine") -> tuple[Path, list[str]]:
        repo = tmp_path / name
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        shas = []
        for entry in commits:
            files, message, *rest = entry
            shas.append(commit_tree(repo, files, message, *(rest or [])))
        return repo, shas

    return build


_cache_numbers = itertools.count()


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own git cache; no test touches the user's cache. The folder is named,
    not made (apron makes it when it first caches), so a test that caches nothing costs no
    temp directory (a tmp_path per test was a third of the conformance tests' time)."""
    cache = tmp_path_factory.getbasetemp() / "apron-caches" / str(next(_cache_numbers))
    monkeypatch.setenv("APRON_CACHE_DIR", str(cache))
    monkeypatch.setenv(
        "HF_HUB_OFFLINE", "1"
    )  # no test reaches the Hub (tests that read it mock it)
    for key in list(os.environ):
        if key.startswith("APRON_SOURCE_"):
            monkeypatch.delenv(key)


@pytest.fixture
def project(tmp_path) -> ProjectPaths:
    """An empty project checkout (pins/ and generated/) in a temp dir."""
    root = tmp_path / "project"
    (root / "pins").mkdir(parents=True)
    (root / "generated").mkdir()
    return ProjectPaths(root)


def write_pin(
    project: ProjectPaths, engine: str, url: str, commit: str, date: str = "2026-01-01"
) -> None:
    (project.pins / f"{engine}.toml").write_text(
        f'url = "{url}"\ncommit = "{commit}"\ndate = "{date}"\n', encoding="utf-8"
    )


def mirror(engine: str) -> str | None:
    """The real engine checkout named by APRON_MIRROR_<ENGINE>, or None."""
    return os.environ.get(f"APRON_MIRROR_{engine.upper()}") or None


SNAPSHOTS = Path(__file__).parent / "snapshots"


def assert_snapshot(name: str, text: str, shas: list[str]) -> None:
    """`text` (first and last commit replaced by {OLD} and {NEW}) equals tests/snapshots/<name>;
    APRON_UPDATE_SNAPSHOTS=1 rewrites the snapshot instead."""
    text = text.replace(shas[0], "{OLD}").replace(shas[-1], "{NEW}")
    path = SNAPSHOTS / name
    if os.environ.get("APRON_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs; rerun with APRON_UPDATE_SNAPSHOTS=1 to accept"
    )
