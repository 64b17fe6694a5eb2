"""Benchmark: the README's test command (`.venv/bin/pytest -q -x`, parallel workers from
pyproject.toml's addopts), its wall and CPU time, and the slowest test files.

Run: python benchmarks/bench_tests.py [--files N] [-- extra pytest arguments]

Reported: the counts pytest prints (passed, skipped, ...), wall time, CPU time (user + system of
pytest and every process it waited for: workers, command-line runs, git), and the estimate for
an idle machine of 2 cores, CPU / 2, which a busy machine inflates far less than wall time.
Then the N test files whose tests took longest (summed from --durations=0: wall time on the
workers, setup and teardown included). Target: under 180 s on an idle 2-core machine; exits 1
when the estimate misses it, and with pytest's own code when tests fail."""

from __future__ import annotations

import argparse
import collections
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 180.0
IDLE_CORES = 2
DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S+?)::")
SUMMARY = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|skipped|xfailed|xpassed|errors?|deselected).*) in "
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=25, help="slowest test files to list")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    pytest = REPO / ".venv" / "bin" / "pytest"
    command = [str(pytest), "-q", "-x", "-p", "no:cacheprovider", "--durations=0"]
    command += ["--durations-min=0", *args.pytest_args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    by_file: collections.Counter[str] = collections.Counter()
    summary = "no summary line"
    for line in done.stdout.splitlines():
        if found := DURATION.match(line):
            by_file[found.group(2)] += float(found.group(1))
        elif found := SUMMARY.match(line):
            summary = found.group(1)
    estimate = cpu / IDLE_CORES
    print(f"tests: {summary}")
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s (user + system, with every child process)")
    print(
        f"idle {IDLE_CORES}-core estimate (CPU / {IDLE_CORES}): {estimate:.0f} s "
        f"(target < {TARGET_SECONDS:.0f} s: {'met' if estimate < TARGET_SECONDS else 'MISSED'})"
    )
    print(f"slowest {args.files} files (summed test durations, wall on the workers):")
    for path, seconds in by_file.most_common(args.files):
        print(f"  {seconds:8.1f} s  {path}")
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
        return done.returncode
    return 0 if estimate < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
