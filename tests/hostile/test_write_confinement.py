"""Issue 26, items 10 and 12: extract and bump write only inside the project (generated/ or pins/
as a symlink, or resolving outside the checkout, is refused before any write), and a swap whose
old copy could not be removed leaves no `.old` behind."""

from __future__ import annotations

import os
import shutil

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.runner import writer
from apron.extractors.runner.writer import WriteError, leftovers, write_changes_atomically
from tests.conftest import write_pin
from tests.hostile.helpers import UPSTREAM, clean_tree, folder_bytes
from tests.vllm_miniatures import CONVERTOR_PATH, CONVERTOR_V2, REGISTRY_PATH, REGISTRY_V2

VLLM = ENGINES["vllm"]
runner = CliRunner()


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


def _steer(project, tmp_path, folder: str):
    """`folder` (generated or pins) moved outside the project, a symlink left in its place."""
    outside = tmp_path / f"outside-{folder}"
    shutil.move(project.root / folder, outside)
    (project.root / folder).symlink_to(outside)
    return outside


def _extract_at(project, repo, commit):
    args = ["--engine", "vllm", "--commit", commit, "--source", str(repo)]
    return runner.invoke(app, [*args, "--root", str(project.root)])


def _bump_to(project, repo, commit):
    args = ["bump", "--engine", "vllm", "--to", commit, "--source", str(repo)]
    return runner.invoke(app, [*args, "--root", str(project.root)])


@pytest.mark.parametrize("folder", ["generated", "pins"])
@pytest.mark.parametrize("command", [_extract_at, _bump_to], ids=["extract", "bump"])
def test_a_symlinked_folder_is_refused_and_nothing_is_written(
    project, upgrade, tmp_path, folder, command
):
    repo, shas = upgrade
    outside = _steer(project, tmp_path, folder)
    before, before_outside = folder_bytes(project.root), folder_bytes(outside)
    result = command(project, repo, shas[1])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert f"{project.root / folder} is a symlink" in message
    assert "extract writes only inside the project" in message
    assert folder_bytes(outside) == before_outside
    assert folder_bytes(project.root) == before


def test_a_folder_resolving_outside_the_project_is_refused(project, tmp_path):
    # generated/ is a real folder here, but the project root is reached through a symlinked
    # parent: only a path that leaves the checkout is refused
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(WriteError, match="outside the project"):
        writer.refuse_writes_outside(project.root, [project.root / ".." / "elsewhere"])
    writer.refuse_writes_outside(project.root, [project.generated, project.pins])


def test_an_old_folder_that_cannot_be_removed_is_refused_before_the_swap(project, monkeypatch):
    # the case: generated/vllm read-only, generated/ writable. os.access says so as a
    # non-root user; root passes every access check, so it is stubbed here for that one folder
    target = project.generated / "vllm"
    target.mkdir()
    (target / "old.py").write_text("old\n")
    real_access = os.access
    monkeypatch.setattr(
        writer.os,
        "access",
        lambda path, mode: False if os.fspath(path) == str(target) else real_access(path, mode),
    )
    with pytest.raises(WriteError, match="is not writable, so the old files in it could not"):
        write_changes_atomically({target: {"new.py": "new\n"}})
    assert (target / "old.py").read_text() == "old\n" and not (target / "new.py").exists()
    assert leftovers(project.root) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root removes files from a read-only folder")
def test_a_read_only_engine_folder_leaves_no_old_copy(project):
    target = project.generated / "vllm"
    target.mkdir()
    (target / "old.py").write_text("old\n")
    target.chmod(0o555)
    try:
        with pytest.raises(WriteError, match="is not writable"):
            write_changes_atomically({target: {"new.py": "new\n"}})
        assert leftovers(project.root) == []
    finally:
        target.chmod(0o755)


def test_an_old_copy_that_stays_after_the_swap_is_an_error_not_silence(project, monkeypatch):
    target = project.generated / "vllm"
    target.mkdir()
    (target / "old.py").write_text("old\n")

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied (simulated)", str(path))

    monkeypatch.setattr(writer.shutil, "rmtree", refuse)
    with pytest.raises(WriteError, match=r"could not remove the old copy .*\.vllm\..*\.old"):
        write_changes_atomically({target: {"new.py": "new\n"}})
    assert (target / "new.py").read_text() == "new\n"
