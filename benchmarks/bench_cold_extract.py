"""Benchmark: cold extraction of an engine at its pin, against git clones.

Run: python benchmarks/bench_cold_extract.py [--runs N] [--engines vllm,llamacpp,sglang]

Mirrors come from APRON_MIRROR_<ENGINE> (a local clone or bare mirror, read as a file:// URL).
For each engine with a mirror, N times: a fresh cache directory, then `GitSource.snapshot(pin)`
and every fact extractor (what `extract --engine E` does, in this process, modules already
imported). Reported: wall time and CPU time (user + system of this process and of its ended
children, git and the parse worker: a busy machine inflates it far less than wall time), both
medians; fetch requests (counted in the source layer and, in the last run, from
GIT_TRACE_PACKET), blobs fetched, bytes on disk of the cache.

Baselines, on the complete mirror (APRON_MIRROR_SGLANG; the vLLM and llama.cpp mirrors lack
their largest blobs, so a clone or a shallow checkout of those fails):
  (a) git clone file://<mirror> + checkout of the pin
  (b) git fetch --depth 1 of the pin (by SHA) + checkout
For the incomplete mirrors the script prints the size of the tree at the pin (the least any
checkout writes) beside the cold figures.

Goals (judged on the baseline mirror's engine): >= 100x fewer bytes and >= 20x less wall time
than (a), >= 10x fewer bytes than (b); and for every engine at most 3 fetch requests.
Exits 1 when a goal is missed, 2 when no mirror is set."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from apron.extractors.engines import ENGINES  # noqa: E402
from apron.extractors.git import LOCAL_UPLOAD_PACK, GitSource  # noqa: E402
from apron.extractors.pins import load_pin  # noqa: E402
from apron.extractors.runner.base import extract_engine  # noqa: E402

BASELINE_ENGINE = "sglang"
GOAL_BYTES_VS_CLONE = 100.0
GOAL_TIME_VS_CLONE = 20.0
GOAL_BYTES_VS_SHALLOW = 10.0
GOAL_REQUESTS = 3


def machine_load() -> str:
    """The 1-minute load average against the cores: figures taken on a busy machine are noisy."""
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    busy = "  (busy: more runnable processes than cores, figures are noisy)" if load > cores else ""
    return f"machine: load average {load:.1f} on {cores} cores{busy}"


def mirror(engine: str) -> str | None:
    return os.environ.get(f"APRON_MIRROR_{engine.upper()}") or None


def disk_bytes(path: Path) -> int:
    """Bytes the directory takes on disk (allocated blocks), like `du -s`."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def cpu_seconds() -> tuple[float, float]:
    """User + system seconds of this process, and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, ended.ru_utime + ended.ru_stime


def cold_extract(engine_id: str, url: str, commit: str, trace: Path | None) -> dict:
    engine = ENGINES[engine_id]
    with tempfile.TemporaryDirectory(prefix="apron-cold-") as tmp:
        cache = Path(tmp) / "cache"
        if trace is not None:
            os.environ["GIT_TRACE_PACKET"] = str(trace)
        try:
            cpu_before = cpu_seconds()
            started = time.perf_counter()
            with GitSource(engine_id, url, cache_dir=cache) as source:
                snapshot = source.snapshot(commit)
                facts = extract_engine(engine, snapshot, commit_date=snapshot.commit_date)
            seconds = time.perf_counter() - started
            cpu_after = cpu_seconds()
        finally:
            os.environ.pop("GIT_TRACE_PACKET", None)
        return {
            "seconds": seconds,
            "cpu_own": cpu_after[0] - cpu_before[0],
            "cpu_children": cpu_after[1] - cpu_before[1],
            "fetch_seconds": source.fetch_seconds,
            "bytes": disk_bytes(cache),
            "requests": source.fetch_requests,
            "blobs": source.fetched_blobs,
            "files": len({s.path for f in facts.facts for s in f.sources}),
            "records": sum(len(f.records) for f in facts.facts),
        }


def plain_clone(url: str, commit: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="apron-clone-") as tmp:
        target = Path(tmp) / "clone"
        cpu_before = cpu_seconds()[1]
        started = time.perf_counter()
        done = git("clone", "-q", "--no-checkout", url, str(target))
        if done.returncode == 0:
            done = git("checkout", "-q", commit, cwd=target)
        seconds = time.perf_counter() - started
        return {
            "seconds": seconds,
            "cpu": cpu_seconds()[1] - cpu_before,
            "bytes": disk_bytes(target),
            "ok": done.returncode == 0,
            "error": done.stderr.strip().splitlines()[-1:] if done.returncode else [],
        }


def shallow_fetch(url: str, commit: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="apron-shallow-") as tmp:
        target = Path(tmp) / "shallow"
        target.mkdir()
        cpu_before = cpu_seconds()[1]
        started = time.perf_counter()
        git("init", "-q", cwd=target)
        done = git(
            "fetch",
            "-q",
            "--depth",
            "1",
            f"--upload-pack={LOCAL_UPLOAD_PACK}",
            url,
            commit,
            cwd=target,
        )
        if done.returncode == 0:
            done = git("checkout", "-q", "FETCH_HEAD", cwd=target)
        seconds = time.perf_counter() - started
        return {
            "seconds": seconds,
            "cpu": cpu_seconds()[1] - cpu_before,
            "bytes": disk_bytes(target),
            "ok": done.returncode == 0,
            "error": done.stderr.strip().splitlines()[-1:] if done.returncode else [],
        }


def tree_size(path: str, commit: str) -> tuple[int, int, int]:
    """(bytes of the blobs at the pin that the mirror has, blobs, blobs it lacks)."""
    git_dir = Path(path) / ".git" if (Path(path) / ".git").exists() else Path(path)
    listing = git(f"--git-dir={git_dir}", "ls-tree", "-r", "--format=%(objectname)", commit)
    shas = [s for s in listing.stdout.split() if s]
    check = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch-check"],
        input="\n".join(shas) + "\n",
        capture_output=True,
        text=True,
    )
    size = missing = 0
    for line in check.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            size += int(parts[2])
        elif parts[-1:] == ["missing"]:
            missing += 1
    return size, len(shas), missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", default="vllm,llamacpp,sglang")
    args = parser.parse_args()
    pins = REPO / "pins"
    engines = [e for e in args.engines.split(",") if mirror(e)]
    if not engines:
        print("no APRON_MIRROR_<ENGINE> is set; nothing to measure")
        return 2
    failures: list[str] = []
    results: dict[str, dict] = {}
    print(f"cold extraction at the pin, {args.runs} runs each (median wall time)")
    for engine in engines:
        commit = load_pin(pins, engine).commit
        url = "file://" + str(Path(mirror(engine)).resolve())
        runs = [cold_extract(engine, url, commit, None) for _ in range(max(0, args.runs - 1))]
        trace = Path(tempfile.mkstemp(prefix="apron-packets-")[1])
        runs.append(cold_extract(engine, url, commit, trace))
        packets = trace.read_text(errors="replace").count("fetch< version 2")
        trace.unlink()
        result = {
            **runs[-1],
            "seconds": statistics.median(r["seconds"] for r in runs),
            "fetch_seconds": statistics.median(r["fetch_seconds"] for r in runs),
            "cpu_own": statistics.median(r["cpu_own"] for r in runs),
            "cpu_children": statistics.median(r["cpu_children"] for r in runs),
            "packets": packets,
        }
        results[engine] = result
        print(
            f"  {engine:9s} {result['seconds']:6.2f} s (fetching {result['fetch_seconds']:.2f} s, "
            f"the rest reading and parsing)  {mb(result['bytes']):>10s} on disk  "
            f"{result['requests']} fetch requests (packet trace: {packets})  "
            f"{result['blobs']} blobs fetched, {result['files']} files read, "
            f"{result['records']} records"
        )
        print(
            f"  {'':9s} CPU {result['cpu_own'] + result['cpu_children']:.2f} s (median user + "
            f"system): this process {result['cpu_own']:.2f} s, its children (git, the parse "
            f"worker) {result['cpu_children']:.2f} s"
        )
        if result["requests"] > GOAL_REQUESTS or packets != result["requests"]:
            failures.append(
                f"{engine}: {result['requests']} fetch requests (packet trace "
                f"{packets}); goal <= {GOAL_REQUESTS}"
            )
        if engine != BASELINE_ENGINE:
            size, blobs, missing = tree_size(mirror(engine), commit)
            print(
                f"  {'':9s} tree at the pin: {blobs} blobs, {mb(size)} of them in the mirror "
                f"({missing} missing: a clone or checkout of this mirror fails); "
                f"{size / max(result['bytes'], 1):.0f}x the cold cache"
            )
    base = mirror(BASELINE_ENGINE)
    if base is None or BASELINE_ENGINE not in results:
        print(f"APRON_MIRROR_{BASELINE_ENGINE.upper()} not set or not measured: no clone baselines")
        return 1 if failures else 0
    commit = load_pin(pins, BASELINE_ENGINE).commit
    url = "file://" + str(Path(base).resolve())
    clone = plain_clone(url, commit)
    shallow = shallow_fetch(url, commit)
    ours = results[BASELINE_ENGINE]
    print(f"baselines on the {BASELINE_ENGINE} mirror (complete), pin {commit[:12]}")
    for name, base_run in (
        ("(a) clone + checkout", clone),
        ("(b) depth-1 fetch + checkout", shallow),
    ):
        state = "" if base_run["ok"] else f"  FAILED: {' '.join(base_run['error'])}"
        print(
            f"  {name:30s} {base_run['seconds']:6.2f} s  {mb(base_run['bytes']):>10s}  "
            f"(CPU {base_run['cpu']:.2f} s){state}"
        )
    print(
        f"  {'cold extraction (this tool)':30s} {ours['seconds']:6.2f} s  {mb(ours['bytes']):>10s}"
        f"  (its fetches alone: {ours['fetch_seconds']:.2f} s, "
        f"{clone['seconds'] / max(ours['fetch_seconds'], 1e-9):.0f}x less than (a); "
        f"CPU {ours['cpu_own'] + ours['cpu_children']:.2f} s, "
        f"{clone['cpu'] / max(ours['cpu_own'] + ours['cpu_children'], 1e-9):.1f}x less than (a))"
    )
    ratios = {
        "bytes vs (a)": (clone["bytes"] / max(ours["bytes"], 1), GOAL_BYTES_VS_CLONE),
        "time vs (a)": (clone["seconds"] / ours["seconds"], GOAL_TIME_VS_CLONE),
        "bytes vs (b)": (shallow["bytes"] / max(ours["bytes"], 1), GOAL_BYTES_VS_SHALLOW),
    }
    for label, (ratio, goal) in ratios.items():
        verdict = "ok" if ratio >= goal else "MISSED"
        print(f"  {label:14s} {ratio:8.1f}x  (goal >= {goal:.0f}x)  {verdict}")
        if ratio < goal:
            failures.append(f"{BASELINE_ENGINE} {label}: {ratio:.1f}x < {goal:.0f}x")
    if not (clone["ok"] and shallow["ok"]):
        failures.append("a baseline failed")
    print(machine_load())
    for failure in failures:
        print(f"goal missed: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
