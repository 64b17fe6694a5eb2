"""apron's reading of the extracted configuration classes (apron.normalize over
generated/transformers/).

The first tests pin the readings to hand-worked layouts; the last ones compare them with
transformers' own classes and run only where transformers is installed (it is not a test
dependency: importing one configuration module costs about a second)."""

from __future__ import annotations

import pytest

from apron.config import load_config
from apron.constraints import load_constraints
from apron.layers import CHUNKED, FULL, LINEAR, SHARED, SLIDING, layout
from apron.normalize import HAND_RULES, derive


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


def test_qwen3_next_takes_vllms_class_which_ignores_the_interval_field():
    # vLLM registers its own Qwen3NextConfig (vllm/transformers_utils/configs/qwen3_next.py) for
    # qwen3_next; its __init__ builds layer_types with a literal 4 ("linear_attention" if
    # bool((i + 1) % 4)), so full_attention_interval 2 changes nothing: layers 4 and 8 are full.
    model = load_config(
        {"model_type": "qwen3_next", "num_hidden_layers": 8, "full_attention_interval": 2}
    )
    assert layout(model).kinds == (LINEAR, LINEAR, LINEAR, FULL) * 2
    assert "vllm/transformers_utils/configs/qwen3_next.py" in model.read("layer_types").key
    # transformers' own Qwen3_5TextConfig reads the key (kwargs.pop("full_attention_interval", 4))
    qwen35 = load_config(
        {"model_type": "qwen3_5_text", "num_hidden_layers": 4, "full_attention_interval": 2}
    )
    assert layout(qwen35).kinds == (LINEAR, FULL, LINEAR, FULL)


def test_minimax_attn_type_list_and_a_bad_entry():
    model = load_config({"model_type": "minimax_m1", "attn_type_list": [0, 1, 0]})
    assert layout(model).kinds == (LINEAR, FULL, LINEAR)
    bad = load_config({"model_type": "minimax_m1", "attn_type_list": [0, 2]})
    assert bad.get("layer_types") is None


def test_llama4_chunked_layout_from_the_interval_default():
    model = load_config(
        {"model_type": "llama4_text", "num_hidden_layers": 4, "attention_chunk_size": 16}
    )
    # transformers Llama4TextConfig: no_rope_layer_interval 4 -> no_rope_layers [1, 1, 1, 0];
    # layer_types "chunked_attention" where no_rope is 1
    assert layout(model).kinds == (CHUNKED, CHUNKED, CHUNKED, FULL)
    assert "Llama4TextConfig" in model.read("layer_types").key
    # attention_chunk_size null: vLLM llama4.py builds no chunked layer
    unchunked = load_config(
        {"model_type": "llama4_text", "num_hidden_layers": 4, "attention_chunk_size": None}
    )
    assert layout(unchunked).kinds == (FULL,) * 4


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
    classes = load_constraints().config_classes()
    derived, note = derive(classes, "no_such_model", lambda name: None)
    assert derived == {} and "no configuration class for model_type 'no_such_model'" in note


def test_qwen3_head_dim_default_is_the_class_default_not_hidden_over_heads():
    # Qwen3-0.6B without head_dim: transformers Qwen3Config declares head_dim: int = 128
    # (hidden_size / num_attention_heads would be 1024 / 16 = 64)
    model = load_config(
        {
            "model_type": "qwen3",
            "hidden_size": 1024,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "num_hidden_layers": 28,
        }
    )
    assert model.get("head_dim") == 128
    assert "Qwen3Config" in model.read("head_dim").key


def test_granite_hybrid_mamba_defaults_and_the_auto_head_dim():
    # GraniteMoeHybridConfig: mamba_expand: int | None = 2, mamba_d_head "auto" ->
    # mamba_expand x hidden_size // mamba_n_heads = 2 x 1536 // 48 = 64
    model = load_config(
        {"model_type": "granitemoehybrid", "hidden_size": 1536, "mamba_n_heads": 48}
    )
    assert model.get("mamba_expand") == 2
    assert model.get("mamba_d_head") == 64


