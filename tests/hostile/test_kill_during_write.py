"""SIGKILL at every step of a write, for `extract` and for `bump`: the next start recovers the
journaled change, so generated/ and pins/ are all-old or all-new and nothing is left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from apron.extractors.commands.check import check_offline
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.runner.pipeline import ProjectPaths
from apron.extractors.runner.writer import leftovers, project_lock, recover_interrupted_write
from tests.conftest import REPO_ROOT, write_pin
from tests.hostile.fork_server import ForkServer
from tests.hostile.helpers import UPSTREAM, clean_tree, folder_bytes
from tests.vllm_miniatures import CONVERTOR_PATH, CONVERTOR_V2, REGISTRY_PATH, REGISTRY_V2

VLLM = ENGINES["vllm"]


@pytest.fixture
def fork_server():
    """One Python that imports the extractor once and forks a fresh process per run."""
    server = ForkServer()
    yield server
    server.close()


def extract_in_child(server: ForkServer, args: list[str], log: Path, kill_at: int = 0) -> int:
    """`extract ARGS` in a fresh forked process whose writer kills itself with SIGKILL at step
    `kill_at` (0: never), logging each step's name to `log`; its exit code."""
    env = {**os.environ, "APRON_KILL_AT": str(kill_at), "APRON_STEP_LOG": str(log)}
    return server.extract(args, env, log.with_suffix(".out"))


def project_files(root: Path) -> dict[str, bytes]:
    return {
        k: v
        for k, v in folder_bytes(root).items()
        if k.startswith(("generated/", "pins/")) and not k.endswith(".pyc")
    }


@pytest.fixture
def upgrade(project, make_repo):
    repo, shas = make_repo(
        [
            (clean_tree("vllm"), "v1"),
            ({CONVERTOR_PATH: CONVERTOR_V2, REGISTRY_PATH: REGISTRY_V2}, "v2"),
        ]
    )
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    return repo, shas


def extract_with_snapshots(args: list[str], root: Path, into: Path) -> list[str]:
    """`extract ARGS` run in this process with the writer's step hook copying the project at
    `root` to `into/<k>` after step k: what a SIGKILL right then leaves on disk (a kill runs no
    cleanup, and every step is a file-system call that has returned). The steps' names."""
    from apron.extractors.commands.cli import main
    from apron.extractors.runner import writer

    steps: list[str] = []

    def step(what: str) -> None:
        steps.append(what)
        shutil.copytree(root, into / str(len(steps)), symlinks=True)

    saved_hook, saved_argv = writer._step_done, sys.argv
    writer._step_done, sys.argv = step, ["extract", *args]
    try:
        main()
    except SystemExit as stop:
        assert stop.code in (0, None), stop.code
    finally:
        writer._step_done, sys.argv = saved_hook, saved_argv
    return steps


def recovered(root: Path) -> dict[str, bytes]:
    """What the next run leaves of a project a kill interrupted: it recovers first."""
    with project_lock(root):
        recover_interrupted_write(root)
    assert check_offline(ProjectPaths(root)) == []
    assert leftovers(root) == []
    return project_files(root)


@pytest.mark.parametrize("command", ["extract", "bump"])
def test_a_kill_at_any_step_is_recovered_to_all_old_or_all_new(
    project, upgrade, tmp_path, command, fork_server
):
    """Every step's state, as a kill right after it leaves the disk, recovers to all-old or
    all-new; and a real SIGKILL at a middle step, in a forked process, leaves what its step's
    state gives."""
    repo, shas = upgrade
    args = {
        "extract": ["--engine", "vllm", "--commit", shas[1]],
        "bump": ["bump", "--engine", "vllm", "--to", shas[1]],
    }[command] + ["--source", str(repo)]
    pristine = tmp_path / "pristine"
    shutil.copytree(project.root, pristine)
    old = project_files(pristine)
    work, states = tmp_path / "work", tmp_path / "states"
    shutil.copytree(pristine, work)
    steps = extract_with_snapshots([*args, "--root", str(work)], work, states)
    assert steps[0] == "journal staging" and steps[-1] == "journal removed", steps
    assert any(s.startswith("swap in") and s.endswith("vllm.toml") for s in steps), steps
    new = project_files(work)
    assert old != new
    outcomes = []
    for k, name in enumerate(steps, start=1):
        now = recovered(states / str(k))
        assert now in (old, new), f"mixed state after a kill at {name}"
        outcomes.append("new" if now == new else "old")
    assert "old" in outcomes and "new" in outcomes, outcomes

    middle = len(steps) // 2
    log = tmp_path / "steps.log"
    code = extract_in_child(fork_server, [*args, "--root", str(project.root)], log, middle)
    assert code == -signal.SIGKILL, (middle, steps[middle - 1])
    killed = log.read_text().replace(str(project.root), str(work)).splitlines()
    assert killed == steps[:middle]
    assert recovered(project.root) == project_files(states / str(middle))


def test_concurrent_writers_take_turns(project, upgrade, fork_server, tmp_path):
    """Four processes writing generated/ at once, 10 writes each: every write succeeds,
    nothing is left behind, and what is left re-renders byte for byte."""
    repo, shas = upgrade
    output = tmp_path / "writers.out"
    codes = fork_server.writers(
        engine="vllm",
        url=UPSTREAM["vllm"],
        repo=repo,
        root=project.root,
        orders=[shas, shas[::-1], shas, shas[::-1]],
        rounds=10,
        output=output,
    )
    assert codes == [0, 0, 0, 0], output.read_text()[-2000:]
    assert leftovers(project.root) == []
    assert check_offline(project) == []


@pytest.mark.parametrize("leftover", ["generated/.vllm.k2x9qz1a.old", "pins/.vllm.toml.5d1e.new"])
def test_check_and_bump_refuse_while_a_leftover_exists(project, upgrade, leftover):
    from typer.testing import CliRunner

    from apron.extractors.commands.cli import app

    repo, shas = upgrade
    (project.root / leftover).mkdir()
    root = ["--root", str(project.root)]
    for args in (
        ["check", "--offline", *root],
        ["bump", "--engine", "vllm", "--to", shas[1], "--source", str(repo), *root],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "refuses to run while an interrupted write left files behind" in result.output
        assert leftover in result.output
    assert (project.pins / "vllm.toml").read_text().count(shas[0]) == 1


@pytest.mark.parametrize(
    "path",
    [
        "generated/.vllm.k2x9qz1a.old/vllm/__init__.py",
        "generated/.MATRIX.md.0a1b2c3d.new",
        "pins/.vllm.toml.0a1b2c3d.old",
        ".extract.lock",
        ".extract-journal.json",
    ],
)
def test_leftovers_are_ignored_by_git(path):
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "check-ignore", "--no-index", path], capture_output=True
    )
    assert done.returncode == 0, path
