"""Benchmark: `extract history` of vLLM's registry rows.

Run: python benchmarks/bench_history.py [--fact registry_rows] [--since SHA] [--until SHA] [--jobs N]

The mirror comes from APRON_MIRROR_VLLM; --until defaults to the pin, --since to the root of
the pin's history (so every commit that ever touched the registry is in the range).
Three runs of the same history, each in this process:
  cold        a fresh cache directory: fetch the range (commits and trees), the blobs, parse
  parse       the git cache from `cold`, an empty fact cache: every distinct blob is parsed
  warm        the git cache and the on-disk fact cache from `parse`: nothing is parsed
Baseline, side by side: the naive loop (for each commit `git show <commit>:<path>` and parse
it, no cache), timed on a sample of the same commits and scaled to all of them.
Reported per run: wall and CPU seconds (this process and its workers), commits, parses
(= distinct inputs), seconds per distinct blob, fetch requests.
Goal: the `parse` run under 10 s (the machine has 2 cores; `--jobs` defaults to 2). The cold
run adds the fetch of the history, printed beside it. Exits 1 when the goal is missed."""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from apron.extractors.commands.history import default_jobs, run_history  # noqa: E402
from apron.extractors.engines import ENGINES  # noqa: E402
from apron.extractors.git import GitSource  # noqa: E402
from apron.extractors.pins import load_pin  # noqa: E402
from apron.extractors.runner.factcache import FactCache  # noqa: E402
from apron.extractors.snapshot import MemorySnapshot  # noqa: E402

GOAL_SECONDS = 10.0


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(
    label: str,
    mirror_url: str,
    cache_dir: Path,
    fact: str,
    since: str,
    until: str,
    jobs: int,
    persist: bool,
) -> dict:
    cache = FactCache.at(cache_dir) if persist else FactCache(None)
    source = GitSource("vllm", mirror_url, cache_dir=cache_dir)
    wall, cpu = time.perf_counter(), cpu_seconds()
    history = run_history(ENGINES["vllm"], fact, source, since, until, cache=cache, jobs=jobs)
    timeline = history.timeline()
    result = {
        "label": label,
        "wall": time.perf_counter() - wall,
        "cpu": cpu_seconds() - cpu,
        "commits": len(history.evaluations),
        "parses": history.parses,
        "hits": history.hits,
        "requests": history.fetch_requests,
        "fetch": source.fetch_seconds,
        "items": len(timeline.items),
        "unsupported": len(timeline.unsupported),
        "history": history,
    }
    cache.close()
    return result


def naive_baseline(cache_dir: Path, history, fact: str, sample: int) -> tuple[float, int]:
    """Seconds per commit of `git show` + parse without any cache, on a sample of commits."""
    extractor = next(f for f in ENGINES["vllm"].facts if f.kind.name == fact)
    git_dir = next(cache_dir.glob("vllm-*.git"))
    commits = [e.commit for e in history.evaluations if e.records is not None]
    random.Random(7).shuffle(commits)
    chosen = commits[:sample]
    paths = sorted(history.probes.reads)
    started = time.perf_counter()
    for commit in chosen:
        files = {}
        for path in paths:
            shown = subprocess.run(
                ["git", f"--git-dir={git_dir}", "show", f"{commit.sha}:{path}"], capture_output=True
            )
            if shown.returncode == 0:
                files[path] = shown.stdout
        extractor.run(MemorySnapshot(files, engine="vllm", commit=commit.sha), {})
    return (time.perf_counter() - started) / max(len(chosen), 1), len(chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fact", default="registry_rows")
    parser.add_argument("--since")
    parser.add_argument("--until")
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--sample", type=int, default=40)
    args = parser.parse_args()
    mirror = os.environ.get("APRON_MIRROR_VLLM")
    if not mirror:
        print("APRON_MIRROR_VLLM is not set; nothing to measure")
        return 2
    git_dir = Path(mirror) / ".git" if (Path(mirror) / ".git").exists() else Path(mirror)
    until = args.until or load_pin(REPO / "pins", "vllm").commit
    since = (
        args.since
        or subprocess.run(
            ["git", f"--git-dir={git_dir}", "rev-list", "--first-parent", "--max-parents=0", until],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
    )
    url = "file://" + str(Path(mirror).resolve())
    print(
        f"vllm {args.fact}: {since[:12]}..{until[:12]}, {args.jobs} job(s), {os.cpu_count()} CPU(s)"
    )
    with tempfile.TemporaryDirectory(prefix="apron-history-") as tmp:
        cold_dir, runs = Path(tmp), []
        runs.append(measure("cold", url, cold_dir, args.fact, since, until, args.jobs, False))
        runs.append(measure("parse", url, cold_dir, args.fact, since, until, args.jobs, True))
        runs.append(measure("warm", url, cold_dir, args.fact, since, until, args.jobs, True))
        per_commit, sampled = naive_baseline(cold_dir, runs[1]["history"], args.fact, args.sample)
    for run in runs:
        per_blob = run["wall"] / run["parses"] if run["parses"] else 0.0
        print(
            f"  {run['label']:6s} {run['wall']:6.2f} s wall  {run['cpu']:6.2f} s CPU  "
            f"{run['commits']} commits  {run['parses']} parsed  {run['hits']} from cache  "
            f"{run['requests']} fetch requests ({run['fetch']:.2f} s)  "
            + (f"{per_blob * 1e3:.1f} ms per distinct blob" if run["parses"] else "")
        )
    parse = runs[1]
    naive = per_commit * parse["commits"]
    print(
        f"  naive  {naive:6.2f} s wall (git show + parse per commit, no cache: "
        f"{per_commit * 1e3:.1f} ms x {parse['commits']} commits, timed on {sampled})"
    )
    print(f"  timeline: {parse['items']} items, {parse['unsupported']} unsupported commit(s)")
    print(
        f"  goal: parse run under {GOAL_SECONDS:.0f} s: {parse['wall']:.2f} s "
        f"({naive / parse['wall']:.1f}x faster than naive); "
        f"cold with the fetch: {runs[0]['wall']:.2f} s; warm: {runs[2]['wall']:.2f} s"
    )
    if parse["wall"] >= GOAL_SECONDS:
        print("goal missed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
