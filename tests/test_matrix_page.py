"""generated/MATRIX.md is at most 100,000 characters (a page a reviewer opens): past that the
cells leave out where they were read, then the last rows go, and the page says so and links the
engine pages that hold what it left out."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.report import reviewer
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot
from tests import vllm_miniatures
from tests.conftest import REPO_ROOT


def test_the_committed_matrix_fits_the_limit():
    text = (REPO_ROOT / "generated" / "MATRIX.md").read_text(encoding="utf-8")
    assert len(text) <= reviewer.MATRIX_LIMIT == 100_000


@pytest.fixture(scope="module")
def facts():
    snapshot = MemorySnapshot(vllm_miniatures.tree_v1(), engine="vllm", commit="1" * 40)
    return {"vllm": extract_engine(ENGINES["vllm"], snapshot, commit_date="2026-01-01")}


def test_a_page_that_fits_keeps_every_trace(facts):
    text = reviewer.render_matrix(facts)
    assert "(registry.py _TEXT_GENERATION_MODELS)" in text and "left out" not in text


def test_past_the_limit_the_traces_go_first_then_rows_and_the_page_links_them(facts, monkeypatch):
    whole = reviewer.render_matrix(facts)
    without_traces = reviewer._render_matrix(facts, traces=False)
    monkeypatch.setattr(reviewer, "MATRIX_LIMIT", len(without_traces))
    text = reviewer.render_matrix(facts)
    assert len(text) <= reviewer.MATRIX_LIMIT < len(whole)
    assert "(registry.py _TEXT_GENERATION_MODELS)" not in text
    assert "The file and symbol each cell was read from are left out here" in text
    assert "[vLLM](vllm/README.md)" in text
    monkeypatch.setattr(reviewer, "MATRIX_LIMIT", len(without_traces) - 200)
    text = reviewer.render_matrix(facts)
    assert len(text) <= reviewer.MATRIX_LIMIT
    architectures = reviewer._architectures(facts)
    last = architectures[-1]
    assert f"| {last} |" not in text
    assert "more architectures (" in text and f".. {last}) are left out here" in text
    assert f"{len(architectures)} architectures." in text
