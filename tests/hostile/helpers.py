"""Shared pieces of the hostile-input tests: the four engines' miniature trees, a one-call
extraction from a temp git repo, a byte snapshot of a folder, and a measured CLI run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from apron.extractors.commands.generate import RunResult, run
from apron.extractors.engines import ENGINES
from apron.extractors.runner.pipeline import ProjectPaths
from tests import llamacpp_miniatures, sglang_miniatures, trtllm_miniatures, vllm_miniatures
from tests.conftest import REPO_ROOT, write_pin

UPSTREAM = {
    "vllm": "https://github.com/vllm-project/vllm",
    "llamacpp": "https://github.com/ggml-org/llama.cpp",
    "sglang": "https://github.com/sgl-project/sglang",
    "trtllm": "https://github.com/NVIDIA/TensorRT-LLM",
}


def clean_tree(engine: str) -> dict[str, str]:
    """The newest-layout miniature of one engine, with no deletions."""
    tree = {
        "vllm": vllm_miniatures.tree_v1,
        "llamacpp": llamacpp_miniatures.tree_v2,
        "sglang": sglang_miniatures.full_tree_2026,
        "trtllm": trtllm_miniatures.tree,
    }[engine]()
    return {path: text for path, text in tree.items() if text is not None}


def extract_repo(project: ProjectPaths, repo: Path, engine: str, commit: str) -> RunResult:
    """Pin `engine` at `commit` of the temp repo and run the pipeline against it."""
    write_pin(project, engine, UPSTREAM[engine], commit)
    return run(ENGINES[engine], project, commit=None, source=str(repo))


def folder_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` (bytecode caches aside) by relative path; symlinks as their target."""
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        if path.is_symlink():
            found[str(path.relative_to(root))] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


@dataclass(frozen=True)
class CliRun:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float  # of the `extract` process itself, not of the git processes it starts


# Runs `extract` in a fresh interpreter and writes its own peak RSS in KiB to a file: VmHWM of
# its address space (ru_maxrss would include the parent's RSS, which Linux keeps across exec).
_MEASURED = """
import os, resource, sys
sys.argv = ["extract", *sys.argv[2:]]
try:
    from apron.extractors.commands.cli import main
    main()
finally:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        with open("/proc/self/status") as status:
            peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        pass
    with open(os.environ["APRON_RSS_FILE"], "w") as out:
        out.write(str(peak))
"""


def run_cli_measured(args: list[str], tmp_path: Path, timeout: float = 120) -> CliRun:
    """`extract <args>` in a subprocess with a timeout; exit code, output, wall time, peak RSS."""
    rss_file = tmp_path / "rss.txt"
    env = {**os.environ, "APRON_RSS_FILE": str(rss_file), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("APRON_DEBUG", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "-", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    seconds = time.perf_counter() - started
    peak = int(rss_file.read_text()) / 1024 if rss_file.exists() else float("nan")
    return CliRun(done.returncode, done.stdout, done.stderr, seconds, peak)
