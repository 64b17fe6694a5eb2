"""The git cache under concurrency, damage and interrupted fetches."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.git import GitSource, cache_root
from apron.extractors.runner.factcache import DB_NAME
from tests.conftest import write_pin
from tests.vllm_miniatures import tree_v1

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
CLI = "from apron.extractors.commands.cli import main; main()"


@pytest.fixture
def setup(project, make_repo):
    repo, shas = make_repo([(tree_v1(), "v1")])
    write_pin(project, "vllm", URL, shas[0])
    return project, repo, shas[0]


def cache_repo(repo: Path) -> Path:
    return GitSource("vllm", str(repo)).cache_path


def extract_process(project, repo) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLI,
            "--engine",
            "vllm",
            "--source",
            str(repo),
            "--root",
            str(project.root),
            "--dry-run",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def test_second_process_waits_on_the_lock_then_succeeds(setup):
    project, repo, sha = setup
    lock = FileLock(str(cache_repo(repo)) + ".lock")
    cache_repo(repo).parent.mkdir(parents=True, exist_ok=True)
    with lock:
        waiting = extract_process(project, repo)
        time.sleep(2.0)
        assert waiting.poll() is None  # blocked on the lock we hold
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert f"vllm @ {sha}" in out


def test_two_processes_at_once_both_succeed(setup):
    project, repo, sha = setup
    first, second = extract_process(project, repo), extract_process(project, repo)
    for proc in (first, second):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "mla_model_types: 3" in out


def _warm(project, repo):
    run(VLLM, project, commit=None, source=str(repo), write=False)
    (cache_root() / DB_NAME).unlink(missing_ok=True)  # make the next run read git again
    return cache_repo(repo)


def _run_with_notice(project, repo):
    result = run(VLLM, project, commit=None, source=str(repo), write=False)
    assert len(result.facts.fact("mla_model_types").records) == 3
    return result.notices


def test_truncated_pack_is_detected_rebuilt_once_and_reported(setup):
    project, repo, _ = setup
    cache = _warm(project, repo)
    for pack in (cache / "objects" / "pack").glob("*.pack"):
        pack.chmod(0o644)
        pack.write_bytes(pack.read_bytes()[: pack.stat().st_size // 2])
    notices = _run_with_notice(project, repo)
    assert len(notices) == 1 and "was damaged" in notices[0] and "rebuilt it" in notices[0]
    assert _run_with_notice(project, repo) == ()  # the rebuilt cache is healthy


def test_missing_objects_are_fetched_again_or_rebuilt(setup):
    project, repo, _ = setup
    cache = _warm(project, repo)
    for pack in (cache / "objects" / "pack").iterdir():
        pack.unlink()  # every object the cache had is gone; the refs still name the commit
    notices = _run_with_notice(project, repo)  # git fetches them again, or the cache is rebuilt
    assert all("was damaged" in n for n in notices) and len(notices) <= 1
    assert _run_with_notice(project, repo) == ()


def test_a_cache_that_is_no_repository_is_rebuilt(setup):
    project, repo, _ = setup
    cache = _warm(project, repo)
    (cache / "HEAD").write_text("garbage\n")
    notices = _run_with_notice(project, repo)
    assert "not a repository" in notices[0]


def test_an_interrupted_fetch_leaves_a_usable_cache(setup, make_repo):
    project, repo, _ = setup
    cache = _warm(project, repo)
    # what `kill -9` during `git fetch` leaves behind: git's own locks and a partial pack
    (cache / "shallow.lock").write_text("")
    (cache / "refs" / "apron").mkdir(parents=True, exist_ok=True)
    (cache / "refs" / "apron" / "x.lock").write_text("")
    (cache / "objects" / "pack" / "tmp_pack_interrupted").write_bytes(b"PACK\0\0\0\2partial")
    from tests.conftest import commit_tree

    newer = commit_tree(repo, {"README.md": "new commit, so the next run must fetch"}, "v2")
    result = run(VLLM, project, commit=newer, source=str(repo), write=False)
    assert result.facts.commit == newer and result.notices == ()


def test_a_damaged_fact_cache_database_starts_afresh(setup):
    project, repo, _ = setup
    run(VLLM, project, commit=None, source=str(repo), write=False)
    (cache_root() / DB_NAME).write_bytes(b"not a database at all" * 100)
    result = run(VLLM, project, commit=None, source=str(repo), write=False)
    assert len(result.facts.fact("registry_rows").records) == 10
