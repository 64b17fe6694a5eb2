"""`extract history` against the real vLLM mirror (APRON_MIRROR_VLLM); skipped when unset.

The expected entries were checked by hand on the mirror: `git show <commit>` of each commit
below changes the model_type lists of is_deepseek_mla as stated."""

from __future__ import annotations

import pytest

from apron.extractors.commands.history import pr_number, run_history
from apron.extractors.engines import ENGINES
from apron.extractors.git import GitSource
from apron.extractors.runner.factcache import FactCache
from tests.conftest import mirror

pytestmark = pytest.mark.real_mirror

PIN = "9aaf83ef502fc37bc647f6e474314d48ba36cd1c"  # the pin before 2026-07-24: a fixed window
BEFORE_EAGLE_MTP = "5e714f7ff4166d62b5f923766a0268a1758f2a61"  # 2026-01-12, parent of #31753
EXPECTED_FIRST = {
    ("eagle_inner", "deepseek_mtp"): ("80221e1884bd36751e8ae0308acf71f42946a05e", 31753),
    ("main", "glm4_moe_lite"): ("586a57ad7ede5c5132a70d021fc48fe05b10f5c3", 32614),
    ("main", "glm4_moe_lite_mtp"): ("586a57ad7ede5c5132a70d021fc48fe05b10f5c3", 32614),
    ("main", "glm_moe_dsa"): ("978a37c82387ce4a40aaadddcdbaf4a06fc4d590", 34124),
    ("main", "bailing_hybrid"): ("ab87f85231b07b107f16ddb9e985deb0d83975ae", 35102),
    ("main", "AXK1"): ("905d76b51dc3b98c4d0ee35317493f21f9e6b5d0", 32407),
    ("eagle_inner", "AXK1"): ("905d76b51dc3b98c4d0ee35317493f21f9e6b5d0", 32407),
    ("main", "deepseek_v4"): ("4d51588e2381018348f1022dfa3a7698899805b7", 40860),
}


@pytest.fixture
def vllm_mirror():
    path = mirror("vllm")
    if path is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    return path


def test_mla_model_types_2026(tmp_path, vllm_mirror):
    source = GitSource("vllm", vllm_mirror, cache_dir=tmp_path / "c")
    history = run_history(
        ENGINES["vllm"],
        "mla_model_types",
        source,
        BEFORE_EAGLE_MTP,
        PIN,
        cache=FactCache.at(tmp_path / "c"),
        jobs=2,
    )
    line = history.timeline()
    assert not line.unsupported
    firsts = {(i.key["scope"], i.key["model_type"]): i.intervals for i in line.items}
    for key, (sha, pr) in EXPECTED_FIRST.items():
        (interval,) = firsts[key]
        assert (interval.first.sha, pr_number(interval.first.subject)) == (sha, pr), key
        assert interval.removed is None and not interval.at_start
    at_start = {k for k, (i,) in firsts.items() if i.at_start}
    assert ("main", "kimi_k2") in at_start and ("eagle_inner", "deepseek_v32") in at_start
    assert len(firsts) == 20  # the 20 rows vLLM had at that commit
    assert history.fetch_requests <= 6
    again = run_history(
        ENGINES["vllm"],
        "mla_model_types",
        GitSource("vllm", vllm_mirror, cache_dir=tmp_path / "c"),
        BEFORE_EAGLE_MTP,
        PIN,
        cache=FactCache.at(tmp_path / "c"),
    )
    assert again.parses == 0 and again.fetch_requests == 0
