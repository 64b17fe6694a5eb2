"""The parse cache: results keyed by what the extractor saw (paths probed, blobs read, earlier
facts read), shared by `extract history` and a cached engine for plain extraction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from apron.extractors.engine_api import EngineSpec, FactOutput, run_order
from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError
from apron.extractors.git import GitSource
from apron.extractors.records import Record
from apron.extractors.runner.base import extract_engine
from apron.extractors.runner.factcache import FactCache, cached_engine, code_version
from apron.extractors.snapshot import MemorySnapshot, Snapshot
from tests.vllm_miniatures import CONVERTOR_PATH, REGISTRY_PATH, tree_v1

VLLM = ENGINES["vllm"]


def counted(engine: EngineSpec, calls: list[str]) -> EngineSpec:
    def wrap(extractor):
        def run(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
            calls.append(extractor.kind.name)
            return extractor.run(snapshot, done)

        run.__qualname__ = f"counted.{extractor.kind.name}"
        return replace(extractor, run=run)

    return replace(engine, facts=tuple(wrap(f) for f in engine.facts))


def test_cached_engine_gives_the_same_facts_and_parses_once(tmp_path):
    snapshot = MemorySnapshot(tree_v1(), engine="vllm")
    plain = extract_engine(VLLM, snapshot, commit_date="2026-01-01")
    calls: list[str] = []
    engine = counted(VLLM, calls)
    cache = FactCache.at(tmp_path)
    first = extract_engine(cached_engine(engine, cache), snapshot, commit_date="2026-01-01")
    assert len(calls) == len(VLLM.facts)
    again = extract_engine(
        cached_engine(engine, FactCache.at(tmp_path)),
        MemorySnapshot(tree_v1(), engine="vllm"),
        commit_date="2026-01-01",
    )
    assert len(calls) == len(VLLM.facts)  # nothing ran: every fact came from disk
    for result in (first, again):
        assert result.facts == plain.facts  # records and provenance (path + blob) alike
        assert result.warnings == plain.warnings


def test_an_unrelated_change_costs_nothing_and_a_related_one_one_parse(tmp_path):
    calls: list[str] = []
    engine = cached_engine(counted(VLLM, calls), FactCache.at(tmp_path))
    tree = tree_v1()
    extract_engine(engine, MemorySnapshot(tree), commit_date="x")
    calls.clear()
    extract_engine(engine, MemorySnapshot({**tree, "README.md": "new\n"}), commit_date="x")
    assert calls == []
    registry = tree[REGISTRY_PATH].replace("# a note that is not a section\n", "")
    extract_engine(engine, MemorySnapshot({**tree, REGISTRY_PATH: registry}), commit_date="x")
    # the facts that read the registry run again; docs_registry_findings reads registry_rows
    # through `done`, whose records did not change (a plain comment went away): it is not run.
    # mamba_state_hooks reads the whole models folder, the registry among its files
    assert sorted(calls) == [
        "interface_flags",
        "mamba_state_hooks",
        "model_class_flags",
        "registry_notices",
        "registry_rows",
    ]


def test_errors_are_cached_and_name_the_commit_they_happen_at(tmp_path):
    calls: list[str] = []
    engine = cached_engine(counted(VLLM, calls), FactCache.at(tmp_path))
    tree = {**tree_v1(), REGISTRY_PATH: "x = 1\n"}
    with pytest.raises(AnchorError) as first:
        extract_engine(engine, MemorySnapshot(tree, commit="a" * 40), commit_date="x")
    ran = len(calls)
    with pytest.raises(AnchorError) as again:
        extract_engine(engine, MemorySnapshot(tree, commit="b" * 40), commit_date="x")
    assert len(calls) == ran  # no fact ran again, the failing one included ...
    # the first fact to fail reads the registry (interface_flags follows its imports)
    assert again.value.anchor == first.value.anchor == "ClassVar[Literal[True]]"
    assert again.value.commit == "b" * 40  # ... and the error names the new commit
    assert again.value.paths == (REGISTRY_PATH,)


def test_a_blob_the_source_cannot_send_is_not_cached(make_repo, tmp_path):
    repo, shas = make_repo([(tree_v1(), "v1")])
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    snapshot = source.snapshot(shas[0])
    sha = snapshot.blob_sha(CONVERTOR_PATH)
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    cache = FactCache.at(tmp_path / "c")
    with pytest.raises(MissingPathError, match="did not send it"):
        extract_engine(cached_engine(VLLM, cache), snapshot, commit_date="x")
    calls: list[str] = []
    with pytest.raises(MissingPathError, match="did not send it"):
        extract_engine(
            cached_engine(counted(VLLM, calls), FactCache.at(tmp_path / "c")),
            snapshot,
            commit_date="x",
        )
    # the first fact to read ran again (its read fetched the engine's files): a transport
    # failure is not a result
    assert calls[:1] == [run_order(VLLM.facts)[0].kind.name]


def test_a_cache_miss_fetches_the_declared_reads_in_one_batch(make_repo, tmp_path):
    repo, shas = make_repo(
        [
            (tree_v1(), "v1"),
            (
                {
                    CONVERTOR_PATH: tree_v1()[CONVERTOR_PATH] + "\n",
                    REGISTRY_PATH: tree_v1()[REGISTRY_PATH] + "\n",
                },
                "v2",
            ),
        ]
    )
    cache_dir = tmp_path / "c"
    source = GitSource("vllm", str(repo), cache_dir=cache_dir)
    extract_engine(
        cached_engine(VLLM, FactCache.at(cache_dir)), source.snapshot(shas[0]), commit_date="x"
    )
    second = GitSource("vllm", str(repo), cache_dir=cache_dir)
    extract_engine(
        cached_engine(VLLM, FactCache.at(cache_dir)), second.snapshot(shas[1]), commit_date="x"
    )
    # the commit, then every file the engine declares (the changed ones included) at once
    assert second.fetch_requests == 2


def test_code_version_is_stable_within_a_process():
    assert code_version() == code_version() and len(code_version()) == 40
