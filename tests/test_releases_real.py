"""Release tags on the real llama.cpp mirror (APRON_MIRROR_LLAMACPP; the kmbandy fork, whose
bNNNN tags jump from b8668 to b8904 and sit on the fork's own commits and merges), and the vLLM
mirror, which has no tags. Skipped when the mirrors are not set.

Every expected release is also computed here with plain `git tag --contains / --merged` on the
mirror, so the test checks the containment pass against git itself."""

from __future__ import annotations

import subprocess

import pytest

from apron.extractors.commands.history import release_view, run_history
from apron.extractors.commands.releases import release_tags
from apron.extractors.commands.support import answer_support
from apron.extractors.engines import ENGINES
from apron.extractors.git import GitSource
from apron.extractors.runner.factcache import FactCache
from tests.conftest import mirror

pytestmark = pytest.mark.real_mirror

SINCE = "009a1133268d040a7c574a7b9c95413b0be369a9"  # 2026-04-09, parent of d6f30300
PIN = "0253fb21f595246f54c192fe8332f34173be251b"  # 2026-05-16
RS_ROLLBACK = "255582687b8dd211fdbc582e43ab842491554e94"  # 2026-05-16, #22673
SM_TENSOR = "d6f3030047f85a98b009189e76f441fe818ea44d"  # 2026-04-09, #19378
B8904 = "1b878a9feb317c8c5953a0c7c114beb86c8551df"
PATTERN = ENGINES["llamacpp"].release_tags


@pytest.fixture
def llamacpp_mirror():
    path = mirror("llamacpp")
    if path is None:
        pytest.skip("APRON_MIRROR_LLAMACPP is not set")
    return path


def _git_tags(repo: str, *args: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", repo, "tag", *args], check=True, capture_output=True, text=True
    ).stdout.split()
    return [t.name for t in release_tags([(name, "") for name in out], PATTERN)]


def test_llamacpp_predicates_first_releases(tmp_path, llamacpp_mirror):
    # by hand, with git: the facts the brief gives
    assert _git_tags(llamacpp_mirror, "--contains", RS_ROLLBACK) == ["b9402"]
    assert _git_tags(llamacpp_mirror, "--contains", SM_TENSOR)[0] == "b8904"
    assert _git_tags(llamacpp_mirror, "--merged", PIN)[-1] == "b8668"

    source = GitSource("llamacpp", llamacpp_mirror, cache_dir=tmp_path / "c")
    history = run_history(
        ENGINES["llamacpp"],
        "class_predicates",
        source,
        SINCE,
        PIN,
        cache=FactCache.at(tmp_path / "c"),
    )
    view = release_view(history, source, PATTERN)
    items = {item.label: (n, item) for n, item in enumerate(history.timeline().items)}

    n, rollback = items["llm_arch_supports_rs_rollback"]
    (interval,) = rollback.intervals  # absent (present=False) before #22673: not an item
    assert interval.first.sha == RS_ROLLBACK and not interval.at_start
    span = view.spans[(n, 0)]
    assert (span.first.name, span.last.name) == ("b9402", "b9402")

    n, sm_tensor = items["llm_arch_supports_sm_tensor"]
    (interval,) = sm_tensor.intervals
    assert interval.first.sha == SM_TENSOR
    first = view.spans[(n, 0)].first
    assert first.name == "b8904" and first.commit == B8904
    assert first.name == _git_tags(llamacpp_mirror, "--contains", SM_TENSOR)[0]

    # the pin contains no tag after b8668: every placed release is outside its history
    assert view.in_until == frozenset()
    assert [t.name for t in view.placed] == _git_tags(llamacpp_mirror, "--contains", SINCE)
    assert not view.unplaced
    assert view.seconds < 5, f"release mapping took {view.seconds:.1f} s"

    again = release_view(history, source, PATTERN)  # warm: the tag history is cached
    assert again.fetch_requests == 0 and again.spans == view.spans


def test_llamacpp_support_by_release_tag(tmp_path, llamacpp_mirror):
    with GitSource("llamacpp", llamacpp_mirror, cache_dir=tmp_path / "c") as source:
        answer = answer_support(
            ENGINES["llamacpp"],
            source,
            "Qwen3NextForCausalLM",
            PIN,
            release="b8904",
            fact_cache=FactCache.at(tmp_path / "c"),
        )
    assert (answer.answer, answer.commit.sha, answer.release) == ("yes", B8904, "b8904")
    assert answer.fact == "hf_architectures"
    assert "loads as LLM_ARCH_QWEN3NEXT" in answer.reason
    assert "hybrid" in answer.classes
    assert answer.exit_code == 0


SARVAM = "1e5ad35d5"  # 2026-05-09 model : add sarvam_moe architecture support (#20275)


def test_llamacpp_support_changes_between_releases(tmp_path, llamacpp_mirror):
    assert _git_tags(llamacpp_mirror, "--contains", SARVAM) == ["b9402"]
    answers = {}
    with GitSource("llamacpp", llamacpp_mirror, cache_dir=tmp_path / "c") as source:
        for tag in ("b8904", "b9402"):
            answers[tag] = answer_support(
                ENGINES["llamacpp"],
                source,
                "SarvamMoEForCausalLM",
                PIN,
                release=tag,
                fact_cache=FactCache.at(tmp_path / "c"),
            )
    assert answers["b8904"].answer == "no" and answers["b8904"].exit_code == 1
    assert answers["b9402"].answer == "yes"  # from the conversion/ package layout
    assert answers["b9402"].reason.startswith("conversion/bailingmoe.py registers")


def test_vllm_mirror_has_no_release_tags(tmp_path):
    path = mirror("vllm")
    if path is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    with GitSource("vllm", path, cache_dir=tmp_path / "c") as source:
        assert release_tags(source.tags(), ENGINES["vllm"].release_tags) == []
