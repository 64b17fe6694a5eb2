"""Issue 35, `extract`: a pin file that is a FIFO, a directory or 3 GB is one message (never a
hang or a traceback) in `extract`, `extract check --offline` and the transformers pin; an
APRON_CACHE_DIR that is a file, a FIFO or cannot be created is exit 2 naming it."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess

import pytest

from apron.extractors.errors import CacheError, PinError
from apron.extractors.git.cache import usable_cache_dir
from apron.extractors.pins import MAX_PIN_BYTES, load_pin
from apron.extractors.transformers.release import load_release_pin
from tests.conftest import REPO_ROOT
from tests.hostile.fork_server import ForkServer


@pytest.fixture(scope="module")
def cli_server():
    """One Python that imports the extractor once and forks a fresh process per command."""
    server = ForkServer()
    yield server
    server.close()


@pytest.fixture
def extract(cli_server, tmp_path):
    """`extract(*args, env=...)`: the command line in a fresh forked process, with the test's
    environment plus `env`; a CompletedProcess. A command that runs past `timeout` (a hang)
    fails the test."""
    calls = itertools.count()

    def run(*args: str, env: dict | None = None, timeout: float = 60):
        out, err = (tmp_path / f"extract-{next(calls)}.{n}" for n in ("out", "err"))
        code = cli_server.extract(
            list(args), {**os.environ, **(env or {})}, out, errors=err, timeout=timeout
        )
        return subprocess.CompletedProcess(args, code, out.read_text(), err.read_text())

    return run


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    shutil.copytree(REPO_ROOT / "pins", root / "pins")
    # vLLM's generated modules and the shared files: what these commands read of vllm (the
    # other engines' 9 MB would only make `check --offline` re-render more)
    shutil.copytree(
        REPO_ROOT / "generated",
        root / "generated",
        ignore=lambda folder, names: (
            [n for n in names if n in ("llamacpp", "sglang", "transformers")]
            if folder == str(REPO_ROOT / "generated")
            else []
        ),
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def spoil(pin, how: str) -> None:
    pin.unlink()
    if how == "fifo":
        os.mkfifo(pin)
    elif how == "directory":
        pin.mkdir()
    elif how == "3 GB":
        with pin.open("wb") as handle:
            handle.truncate(3_000_000_000)
    elif how == "dangling symlink":
        pin.symlink_to(pin.parent / "nowhere.toml")


WORDS = {
    "fifo": "is not a regular file (a FIFO)",
    "directory": "is not a regular file (a directory)",
    "3 GB": f"is 3,000,000,000 B; apron reads at most {MAX_PIN_BYTES:,} B",
    "dangling symlink": "no pin file",
}


@pytest.mark.parametrize("how", sorted(WORDS))
def test_a_pin_that_is_no_pin_file(project, how, extract):
    spoil(project / "pins" / "vllm.toml", how)
    with pytest.raises(PinError, match=WORDS[how].replace("(", r"\(").replace(")", r"\)")):
        load_pin(project / "pins", "vllm")
    checked = extract("check", "--offline", "--project", str(project))
    assert checked.returncode == 1 and WORDS[how] in checked.stderr, checked.stderr
    assert "Traceback" not in checked.stderr and "internal error" not in checked.stderr
    dry = extract("--engine", "vllm", "--project", str(project), "--dry-run")
    assert dry.returncode == 2 and WORDS[how] in dry.stderr, dry.stderr


@pytest.mark.parametrize("how", ["fifo", "directory"])
def test_the_transformers_pin_too(project, how):
    spoil(project / "pins" / "transformers.toml", how)
    with pytest.raises(PinError, match=r"is not a regular file"):
        load_release_pin(project / "pins")


@pytest.mark.parametrize("how", ["file", "fifo", "uncreatable"])
def test_a_cache_dir_apron_cannot_use(project, tmp_path, how, extract):
    base = tmp_path / "cache"
    if how == "file":
        base.write_text("x")
    elif how == "fifo":
        os.mkfifo(base)
    else:
        base = tmp_path / "a-file" / "below"
        (tmp_path / "a-file").write_text("x")
    done = extract(
        "--engine", "vllm", "--project", str(project), "--source", str(project), "--dry-run",
        env={"APRON_CACHE_DIR": str(base)},
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "the cache directory" in done.stderr and "APRON_CACHE_DIR" in done.stderr
    with pytest.raises(CacheError, match="set APRON_CACHE_DIR"):
        usable_cache_dir(base / "git")


def test_a_usable_cache_dir_is_created(tmp_path):
    assert usable_cache_dir(tmp_path / "a" / "b").is_dir()


@pytest.mark.parametrize("how", ["fifo", "3 GB"])
def test_a_write_journal_that_is_no_journal_is_one_message(project, how, extract):
    journal = project / ".extract-journal.json"
    journal.write_text("{}")
    spoil(journal, how)
    done = extract("check", "--offline", "--project", str(project))
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "the write journal" in done.stderr and "unreadable" in done.stderr
    assert "Traceback" not in done.stderr
