"""Benchmark: placing release tags on an `extract history` timeline (llama.cpp's bNNNN tags).

Run: python benchmarks/bench_releases.py [--fact class_predicates] [--since SHA] [--until SHA]

The mirror comes from APRON_MIRROR_LLAMACPP (about 5,200 bNNNN tags); --until defaults to the
pin, --since to 009a1133 (2026-04-09). Each case runs in a fresh cache directory:
  history     `run_history` (fetch the range, extract at every commit that touched the files)
  releases    `release_view` on it, cold: ls-remote, the history of tags newer than --since's
              releases (one fetch), one rev-list walk, the containment pass
  again       `release_view` once more: the tag history is cached, no fetch
Printed per case: wall seconds of each step, tags matching / placed / before --since, boundary
commits placed. Goal: the release mapping adds under 5 s to a history run (cold and warm).
Exits 1 when the goal is missed."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from apron.extractors.commands.history import release_view, run_history  # noqa: E402
from apron.extractors.engines import ENGINES  # noqa: E402
from apron.extractors.git import GitSource  # noqa: E402
from apron.extractors.pins import load_pin  # noqa: E402
from apron.extractors.runner.factcache import FactCache  # noqa: E402

GOAL_SECONDS = 5.0
SINCE = "009a1133268d040a7c574a7b9c95413b0be369a9"
B8925 = "1f0fb2ebe506829b2ffc8849b2803e3b7692f412"


def run_case(mirror: str, fact: str, since: str, until: str) -> tuple[float, float]:
    engine = ENGINES["llamacpp"]
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = Path(tmp)
        source = GitSource("llamacpp", mirror, cache_dir=cache_dir)
        started = time.perf_counter()
        history = run_history(
            engine, fact, source, since, until, cache=FactCache.at(cache_dir), jobs=2
        )
        history_seconds = time.perf_counter() - started
        started = time.perf_counter()
        view = release_view(history, source, engine.release_tags)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        again = release_view(history, source, engine.release_tags)
        warm = time.perf_counter() - started
        source.close()
    boundaries = len(view.spans) + len(view.change_releases)
    print(
        f"{fact} {since[:10]}..{until[:10]}: history {history_seconds:.2f} s "
        f"({len(history.evaluations)} commits); releases cold {cold:.2f} s "
        f"({view.fetch_requests} fetch), again {warm:.2f} s ({again.fetch_requests} fetch); "
        f"{len(view.tags)} tags matching, {len(view.placed)} placed, {view.older} before "
        f"--since, {len(view.unplaced)} unplaced; {boundaries} intervals and changes placed"
    )
    return cold, warm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fact", action="append")
    parser.add_argument("--since", default=SINCE)
    parser.add_argument("--until")
    args = parser.parse_args()
    mirror = os.environ.get("APRON_MIRROR_LLAMACPP")
    if not mirror:
        print("set APRON_MIRROR_LLAMACPP to a llama.cpp checkout or bare mirror")
        return 2
    pin = load_pin(REPO / "pins", "llamacpp").commit
    facts = args.fact or ["class_predicates", "class_set_members"]
    untils = [args.until] if args.until else [pin, B8925]
    worst = 0.0
    for fact in facts:
        for until in untils:
            worst = max(worst, *run_case(mirror, fact, args.since, until))
    verdict = "met" if worst < GOAL_SECONDS else "MISSED"
    print(f"goal: release mapping under {GOAL_SECONDS:.0f} s: {verdict} (worst {worst:.2f} s)")
    return 0 if worst < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
