"""apron.state_shapes evaluates generated/vllm mamba_state_hooks and mamba_state_calculators (vLLM
0231dd54): the hook along the architecture's MRO, delegations, tp splits, dtypes, and unknowns.
The hand arithmetic below is read from vllm/model_executor/layers/mamba/mamba_utils.py and the
model files at the pin."""

from __future__ import annotations

import pytest

from apron.config import load_config
from apron.expressions import Unknown, evaluate, infix
from apron.state_shapes import StateDtypes, layer_state, rule_for
from apron.vllm_rule_env import CALLS

BF16 = StateDtypes("bfloat16", "bfloat16", "every tensor in the model dtype")
SSM_FP32 = StateDtypes("bfloat16", "float32", "ssm tensor in float32")

NEMOTRON_TEXT = {
    "model_type": "nemotron_h",
    "hidden_size": 4096,
    "mamba_num_heads": 128,
    "mamba_head_dim": 64,
    "n_groups": 8,
    "ssm_state_size": 128,
    "conv_kernel": 4,
}


def _state(config: dict, dtypes: StateDtypes, tp: int = 1):
    model = load_config(config)
    rule = rule_for(model)
    assert rule is not None
    return rule, layer_state(model, rule, dtypes, tp)


def test_nano_vl_delegates_to_nemotron_h_with_the_text_config():
    config = {"architectures": ["NemotronH_Nano_VL_V2"], "text_config": NEMOTRON_TEXT}
    rule, state = _state(config, SSM_FP32)
    # nano_nemotron_vl.py: NemotronHForCausalLM.get_mamba_state_shape_from_config(
    #   vllm_config.with_hf_config(hf_config.text_config))
    assert rule.model_class == "vllm.model_executor.models.nemotron_h.NemotronHForCausalLM"
    assert rule.hf_config == "model_config.hf_config.text_config"
    # nemotron_h.py: intermediate_size = mamba_num_heads x mamba_head_dim = 128 x 64 = 8,192
    # mamba2_state_shape: conv = (conv_kernel 4 - 1 + num_spec 0, (8,192 + 2 x 8 x 128) / 1)
    #   = 3 x 10,240 x 2 B; temporal = (128 / 1, 64, 128) x 4 B (mamba_ssm_cache_dtype float32)
    assert state.bytes == 3 * 10_240 * 2 + 128 * 64 * 128 * 4 == 4_255_744


def test_tp_splits_and_the_extra_groups_of_mamba2():
    config = {"architectures": ["NemotronHForCausalLM"], **NEMOTRON_TEXT}
    _, at2 = _state(config, SSM_FP32, tp=2)
    # tp 2: 8 % 2 == 0, no extra groups; conv_dim 10,240 / 2; heads 128 / 2
    assert at2.bytes == 3 * 5_120 * 2 + 64 * 64 * 128 * 4 == 2_127_872
    _, at16 = _state(config, SSM_FP32, tp=16)
    # tp 16: extra_groups_for_head_shards(8, 16) = 16 - 8 = 8 -> n_groups 16;
    # conv_dim = 8,192 + 2 x 16 x 128 = 12,288, / 16 = 768; heads 128 / 16 = 8
    assert at16.bytes == 3 * 768 * 2 + 8 * 64 * 128 * 4 == 266_752
    _, at3 = _state(config, SSM_FP32, tp=3)
    # tp 3: n_groups 8 + (3 - 8) = 3; conv_dim 8,192 + 2 x 3 x 128 = 8,960, and 8,960 % 3 != 0:
    # vllm.distributed.divide asserts divisibility, so vLLM refuses; apron gives no figure
    assert at3.bytes is None and "8,960 is not divisible by tp 3" in at3.unknown[0]


