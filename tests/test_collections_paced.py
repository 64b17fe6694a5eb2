"""Extraction runs with fewer young-generation collections and puts Python's pace back after,
also when a fact fails."""

from __future__ import annotations

import gc

import pytest

from apron.extractors.engine_api import EngineSpec, FactExtractor, FactOutput
from apron.extractors.errors import AnchorError
from apron.extractors.parsing.collections_paced import YOUNG_THRESHOLD, fewer_collections
from apron.extractors.records import FactKind
from apron.extractors.runner.base import extract_engine
from apron.extractors.sglang.records import SglangDocsRow
from apron.extractors.snapshot import Snapshot


class EmptySnapshot(Snapshot):
    engine = "sglang"
    commit = "0" * 40

    def exists(self, path: str) -> bool:
        return False

    def list_files(self, directory: str) -> list[str]:
        return []

    def blob_sha(self, path: str) -> str:
        raise KeyError(path)

    def read_bytes(self, path: str) -> bytes:
        raise KeyError(path)


def test_the_threshold_is_raised_inside_and_restored_after():
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (max(before[0], YOUNG_THRESHOLD), *before[1:])
    assert gc.get_threshold() == before


def test_a_higher_threshold_is_kept():
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD * 2, *before[1:])
    try:
        with fewer_collections():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD * 2
    finally:
        gc.set_threshold(*before)


def test_extract_engine_runs_paced_and_restores_the_pace_when_a_fact_fails():
    seen = []

    def failing(snapshot, needed):
        seen.append(gc.get_threshold()[0])
        return FactOutput(())

    kind = FactKind("docs_table_rows", "Docs rows", SglangDocsRow, "rows")
    engine = EngineSpec(
        engine_id="sglang",
        title="SGLang",
        upstream_url="https://example.com",
        facts=(FactExtractor(kind, failing),),
    )
    before = gc.get_threshold()
    with pytest.raises(AnchorError, match="extracted nothing"):
        extract_engine(engine, EmptySnapshot(), commit_date="2026-01-01")
    assert seen == [max(before[0], YOUNG_THRESHOLD)]
    assert gc.get_threshold() == before
