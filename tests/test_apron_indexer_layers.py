"""The DSA indexer's IndexCache layer rule: extracted from the attention class of deepseek_v2.py
(a miniature of its shape; the real file in the real-mirror test) and evaluated per layer by
apron; figures by hand."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from apron import plan
from apron.expressions import evaluate
from apron.extractors.vllm.index_cache import indexer_rules
from apron.vllm_rule_env import CALLS
from tests.conftest import mirror
from tests.vllm_miniatures import DEEPSEEK_V2

CORPUS = Path(__file__).resolve().parent / "corpus"
PIN = "0231dd5467c61dca76f66269b6298a43772b3519"


def _skips(rule, config: dict, layers: int) -> list[bool]:
    return [bool(evaluate(rule.skip, {**config, "layer_id": i}, CALLS)) for i in range(layers)]


def test_the_miniature_rule_is_read_as_one_conditional():
    (rule,) = indexer_rules(DEEPSEEK_V2, "vllm/model_executor/models/deepseek_v2.py")
    assert (rule.model_class, rule.gate_key) == ("SparseLatentAttention", "index_topk")
    assert rule.builds_when == "self.sparse and (not skip_here or mtp)"
    # index_topk_freq 3, offset 2: layer l skips unless max(l - 1, 0) % 3 == 0 -> 0, 1, 4, 7
    assert [i for i, s in enumerate(_skips(rule, {"index_topk_freq": 3}, 9)) if not s] == [
        0,
        1,
        4,
        7,
    ]
    # no settings: every layer builds one; a pattern decides by its letters, False past its end
    assert not any(_skips(rule, {}, 5))
    assert _skips(rule, {"index_topk_pattern": "FSS"}, 5) == [False, True, True, False, False]


def test_a_branch_of_another_shape_is_an_error_naming_it():
    from apron.extractors.vllm.state_shapes import Unreadable

    text = DEEPSEEK_V2.replace(
        "skip_here = pattern[layer_id]", "print(1); skip_here = pattern[layer_id]"
    )
    with pytest.raises(Unreadable, match="does more than assign skip_here"):
        indexer_rules(text, "vllm/model_executor/models/deepseek_v2.py")


def _v32(**extra) -> dict:
    config = json.loads((CORPUS / "deepseek-v3.2.json").read_text())
    config.update(extra)
    return config


def test_every_layer_builds_an_indexer_without_index_cache_settings():
    # DeepSeek-V3.2: 61 x (512 + 64) x 2 B latent = 70,272 + 61 x 132 B indexer = 78,324
    assert plan(_v32(), context=1000).prediction.kv_bytes_per_token == 78_324


@pytest.mark.parametrize(
    ("extra", "indexed"),
    [
        # freq 4, offset 2: max(l - 1, 0) % 4 == 0 for l = 0, 1, 5, 9, .., 57: 2 + 14 = 16 layers
        ({"index_topk_freq": 4}, 16),
        # offset 0: max(l + 1, 0) % 4 == 0 for l = 3, 7, .., 59: 15 layers
        ({"index_topk_freq": 4, "index_skip_topk_offset": 0}, 15),
        # a pattern: F at 0 and 3, S elsewhere (61 letters): 2 layers
        ({"index_topk_pattern": "FSSF" + "S" * 57}, 2),
    ],
)
def test_index_cache_settings_decide_the_indexer_layers(extra, indexed):
    p = plan(_v32(**extra), context=1000).prediction
    assert p.kv_bytes_per_token == 70_272 + indexed * 132
    assert any(f"{indexed} of 61 layers build an indexer" in line for line in p.arithmetic)


@pytest.mark.real_mirror
def test_the_rule_at_the_pin():
    source = mirror("vllm")
    if source is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    text = subprocess.run(
        ["git", "-C", source, "show", f"{PIN}:vllm/model_executor/models/deepseek_v2.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (rule,) = indexer_rules(text, "vllm/model_executor/models/deepseek_v2.py")
    assert rule.model_class == "DeepseekV2MLAAttention"
    skips = _skips(rule, {"index_topk_freq": 4}, 61)
    assert sum(not s for s in skips) == 16
