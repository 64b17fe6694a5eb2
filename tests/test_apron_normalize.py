"""apron's static reading of transformers' configuration classes (apron.normalize).

The first tests pin the rules to hand-worked layouts; the last ones compare the static reading
with transformers' own classes and run only where transformers is installed (it is not a test
dependency: importing one configuration module costs about a second)."""

from __future__ import annotations

import pytest

from apron.config import load_config
from apron.layers import CHUNKED, FULL, LINEAR, SHARED, SLIDING, layout
from apron.normalize import RULES, derive


def test_gemma2_default_layout_alternates_starting_windowed():
    model = load_config({"model_type": "gemma2", "num_hidden_layers": 4})
    assert model.get("layer_types") == [
        "sliding_attention",
        "full_attention",
        "sliding_attention",
        "full_attention",
    ]
    assert model.get("sliding_window") == 4096 and model.get("head_dim") == 256


def test_gemma3_pattern_field_is_used_when_given():
    model = load_config(
        {"model_type": "gemma3_text", "num_hidden_layers": 4, "sliding_window_pattern": 2}
    )
    assert layout(model).kinds == (SLIDING, FULL, SLIDING, FULL)


def test_published_layer_types_win_over_the_class_default():
    model = load_config(
        {"model_type": "gemma2", "num_hidden_layers": 2, "layer_types": ["full_attention"] * 2}
    )
    assert layout(model).kinds == (FULL, FULL)
    assert model.read("layer_types").key == "layer_types"


def test_qwen3_next_interval():
    model = load_config(
        {"model_type": "qwen3_next", "num_hidden_layers": 8, "full_attention_interval": 2}
    )
    assert layout(model).kinds == (LINEAR, FULL) * 4


def test_minimax_attn_type_list_and_a_bad_entry():
    model = load_config({"model_type": "minimax_m1", "attn_type_list": [0, 1, 0]})
    assert layout(model).kinds == (LINEAR, FULL, LINEAR)
    bad = load_config({"model_type": "minimax_m1", "attn_type_list": [0, 2]})
    assert bad.get("layer_types") is None


def test_llama4_chunked_layout_from_the_interval_default():
    model = load_config(
        {"model_type": "llama4_text", "num_hidden_layers": 4, "attention_chunk_size": 16}
    )
    assert layout(model).kinds == (CHUNKED, CHUNKED, CHUNKED, FULL)
    assert "no-RoPE layers full attention" in model.read("layer_types").key


def test_gpt_bigcode_multi_query_false_is_mha():
    model = load_config({"model_type": "gpt_bigcode", "n_head": 16, "multi_query": False})
    assert model.get("num_key_value_heads") == 16
    assert load_config({"model_type": "gpt_bigcode", "n_head": 16}).get("num_key_value_heads") == 1


def test_kv_sharing_marks_the_last_layers():
    model = load_config(
        {
            "num_hidden_layers": 4,
            "layer_types": ["sliding_attention"] * 4,
            "num_kv_shared_layers": 3,
        }
    )
    assert layout(model).kinds == (SLIDING, SHARED, SHARED, SHARED)
    broken = load_config(
        {"num_hidden_layers": 2, "layer_types": ["full_attention"] * 2, "num_kv_shared_layers": 2}
    )
    assert "not below the 2 layers" in layout(broken).unknown[0]


def test_unknown_model_type_is_read_as_published_with_a_note():
    derived, note = derive("llama", lambda name: None)
    assert derived == {} and "no static rule for model_type 'llama'" in note


# -- against transformers' own classes, where installed --------------------------------------

CLASS_CASES = [
    ("gemma2", {"num_hidden_layers": 6}, ("layer_types", "sliding_window", "head_dim")),
    ("gemma3_text", {"num_hidden_layers": 13}, ("layer_types", "sliding_window", "head_dim")),
    ("cohere2", {"num_hidden_layers": 9}, ("layer_types",)),
    ("qwen3_next", {"num_hidden_layers": 12}, ("layer_types",)),
    ("qwen3_5_text", {"num_hidden_layers": 12}, ("layer_types",)),
    ("gpt_bigcode", {}, ("num_key_value_heads",)),
    ("llama4_text", {"num_hidden_layers": 8}, ("no_rope_layers",)),
]


@pytest.mark.parametrize(("model_type", "fields", "names"), CLASS_CASES)
def test_static_reading_matches_transformers(model_type, fields, names):
    transformers = pytest.importorskip("transformers")
    config = transformers.CONFIG_MAPPING[model_type](**fields)
    model = load_config({"model_type": model_type, **fields})
    for name in names:
        assert model.get(name) == getattr(config, name), name


def test_every_rule_names_a_model_type_transformers_or_vllm_knows():
    transformers = pytest.importorskip("transformers")
    vllm_only = {"minimax_m1", "minimax_text_01", "mimo_v2_flash", "mimo_v2", "gemma3"}
    for model_type in RULES:
        assert model_type in transformers.CONFIG_MAPPING or model_type in vllm_only, model_type
