"""Layers of two kinds with their own KV geometry (apron.layers.kind_geometry): Gemma 4's full
layers (global_head_dim, num_global_key_value_heads with attention_k_eq_v; vLLM gemma4.py) and
MiMo-V2's windowed layers (swa_*; vLLM mimo_v2.py), whole and per GPU. Figures by hand, and
vLLM's own (conformance/vllm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apron import plan
from apron.config import load_config
from apron.layers import FULL, SLIDING, KindGeometry, kind_geometry

CORPUS = Path(__file__).resolve().parent / "corpus"


def _vllm(result):
    return next(v for v in result.engines if v.engine == "vllm")


def test_gemma4_full_layers_take_the_global_geometry():
    geometry = kind_geometry(load_config(CORPUS / "gemma-4-31b.json"))
    assert geometry[SLIDING][:3] == (16, 256, 256)
    assert geometry[FULL][:3] == (4, 512, 512)  # attention_k_eq_v: num_global_key_value_heads


@pytest.mark.parametrize(
    ("tp", "per_token"),
    [
        # 50 windowed layers x 16 heads x (256 + 256) x 2 B = 819,200
        # + 10 full layers x 4 heads x (512 + 512) x 2 B = 81,920 -> 901,120 B
        (1, 901_120),
        # tp 2: 8 and 2 heads per GPU: 409,600 + 40,960
        (2, 450_560),
        # tp 8: 16 // 8 = 2 windowed heads, max(1, 4 // 8) = 1 full head: 102,400 + 20,480
        (8, 122_880),
    ],
)
def test_gemma4_kv_per_gpu(tp, per_token):
    view = _vllm(plan(CORPUS / "gemma-4-31b.json", tp=tp, context=4096))
    assert view.gpu.kv_bytes_per_token == per_token
    assert view.gpu.kv_heads_per_gpu == max(1, 16 // tp)  # ModelConfig.get_num_kv_heads


def test_gemma4_kv_at_context_is_known():
    # at 131,072 tokens: 81,920 x 131,072 + 819,200 x min(131,072, 1,024)
    p = plan(CORPUS / "gemma-4-31b.json", context=131072).prediction
    assert p.kv_bytes_at_context == 81_920 * 131_072 + 819_200 * 1_024


def test_without_k_eq_v_the_full_layers_keep_the_kv_heads():
    config = json.loads((CORPUS / "gemma-4-31b.json").read_text())
    config["text_config"]["attention_k_eq_v"] = False
    geometry = kind_geometry(load_config(config))
    assert geometry[FULL] == KindGeometry(
        16, 512, 512, "num_key_value_heads 16, global_head_dim 512 (K and V)"
    )


@pytest.mark.parametrize(
    ("tp", "per_token"),
    [
        # 39 windowed layers x 8 heads x (192 + 128) x 2 B = 199,680
        # + 9 full layers x 4 heads x (192 + 128) x 2 B = 23,040 -> 222,720 B
        (1, 222_720),
        # tp 2: 4 and 2 heads per GPU: 99,840 + 11,520 (it was not divided before)
        (2, 111_360),
        # tp 8: max(1, 8 // 8) = 1 and max(1, 4 // 8) = 1: 24,960 + 5,760
        (8, 30_720),
    ],
)
def test_mimo_v2_kv_per_gpu(tp, per_token):
    view = _vllm(plan(CORPUS / "mimo-v2-flash.json", tp=tp, context=4096))
    assert view.gpu.kv_bytes_per_token == per_token


def test_a_missing_field_of_a_kind_is_unknown_naming_it():
    # (Gemma 4's head_dim is filled by transformers' Gemma4TextConfig default, 256)
    config = json.loads((CORPUS / "mimo-v2-flash.json").read_text())
    del config["swa_head_dim"]
    assert kind_geometry(load_config(config)) == "per-kind head geometry needs swa_head_dim"
    p = plan(config, context=4096).prediction
    assert p.kv_bytes_at_context is None and "swa_head_dim" in p.unknown[0]