def test_a_published_null_is_replaced_by_the_derivation():
    # MistralConfig.__post_init__: head_dim None -> hidden_size // num_attention_heads = 4096 // 32
    model = load_config(
        {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": None}
    )
    assert model.get("head_dim") == 128


def test_the_mha_fallback_copy_does_not_fill_a_kv_head_key():
    # LlamaConfig.__post_init__ copies num_attention_heads into a None num_key_value_heads:
    # that is the MHA fallback, so apron leaves the key absent (or null) and says unknown
    absent = load_config({"model_type": "llama", "num_attention_heads": 16})
    null = load_config(
        {"model_type": "llama", "num_attention_heads": 16, "num_key_value_heads": None}
    )
    assert absent.read("num_key_value_heads") is None
    assert null.read("num_key_value_heads").value is None
    # GPTBigCode computes it from multi_query (default True): 1 KV head
    assert load_config({"model_type": "gpt_bigcode"}).get("num_key_value_heads") == 1


def test_attribute_map_comes_from_the_class():
    # GPT2Config.attribute_map: hidden_size -> n_embd, num_hidden_layers -> n_layer
    model = load_config({"model_type": "gpt2", "n_embd": 768, "n_layer": 12})
    assert model.get("hidden_size") == 768 and model.key_of("num_hidden_layers") == "n_layer"


# -- against transformers' own classes, where installed --------------------------------------

CLASS_CASES = [
    ("gemma2", {"num_hidden_layers": 6}, ("layer_types", "sliding_window", "head_dim")),
    ("gemma3_text", {"num_hidden_layers": 13}, ("layer_types", "sliding_window", "head_dim")),
    ("cohere2", {"num_hidden_layers": 9}, ("layer_types",)),
    ("qwen3_next", {"num_hidden_layers": 12}, ("layer_types",)),
    ("qwen3_5_text", {"num_hidden_layers": 12}, ("layer_types",)),
    ("gpt_bigcode", {}, ("num_key_value_heads",)),
    ("llama4_text", {"num_hidden_layers": 8}, ("no_rope_layers", "layer_types", "head_dim")),
    ("qwen3", {"hidden_size": 1024, "num_attention_heads": 16}, ("head_dim", "layer_types")),
    ("llama", {"num_attention_heads": 16}, ("head_dim",)),  # KV heads: the MHA copy is withheld
    (
        "granitemoehybrid",
        {"hidden_size": 1536, "mamba_n_heads": 48},
        ("mamba_expand", "mamba_d_head"),  # layer_types: 5.5.3 writes "mamba", later releases not
    ),
    (
        "zamba2",
        {"hidden_size": 2560, "num_attention_heads": 32},
        ("attention_head_dim", "mamba_headdim", "n_mamba_heads"),
    ),
    ("gemma3_text", {"num_hidden_layers": 7, "sliding_window_pattern": 3}, ("layer_types",)),
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
    for model_type in HAND_RULES:
        assert model_type in transformers.CONFIG_MAPPING or model_type in vllm_only, model_type


def test_granite_4_h_without_mamba_expand_has_a_state_figure():
    from apron.state_shapes import StateDtypes, layer_state, rule_for

    # a granite-4.0-h-style config without mamba_expand (nor mamba_d_head):
    # GraniteMoeHybridConfig defaults mamba_expand to 2, so intermediate = 2 x 2048 = 4,096 and
    # mamba_d_head "auto" = 4,096 // 64 = 64.
    # conv: (4 - 1) x (4,096 + 2 x 1 x 128) = 13,056 elements; ssm: 64 x 64 x 128 = 524,288;
    # all bf16: (13,056 + 524,288) x 2 B = 1,074,688 B per mamba layer
    model = load_config(
        {
            "model_type": "granitemoehybrid",
            "architectures": ["GraniteMoeHybridForCausalLM"],
            "hidden_size": 2048,
            "mamba_n_heads": 64,
            "mamba_n_groups": 1,
            "mamba_d_state": 128,
            "mamba_d_conv": 4,
            "num_hidden_layers": 4,
        }
    )
    assert model.get("mamba_expand") == 2
    state = layer_state(model, rule_for(model), StateDtypes("bfloat16", "bfloat16", "test"))
    assert state.bytes == (3 * (4096 + 2 * 1 * 128) + 64 * 64 * 128) * 2 == 1_074_688


def test_a_hostile_layer_count_builds_no_huge_list():
    # GraniteMoeHybridConfig: layer_types = ["mamba"] * num_hidden_layers; 10**12 layers is not
    # built (over apron.normalize.MAX_LIST), the field stays absent
    model = load_config({"model_type": "granitemoehybrid", "num_hidden_layers": 10**12})
    assert model.get("layer_types") is None
    # Qwen3Config: a comprehension over range(num_hidden_layers), bounded the same way
    assert (
        load_config({"model_type": "qwen3", "num_hidden_layers": 10**9}).get("layer_types") is None
    )
    # a string where a number belongs: the arithmetic fails, nothing is derived from it
    odd = load_config({"model_type": "granitemoehybrid", "hidden_size": "wide"})
    assert odd.get("mamba_d_head") is None
