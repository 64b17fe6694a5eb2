"""Issue 35, output paths: `apron plot --out` is checked before any planning (apron.output_files):
into /proc, onto a directory, into a missing folder or onto a FIFO is exit 2 with one line; an
existing symlink is refused unless --follow-symlinks, then its target is written; the file is
written whole by rename, and a failed plot leaves nothing behind."""

from __future__ import annotations

import importlib.util
import os

import pytest

from apron.errors import ApronInputError
from apron.output_files import check_output, discard, output_problem, write_output
from tests.hostile.apron_run import apron, refused

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
PLOT = ("plot", "--sample", "llama-3.1-8b", "-c", "8192", "--out")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("/proc/kv.png", "--out /proc/kv.png: cannot write in /proc"),
        ("{tmp}/dir.png", "is a directory, not a file"),
        ("{tmp}/no/such/folder/kv.png", "the folder {tmp}/no/such/folder does not exist"),
        ("{tmp}/fifo.png", "is not a regular file (a FIFO, a device or a socket)"),
        ("{tmp}/link.png", "is a symlink; apron does not write through a symlink unless asked"),
        ("{tmp}/kv.jpg", "give a .png or .svg file name"),
        ("{tmp}/\x1b[2J.png", "\\x1b[2J.png"),
        ("{tmp}/" + "a" * 300 + ".png", "cannot be checked: File name too long"),
    ],
)
def test_bad_outputs_are_refused_before_any_work(tmp_path, out, words):
    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "link.png").symlink_to(tmp_path / "target.png")
    (tmp_path / "\x1b[2J.png").mkdir()
    (tmp_path / "dir.png").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    refused(apron(*PLOT, out.format(tmp=tmp_path)), words.format(tmp=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temp file left


def test_a_bad_config_leaves_no_temp_file(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    refused(apron("plot", tmp_path / "config.json", "--out", tmp_path / "kv.png"), "not valid JSON")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the plot extra) is not installed")
def test_follow_symlinks_writes_the_target(tmp_path):
    (tmp_path / "link.png").symlink_to(tmp_path / "target.png")
    result = apron(*PLOT, tmp_path / "link.png", "--follow-symlinks")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.png").is_symlink()
    assert (tmp_path / "target.png").read_bytes()[:8] == PNG


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the plot extra) is not installed")
def test_an_existing_file_is_replaced_keeping_its_mode(tmp_path):
    out = tmp_path / "kv.svg"
    out.write_text("old")
    out.chmod(0o640)
    result = apron(*PLOT, out)
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<?xml") and (out.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kv.svg"]


def test_write_output_renames_and_cleans_up(tmp_path):
    checked = check_output(tmp_path / "a.bin", "--out")
    assert checked.temp.exists() and checked.temp.parent == tmp_path
    assert write_output(checked, lambda handle: handle.write(b"data")) == tmp_path / "a.bin"
    assert (tmp_path / "a.bin").read_bytes() == b"data" and not checked.temp.exists()
    failing = check_output(tmp_path / "b.bin", "--out")

    def explode(handle):
        handle.write(b"half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_output(failing, explode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]
    discard(failing)  # twice is harmless


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p.mkdir(), "is a directory, not a file"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
        (lambda p: p.symlink_to("/etc/passwd"), "is a symlink"),
        (lambda p: None, ""),
    ],
)
def test_output_problem(tmp_path, make, problem):
    make(tmp_path / "x")
    assert output_problem(tmp_path / "x")[0].startswith(problem)


def test_an_empty_path_is_refused():
    with pytest.raises(ApronInputError, match="an empty path"):
        check_output("", "--out")
