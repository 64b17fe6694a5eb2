"""Facts declare what they read and need: the runner orders them, passes exactly their needs,
prefetches their reads once and stamps their warnings; a bad declaration fails at once."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import replace

import pytest

from apron.extractors.engine_api import EngineSpec, FactExtractor, FactOutput, run_order
from apron.extractors.engines import ENGINES
from apron.extractors.errors import FactGraphError
from apron.extractors.records import FactKind, Record, warning
from apron.extractors.runner.base import declared_files, expand_reads, extract_engine, with_needs
from apron.extractors.runner.factcache import FactCache, cached_engine
from apron.extractors.snapshot import MemorySnapshot, Snapshot
from tests import llamacpp_miniatures, sglang_miniatures, trtllm_miniatures, vllm_miniatures


class Item(Record):
    """A test record."""

    KEY = ("name",)

    name: str
    path: str


def kind(name: str) -> FactKind:
    return FactKind(name, name.title(), Item, f"the {name} fact")


def reader(path: str):
    def run(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        got = [n for names in needed.values() for n in names]
        words = snapshot.read_text(path).split() + [f"from:{r.name}" for r in got]
        return FactOutput(
            tuple(Item(name=w, path=path) for w in words),
            (warning("seen", path, f"{path} was read", path, ""),),
        )

    return run


def toy(*facts: FactExtractor) -> EngineSpec:
    return EngineSpec(
        engine_id="toy", title="Toy", upstream_url="https://example.invalid/toy", facts=facts
    )


ENGINE_TREES = [
    ("vllm", vllm_miniatures.tree_v1()),
    ("llamacpp", llamacpp_miniatures.tree_v2()),
    ("sglang", sglang_miniatures.full_tree_2026()),
    ("trtllm", trtllm_miniatures.tree()),
]


def _snapshot(engine: str, tree) -> MemorySnapshot:
    return MemorySnapshot({p: t for p, t in tree.items() if t is not None}, engine=engine)


def _by_name(facts) -> dict:
    return {r.kind.name: (r.records, r.sources) for r in facts.facts}


# ---------------------------------------------------------------- declarations


def test_a_cycle_is_an_error_when_the_engine_is_defined():
    with pytest.raises(FactGraphError, match="form a cycle: a, b"):
        toy(
            FactExtractor(kind("a"), reader("a"), needs=("b",)),
            FactExtractor(kind("b"), reader("b"), needs=("a",)),
            FactExtractor(kind("c"), reader("c")),
        )


def test_an_unknown_need_is_an_error_naming_the_facts():
    with pytest.raises(FactGraphError, match="'a' needs 'nosuch'.*its facts: a, b"):
        toy(
            FactExtractor(kind("a"), reader("a"), needs=("nosuch",)),
            FactExtractor(kind("b"), reader("b")),
        )


def test_a_fact_declared_twice_is_an_error():
    with pytest.raises(FactGraphError, match="'a' is declared twice"):
        toy(FactExtractor(kind("a"), reader("a")), FactExtractor(kind("a"), reader("b")))


def test_a_glob_over_directories_is_refused():
    with pytest.raises(FactGraphError, match="one directory only"):
        FactExtractor(kind("a"), reader("a"), reads=("src/*/x.cpp",))


def test_every_engine_declares_a_valid_graph_and_reads():
    for engine in ENGINES.values():
        assert [f.kind.name for f in run_order(engine.facts)]  # no error
        for fact in engine.facts:
            assert fact.reads or fact.needs, (engine.engine_id, fact.kind.name)


def test_run_order_puts_needs_first_and_breaks_ties_by_name():
    facts = (
        FactExtractor(kind("z"), reader("z"), needs=("m",)),
        FactExtractor(kind("m"), reader("m")),
        FactExtractor(kind("a"), reader("a"), needs=("z",)),
        FactExtractor(kind("b"), reader("b")),
    )
    assert [f.kind.name for f in run_order(facts)] == ["b", "m", "z", "a"]
    assert with_needs(facts, ["a"]) == {"a", "z", "m"}


# ---------------------------------------------------------------- the runner


def test_each_fact_gets_exactly_its_needs_and_its_own_warnings():
    engine = toy(
        FactExtractor(kind("names"), reader("names.txt"), reads=("names.txt",)),
        FactExtractor(kind("other"), reader("other.txt"), reads=("other.txt",)),
        FactExtractor(kind("both"), reader("both.txt"), reads=("both.txt",), needs=("names",)),
    )
    snapshot = MemorySnapshot({"names.txt": "a b\n", "other.txt": "o\n", "both.txt": "x\n"})
    facts = extract_engine(engine, snapshot, commit_date="x")
    both = {r.name for r in facts.fact("both").records}
    assert both == {"x", "from:a", "from:b"}  # names' records, not other's
    assert [(w.fact, w.subject) for w in facts.warnings] == [
        ("both", "both.txt"),
        ("names", "names.txt"),
        ("other", "other.txt"),
    ]


def test_reading_a_fact_that_is_not_declared_fails():
    def sneaky(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        return FactOutput(tuple(needed["names"]))

    engine = toy(
        FactExtractor(kind("names"), reader("names.txt"), reads=("names.txt",)),
        FactExtractor(kind("sneaky"), sneaky),
    )
    with pytest.raises(KeyError, match="names"):
        extract_engine(engine, MemorySnapshot({"names.txt": "a\n"}), commit_date="x")


def test_only_runs_the_needed_facts_and_returns_the_selected_ones():
    ran: list[str] = []

    def counted(name: str, path: str):
        inner = reader(path)

        def run(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
            ran.append(name)
            return inner(snapshot, needed)

        return run

    engine = toy(
        FactExtractor(kind("names"), counted("names", "n.txt"), reads=("n.txt",)),
        FactExtractor(kind("unused"), counted("unused", "n.txt"), reads=("n.txt",)),
        FactExtractor(kind("both"), counted("both", "b.txt"), reads=("b.txt",), needs=("names",)),
    )
    files = MemorySnapshot({"n.txt": "a\n", "b.txt": "b\n"})
    facts = extract_engine(engine, files, commit_date="x", only={"both"})
    assert ran == ["names", "both"]
    assert [r.kind.name for r in facts.facts] == ["both"]
    assert {w.fact for w in facts.warnings} == {"both"}


class CountingSnapshot(MemorySnapshot):
    def __init__(self, files) -> None:
        super().__init__(files)
        self.prefetches: list[list[str]] = []

    def prefetch(self, paths: Iterable[str]) -> None:
        self.prefetches.append(list(paths))


def test_the_union_of_reads_is_prefetched_once_globs_expanded():
    engine = toy(
        FactExtractor(kind("a"), reader("a.txt"), reads=("a.txt", "src/*.cpp")),
        FactExtractor(kind("b"), reader("b.txt"), reads=("b.txt", "docs", "a.txt")),
    )
    snapshot = CountingSnapshot(
        {"a.txt": "1\n", "b.txt": "2\n", "src/x.cpp": "", "src/x.h": "", "docs/p.md": ""}
    )
    extract_engine(engine, snapshot, commit_date="x")
    assert snapshot.prefetches == [["a.txt", "src/x.cpp", "b.txt", "docs"]]


def test_a_subtree_read_is_prefetched_as_given_and_not_weighed():
    engine = toy(FactExtractor(kind("a"), reader("a.txt"), reads=("a.txt", "src/**")))
    snapshot = CountingSnapshot({"a.txt": "1\n", "src/x/y.cpp": ""})
    extract_engine(engine, snapshot, commit_date="x")
    assert snapshot.prefetches == [["a.txt", "src/**"]]
    assert declared_files(snapshot, engine.facts[0]) == ["a.txt"]


def test_a_run_answered_by_the_fact_cache_prefetches_nothing(tmp_path):
    vllm = ENGINES["vllm"]
    extract_engine(
        cached_engine(vllm, FactCache.at(tmp_path)),
        CountingSnapshot(vllm_miniatures.tree_v1()),
        commit_date="x",
    )
    again = CountingSnapshot(vllm_miniatures.tree_v1())
    extract_engine(cached_engine(vllm, FactCache.at(tmp_path)), again, commit_date="x")
    assert again.prefetches == []


@pytest.mark.parametrize(("engine_id", "tree"), ENGINE_TREES, ids=[e for e, _ in ENGINE_TREES])
def test_shuffling_the_fact_list_changes_no_fact(engine_id, tree):
    engine = ENGINES[engine_id]
    plain = extract_engine(engine, _snapshot(engine_id, tree), commit_date="x")
    for seed in range(3):
        facts = list(engine.facts)
        random.Random(seed).shuffle(facts)
        shuffled = extract_engine(
            replace(engine, facts=tuple(facts)), _snapshot(engine_id, tree), commit_date="x"
        )
        assert _by_name(shuffled) == _by_name(plain)
        assert shuffled.warnings == plain.warnings


@pytest.mark.parametrize(("engine_id", "tree"), ENGINE_TREES, ids=[e for e, _ in ENGINE_TREES])
def test_every_warning_names_the_fact_that_returned_it(engine_id, tree):
    engine = ENGINES[engine_id]
    facts = extract_engine(engine, _snapshot(engine_id, tree), commit_date="x")
    names = {f.kind.name for f in engine.facts}
    assert {w.fact for w in facts.warnings} <= names
    assert all(w.fact for w in facts.warnings)


def test_sglang_chain_warnings_belong_to_mla_architectures():
    facts = extract_engine(
        ENGINES["sglang"], _snapshot("sglang", sglang_miniatures.full_tree_2026()), commit_date="x"
    )
    flagged = {w.fact for w in facts.warnings if w.code == "not-registered"}
    assert flagged == {"mla_architectures"}


# SGLang's registry follows an EntryClass import into a module of a subpackage: a file no
# declaration can name in advance (it is read, and fetched, when the import is followed).
# vLLM's model-class flags follow each class's imports and bases wherever they lead in the tree
# (vllm/models/<name>/<platform>/, decorators in vllm/compilation/).
FOLLOWS_IMPORTS = {
    ("sglang", "registry_rows"): "python/sglang/srt/models/",
    ("vllm", "model_class_flags"): "vllm/",
}


@pytest.mark.parametrize(("engine_id", "tree"), ENGINE_TREES, ids=[e for e, _ in ENGINE_TREES])
def test_every_file_a_fact_reads_is_declared_in_its_reads(engine_id, tree):
    engine = ENGINES[engine_id]
    snapshot = _snapshot(engine_id, tree)
    facts = extract_engine(engine, snapshot, commit_date="x")
    by_name = {f.kind.name: f for f in engine.facts}
    for result in facts.facts:
        declared = set()
        for path in expand_reads(snapshot, by_name[result.kind.name].reads):
            declared |= {path, *snapshot.list_files(path)}
        followed = FOLLOWS_IMPORTS.get((engine_id, result.kind.name))
        undeclared = [
            s.path
            for s in result.sources
            if s.path not in declared and not (followed and s.path.startswith(followed))
        ]
        assert not undeclared, (result.kind.name, undeclared)
