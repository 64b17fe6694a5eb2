"""Benchmark: warm extraction of every engine with a source, at its pin.

Run: python benchmarks/bench_warm_extract.py [--runs N]

Mirrors come from APRON_MIRROR_<ENGINE>. One cache directory for the whole run; each engine is
extracted once cold (not timed) so its commit, its blobs and its fact results are cached. Then,
N times each, in a fresh Python process (as `extract` runs; the clock starts after the imports):
  fact cache  the pin from the git cache through `factcache.cached_engine`: nothing changed,
              so every fact is a lookup of the extractor's questions (tree lookups, no parsing)
  parse       the same without the fact cache: every extractor parses its files again
Times are medians, per engine and per fact (a fact's own compute time, in whichever process
computed it: facts that need no other fact may run on two cores, so the per-fact times can add up
to more than the engine's wall time). Goals, all engines together: under 3 s on the
fact-cache path, and under 2 s parsing everything again. Engines without a mirror are listed as
skipped. Exits 1 when a goal is missed, 2 when no mirror is set."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from apron.extractors.engines import ENGINES  # noqa: E402
from apron.extractors.pins import load_pin  # noqa: E402

GOAL_SECONDS = 3.0
GOAL_PARSE_SECONDS = 2.0


def machine_load() -> str:
    """The 1-minute load average against the cores: figures taken on a busy machine are noisy."""
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    busy = "  (busy: more runnable processes than cores, figures are noisy)" if load > cores else ""
    return f"machine: load average {load:.1f} on {cores} cores{busy}"


def mirror(engine: str) -> str | None:
    return os.environ.get(f"APRON_MIRROR_{engine.upper()}") or None


CHILD = r"""
import json, sys, time
from pathlib import Path
from apron.extractors.runner.base import extract_engine
from apron.extractors.engines import ENGINES
from apron.extractors.runner.factcache import FactCache, cached_engine
from apron.extractors.git import GitSource

engine_id, url, commit, cache_dir, variant = sys.argv[1:6]
engine = ENGINES[engine_id]
if variant == "cache":
    engine = cached_engine(engine, FactCache.at(Path(cache_dir)))
per_fact = {}
started = time.perf_counter()
source = GitSource(engine_id, url, cache_dir=Path(cache_dir))
snapshot = source.snapshot(commit)
facts = extract_engine(engine, snapshot, commit_date=snapshot.commit_date, timings=per_fact)
print(json.dumps({"seconds": time.perf_counter() - started, "facts": per_fact,
                  "requests": source.fetch_requests,
                  "records": sum(len(f.records) for f in facts.facts)}))
"""


def child(engine_id: str, url: str, commit: str, cache_dir: Path, variant: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, engine_id, url, commit, str(cache_dir), variant],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    engines = [e for e in sorted(ENGINES) if mirror(e)]
    skipped = [e for e in sorted(ENGINES) if not mirror(e)]
    if not engines:
        print("no APRON_MIRROR_<ENGINE> is set; nothing to measure")
        return 2
    totals = {"cache": 0.0, "parse": 0.0}
    with tempfile.TemporaryDirectory(prefix="apron-warm-") as tmp:
        cache_dir = Path(tmp)
        for engine_id in engines:
            commit = load_pin(REPO / "pins", engine_id).commit
            url = "file://" + str(Path(mirror(engine_id)).resolve())
            child(engine_id, url, commit, cache_dir, "cache")  # cold: fetches, fills the caches
            print(f"{engine_id} @ {commit[:12]}")
            for variant, label in (("cache", "fact cache"), ("parse", "parse")):
                runs = [child(engine_id, url, commit, cache_dir, variant) for _ in range(args.runs)]
                seconds = statistics.median(r["seconds"] for r in runs)
                totals[variant] += seconds
                facts = "  ".join(
                    f"{name} {statistics.median(r['facts'][name] for r in runs) * 1e3:.0f} ms"
                    for name in runs[0]["facts"]
                )
                requests = max(r["requests"] for r in runs)
                print(
                    f"  {label:10s} {seconds:6.3f} s  ({requests} fetch requests, "
                    f"{runs[0]['records']} records)  {facts}"
                )
    for name in skipped:
        print(f"{name}: skipped (APRON_MIRROR_{name.upper()} not set)")
    print(
        f"all engines: fact cache {totals['cache']:.2f} s, parse {totals['parse']:.2f} s "
        f"(goals: under {GOAL_SECONDS:.0f} s with the fact cache, under "
        f"{GOAL_PARSE_SECONDS:.0f} s parsing)"
    )
    print(machine_load())
    missed = False
    for label, seconds, goal in (
        ("fact cache", totals["cache"], GOAL_SECONDS),
        ("parse", totals["parse"], GOAL_PARSE_SECONDS),
    ):
        if seconds >= goal:
            print(f"goal missed: {label} {seconds:.2f} s >= {goal:.0f} s")
            missed = True
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
