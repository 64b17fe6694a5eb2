"""Facts that need no other fact, computed on two cores: the same records, sources, warnings and
errors as one by one, the fact cache written only in this process, and no fork where it does
not pay."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

import pytest

from apron.extractors.engine_api import EngineSpec, FactExtractor, FactOutput
from apron.extractors.errors import AnchorError
from apron.extractors.parsing import workers
from apron.extractors.records import FactKind, Record
from apron.extractors.runner.base import extract_engine
from apron.extractors.runner.factcache import FactCache, cached_engine
from apron.extractors.snapshot import MemorySnapshot, Snapshot
from tests.test_fact_graph import ENGINE_TREES, Item, _by_name, _snapshot, kind, reader

needs_two_cores = pytest.mark.skipif(
    not workers.may_share(workers.MIN_BYTES), reason="fork or a second core is not available"
)


@pytest.fixture
def shared(monkeypatch):
    """Two cores from the first byte; records which facts the map was asked to compute."""
    monkeypatch.setattr(workers, "MIN_BYTES", 0)
    calls: list[list[str]] = []
    original = workers.map_in_two

    def recording(function, items, sizes):
        calls.append([getattr(i, "kind", None) and i.kind.name for i in items])
        return original(function, items, sizes)

    monkeypatch.setattr(workers, "map_in_two", recording)
    return calls


def pid_fact(name: str, path: str, seconds: float = 0.0):
    """Reads `path` and names the process that computed it, taking `seconds` to do so."""

    def run(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        time.sleep(seconds)
        words = snapshot.read_text(path).split()
        return FactOutput(tuple(Item(name=w, path=str(os.getpid())) for w in words))

    return FactExtractor(kind(name), run, reads=(path,))


def toy(*facts: FactExtractor) -> EngineSpec:
    return EngineSpec(
        engine_id="toy", title="Toy", upstream_url="https://example.invalid/toy", facts=facts
    )


@needs_two_cores
@pytest.mark.parametrize(("engine_id", "tree"), ENGINE_TREES, ids=[e for e, _ in ENGINE_TREES])
def test_every_engine_gives_the_same_facts_on_two_cores(engine_id, tree, shared, monkeypatch):
    from apron.extractors.engines import ENGINES

    engine = ENGINES[engine_id]
    two = extract_engine(engine, _snapshot(engine_id, tree), commit_date="x")
    assert shared and len(shared[0]) >= 2  # the map was used
    monkeypatch.setattr(workers, "MIN_BYTES", 10**12)
    one = extract_engine(engine, _snapshot(engine_id, tree), commit_date="x")
    assert _by_name(two) == _by_name(one)
    assert two.warnings == one.warnings


@needs_two_cores
def test_the_worker_computes_a_share_and_the_runner_keeps_the_order(shared, monkeypatch):
    files = {f"{n}.txt": " ".join([n] * 50) for n in "abcd"}
    engine = toy(
        *(pid_fact(n, f"{n}.txt", seconds=0.3) for n in "dcba"),  # the worker starts in time
        FactExtractor(kind("e"), reader("a.txt"), needs=("a", "b")),
    )
    monkeypatch.setattr(workers, "MIN_BYTES", 200)  # e (100 bytes) is not worth waiting for
    timings: dict[str, float] = {}
    facts = extract_engine(engine, MemorySnapshot(files), commit_date="x", timings=timings)
    assert [f.kind.name for f in facts.facts] == ["d", "c", "b", "a", "e"]  # as declared
    assert shared == [["a", "b", "c", "d"]]  # e waits for a and b
    pids = {f.records[0].path for f in facts.facts[:4]}
    assert len(pids) == 2 and str(os.getpid()) in pids  # this process and a worker
    assert [r.name for r in facts.facts[4].records][-2:] == ["from:b", "from:b"]
    assert sorted(timings) == ["a", "b", "c", "d", "e"]
    assert all(s >= 0 for s in timings.values())
    assert [s.path for s in facts.facts[0].sources] == ["d.txt"]  # provenance from the worker


@needs_two_cores
def test_the_small_facts_a_large_one_waits_for_are_finished_first(shared):
    """e reads more than a and b together and needs them: they run here first, one by one, so
    that e is computed on two cores with c and d instead of alone after them."""
    files = {f"{n}.txt": " ".join([n] * 50) for n in "abcd"} | {"e.txt": "e " * 500}
    engine = toy(
        *(pid_fact(n, f"{n}.txt", seconds=0.3) for n in "dcba"),
        FactExtractor(kind("e"), reader("a.txt"), reads=("e.txt",), needs=("a", "b")),
    )
    facts = extract_engine(engine, MemorySnapshot(files), commit_date="x")
    assert shared == [["c", "d", "e"]]
    by_name = {f.kind.name: f for f in facts.facts}
    assert {by_name[n].records[0].path for n in "ab"} == {str(os.getpid())}
    assert [r.name for r in by_name["e"].records][-2:] == ["from:b", "from:b"]
    assert [f.kind.name for f in facts.facts] == ["d", "c", "b", "a", "e"]


@needs_two_cores
def test_an_error_of_a_fact_finished_first_is_raised_at_its_turn(shared):
    calls = []

    def failing(name: str):
        def run(snapshot, needed):
            calls.append(name)
            raise AnchorError(f"no anchor in {name}", paths=["a.txt"], anchor=name)

        return FactExtractor(kind(name), run, reads=("a.txt",))

    engine = toy(
        failing("0"),
        failing("a"),
        FactExtractor(kind("e"), reader("e.txt"), reads=("e.txt",), needs=("a",)),
    )
    files = {"a.txt": "x " * 10, "e.txt": "y " * 500}
    with pytest.raises(AnchorError, match="no anchor in 0"):  # 0 comes first, as one by one
        extract_engine(engine, MemorySnapshot(files), commit_date="x")
    assert calls == ["a", "0"]  # a ran first, for e; its error waited for its turn


@needs_two_cores
def test_the_first_error_in_order_is_raised_as_one_by_one(shared):
    def failing(name: str):
        def run(snapshot, needed):
            raise AnchorError(f"no anchor in {name}", paths=[name], anchor=name)

        return FactExtractor(kind(name), run, reads=("a.txt",))

    engine = toy(failing("z"), pid_fact("m", "a.txt"), failing("b"))
    with pytest.raises(AnchorError, match="no anchor in b") as info:
        extract_engine(engine, MemorySnapshot({"a.txt": "x " * 100}), commit_date="x")
    assert info.value.engine == "toy"


def test_below_the_threshold_nothing_forks(monkeypatch):
    called = []
    monkeypatch.setattr(workers, "map_in_two", lambda *a: called.append(a) or [])
    engine = toy(pid_fact("a", "a.txt"), pid_fact("b", "b.txt"))
    facts = extract_engine(engine, MemorySnapshot({"a.txt": "x", "b.txt": "y"}), commit_date="x")
    assert called == []  # two tiny files: a fork would cost more than it saves
    assert {f.records[0].path for f in facts.facts} == {str(os.getpid())}


@needs_two_cores
def test_fact_cache_misses_are_stored_here_and_hits_fork_nothing(tmp_path, shared):
    files = {f"{n}.txt": " ".join([n] * 50) for n in "abc"}
    engine = toy(*(pid_fact(n, f"{n}.txt") for n in "abc"))
    cache = FactCache.at(tmp_path)
    first = extract_engine(cached_engine(engine, cache), MemorySnapshot(files), commit_date="x")
    assert (cache.misses, cache.hits) == (3, 0) and len(shared) == 1
    again = FactCache.at(tmp_path)  # a new run reads what the first one stored
    second = extract_engine(cached_engine(engine, again), MemorySnapshot(files), commit_date="x")
    assert (again.misses, again.hits) == (0, 3)
    assert len(shared) == 1  # every fact was a hit: no second map, no fork
    assert _by_name(second) == _by_name(first)


@needs_two_cores
def test_facts_whose_needs_are_done_are_computed_together(shared):
    """a runs first (alone: nothing to share); then b, c and d, which need it, on two cores."""

    def needing(name: str):
        def run(snapshot, needed):
            time.sleep(0.3)
            got = [r.name for r in needed["a"]]
            return FactOutput((Item(name=f"{name}:{got[0]}", path=str(os.getpid())),))

        return FactExtractor(FactKind(name, name, Item, name), run, reads=("a.txt",), needs=("a",))

    engine = toy(pid_fact("a", "a.txt"), needing("b"), needing("c"), needing("d"))
    facts = extract_engine(engine, MemorySnapshot({"a.txt": "x " * 100}), commit_date="x")
    assert shared == [["b", "c", "d"]]
    assert [f.records[0].name for f in facts.facts[1:]] == ["b:x", "c:x", "d:x"]
    assert len({f.records[0].path for f in facts.facts[1:]}) == 2