def test_kda_reads_a_dict_field_and_keeps_its_recurrent_state_in_float32():
    config = {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "linear_attn_config": {"num_heads": 32, "head_dim": 128, "short_conv_kernel_size": 4},
    }
    rule, state = _state(config, BF16)
    assert rule.calculator == "kda"
    # kimi_linear.py passes linear_attn_config["num_heads" / "head_dim" / "short_conv_kernel_size"];
    # kda_state_shape: num_k_heads, head_k_dim default to num_heads, head_dim:
    # conv = (4 - 1, (32 x 128 + 2 x 32 x 128) / 1) = 3 x 12,288 in bf16;
    # recurrent = (32, 128, 128) in torch.float32 (kda_state_dtype)
    assert state.bytes == 3 * 12_288 * 2 + 32 * 128 * 128 * 4 == 2_170_880


def test_lfm2_moe_passes_hidden_size_where_lfm2_passes_conv_dim():
    common = {"hidden_size": 1024, "conv_dim": 4096, "conv_L_cache": 3}
    _, dense = _state({"architectures": ["Lfm2ForCausalLM"], **common}, BF16)
    _, moe = _state({"architectures": ["Lfm2MoeForCausalLM"], **common}, BF16)
    # lfm2.py: intermediate_size=hf_config.conv_dim; lfm2_moe.py: hf_config.hidden_size;
    # short_conv_state_shape = (conv_kernel - 1, intermediate_size / tp)
    assert dense.bytes == 2 * 4096 * 2 == 16_384
    assert moe.bytes == 2 * 1024 * 2 == 4_096


def test_missing_field_and_missing_dtype_are_named():
    config = {"architectures": ["JambaForCausalLM"], "hidden_size": 64, "mamba_d_conv": 4}
    _, state = _state(config, BF16)
    # jamba.py reads hf_config.mamba_expand and hf_config.mamba_d_state; neither is in the file
    assert state.bytes is None and set(state.missing) == {"mamba_expand", "mamba_d_state"}
    full = config | {"mamba_expand": 2, "mamba_d_state": 16}
    _, no_dtype = _state(full, StateDtypes(None, None, ""))
    assert no_dtype.bytes is None and no_dtype.missing == ("torch_dtype",)
    assert "safetensors weights" in no_dtype.unknown[0]


def test_no_rule_without_an_architecture_or_for_an_unregistered_one():
    assert rule_for(load_config({"model_type": "jamba", "hidden_size": 8})) is None
    # MiniMaxM1ForCausalLM is only in _PREVIOUSLY_SUPPORTED_MODELS at the pin
    assert rule_for(load_config({"architectures": ["MiniMaxM1ForCausalLM"]})) is None


def test_expressions_evaluate_with_vllms_calls_and_read_as_words():
    tree = ("call", "divide", ("+", "a", ("*", 2, "b")), "t")
    assert evaluate(tree, {"a": 10, "b": 3, "t": 2}, CALLS) == (10 + 2 * 3) // 2 == 8
    assert infix(tree) == "divide(a + 2 * b, t)"
    with pytest.raises(Unknown, match="9 is not divisible by tp 2"):
        evaluate(tree, {"a": 5, "b": 2, "t": 2}, CALLS)  # vllm.distributed.divide asserts
    choice = ("?:", ("==", "x", None), "y", "x")
    assert evaluate(choice, {"x": None, "y": 7}) == 7
    assert infix(choice) == "(x == None ? y : x)"


def test_zamba2_the_layer_that_allocates_decides_and_apron_says_so():
    # vLLM's Zamba2 hook passes head_dim = mamba_headdim = 64, but zamba2.py builds MambaMixer2
    # with intermediate_size // n_mamba_heads = 2 x 3,584 // 8 = 896; the layer's spec
    # allocates (vLLM measured 77,925,888 B per sequence at tp 1: conformance/vllm):
    # conv 3 x (7,168 + 2 x 2 x 64) = 22,272 + ssm 8 x 896 x 64 = 458,752 -> x 2 B x 81 layers
    from pathlib import Path

    from apron import plan

    corpus = Path(__file__).resolve().parent / "corpus"
    result = plan(corpus / "zamba2-7b.json", context=4096)
    assert result.prediction.state_bytes_per_sequence == (22_272 + 458_752) * 2 * 81
    said = [line for line in result.prediction.arithmetic if "the layer allocates" in line]
    assert said and "mamba_headdim = 64" in said[0] and "= 896" in said[0]
