"""Running `apron` on hostile input: in-process (CliRunner) for the outcome, or in a fresh
interpreter with a timeout for wall time and peak memory; and the one check every refusal must
pass (exit 2, one line on stderr starting "error:", no raw control character)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from apron.command_line.cli import app
from tests.conftest import REPO_ROOT

runner = CliRunner()


def apron(*args: str):
    """`apron ARGS` in this process (an exception escaping the app is result.exception)."""
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *words: str) -> str:
    """The refusal line of a run that must refuse: exit 2, exactly one line on stderr that
    starts with "error:" and holds `words` (the message, whitespace collapsed), no raw ESC."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "\x1b" not in result.stderr and "\x9b" not in result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def answered(result) -> str:
    """The output of a run that must answer: exit 0, no raw control character."""
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    assert "\x1b" not in result.output
    return result.stdout


# `apron` in a fresh interpreter that writes its own peak RSS (VmHWM, KiB) to a file
_MEASURED = """
import os, sys
sys.argv = ["apron", *sys.argv[2:]]
try:
    from apron.command_line.cli import main
    main()
finally:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(os.environ["APRON_RSS_FILE"], "w") as out:
        out.write(str(peak))
"""


@dataclass(frozen=True)
class MeasuredRun:
    exit_code: int
    stdout: str
    stderr: str
    cpu_seconds: float  # user + system time of the process: the machine's load does not add to it
    peak_rss_mb: float


def apron_measured(args: list[str], tmp_path: Path, timeout: float = 120) -> MeasuredRun:
    """`apron ARGS` in a subprocess with a timeout (a hang fails the test): exit code, output,
    CPU time and peak RSS. A bound on them guards against a pathological input (minutes,
    gigabytes); the speed itself is measured by benchmarks/bench_hostile_inputs.py."""
    rss_file = tmp_path / "apron-rss.txt"
    env = {**os.environ, "APRON_RSS_FILE": str(rss_file), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("APRON_DEBUG", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "-", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak = int(rss_file.read_text()) / 1024 if rss_file.exists() else float("nan")
    return MeasuredRun(done.returncode, done.stdout, done.stderr, cpu, peak)
