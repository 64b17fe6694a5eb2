"""apron mechanisms on configs shaped like real checkpoints; every expected byte count is worked
out by hand in the test, with the arithmetic written next to it.

These use the committed generated/vllm constraints (alias order, overrides, MLA list)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from apron import plan
from apron.config import ModelConfig
from apron.constraints import ENGINES, load_constraints, load_engine
from apron.layers import layout

SAMPLES = Path(__file__).resolve().parent.parent / "apron" / "samples"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / f"{name}.json").read_text())


# -- full attention ---------------------------------------------------------------------------


def test_dense_gqa_llama_3_1_8b():
    result = plan(sample("llama-3.1-8b"), context=32768)
    p = result.prediction
    assert p.mechanism == "full_attention"
    assert "GQA, 8 KV heads for 32 query heads" in p.title
    # head_dim = hidden_size / num_attention_heads = 4096 / 32 = 128 (no head_dim key)
    # per token = 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B
    assert p.kv_bytes_per_token == 32 * 8 * (128 + 128) * 2 == 131_072
    # at 32,768 tokens: 131,072 x 32,768 = 4,294,967,296 B (4 GiB)
    assert p.kv_bytes_at_context == 4_294_967_296
    assert p.state_bytes_per_sequence == 0
    assert result.kv_heads.count == 8 and "num_key_value_heads" in result.kv_heads.how
    assert result.label == "prediction"


def test_batch_multiplies_kv():
    result = plan(sample("llama-3.1-8b"), context=8192, batch=4)
    # 131,072 B/token x 8,192 tokens x 4 sequences = 4,294,967,296 B
    assert result.kv_bytes_for_batch == 131_072 * 8192 * 4 == 4_294_967_296
    assert result.total_bytes_for_batch == result.kv_bytes_for_batch


def test_kv_dtype_changes_bytes_per_element():
    fp8 = plan(sample("llama-3.1-8b"), context=1024, kv_dtype="fp8").prediction
    fp32 = plan(sample("llama-3.1-8b"), context=1024, kv_dtype="fp32").prediction
    assert fp8.kv_bytes_per_token == 32 * 8 * 256 * 1 == 65_536
    assert fp32.kv_bytes_per_token == 32 * 8 * 256 * 4 == 262_144


def test_falcon_multi_query_is_one_kv_head():
    result = plan(sample("falcon-7b"), context=2048)
    p = result.prediction
    # vLLM's Falcon override: 1 when not new_decoder_architecture and multi_query
    assert result.kv_heads.count == 1
    assert "multi_query" in result.kv_heads.how
    # head_dim = 4544 / 71 = 64; per token = 32 layers x 1 x (64 + 64) x 2 B = 8,192 B
    assert p.kv_bytes_per_token == 32 * 1 * (64 + 64) * 2 == 8192
    assert p.kv_bytes_at_context == 8192 * 2048 == 16_777_216
    assert "MQA" in p.title


def test_falcon_new_decoder_architecture_uses_the_scan():
    config = {
        "architectures": ["FalconForCausalLM"],
        "model_type": "falcon",
        "hidden_size": 8192,
        "num_attention_heads": 128,
        "num_hidden_layers": 60,
        "num_kv_heads": 8,
        "new_decoder_architecture": True,
        "multi_query": True,
    }
    result = plan(config, context=100)
    # multi_query is ignored for the new decoder: base scan finds num_kv_heads = 8
    # per token = 60 x 8 x (64 + 64) x 2 = 122,880 B (head_dim = 8192 / 128 = 64)
    assert result.kv_heads.count == 8
    assert result.prediction.kv_bytes_per_token == 60 * 8 * 128 * 2 == 122_880


def test_mpt_attn_config_without_kv_n_heads_is_mha():
    result = plan(sample("mpt-7b"))
    p = result.prediction
    # override "reads attn_config.kv_n_heads, else num_attention_heads": no kv_n_heads, so
    # n_heads = 32 (transformers' MptConfig spells num_attention_heads as n_heads)
    assert result.kv_heads.count == 32
    assert result.request.context == 2048  # max_seq_len (MptConfig's max_position_embeddings)
    # head_dim = d_model / n_heads = 4096 / 32 = 128
    # per token = n_layers 32 x 32 x (128 + 128) x 2 B = 524,288 B; x 2,048 = 1,073,741,824 B
    assert p.kv_bytes_per_token == 32 * 32 * 256 * 2 == 524_288
    assert p.kv_bytes_at_context == 524_288 * 2048 == 1_073_741_824
    assert "MHA, 32 KV heads" in p.title


def test_mpt_attn_config_kv_n_heads_is_read():
    config = sample("mpt-7b")
    config["attn_config"]["kv_n_heads"] = 8
    result = plan(config, context=2048)
    assert result.kv_heads.count == 8
    assert result.prediction.kv_bytes_per_token == 32 * 8 * 256 * 2 == 131_072


def test_no_kv_head_key_is_unknown_but_vllm_assumes_mha():
    result = plan(sample("llama-7b"), context=2048)
    p = result.prediction
    assert p.kv_bytes_per_token is None and p.kv_bytes_at_context is None
    assert p.unknown and "silently assume MHA" in p.unknown[0]
    assert set(result.kv_heads.missing) >= {"num_key_value_heads", "n_head_kv", "num_kv_heads"}
    vllm = next(v for v in result.engines if v.engine == "vllm")
    # vLLM falls back to num_attention_heads = 32:
    # per token = 32 x 32 x (128 + 128) x 2 B = 524,288 B; x 2,048 = 1,073,741,824 B
    assert vllm.kv_bytes_per_token == 524_288
    assert vllm.kv_bytes_at_context == 1_073_741_824
    assert vllm.differs_from_prediction
    assert any("silently assumes MHA" in n for n in vllm.notes)


def test_missing_fields_are_unknown_not_errors():
    result = plan(
        {
            "architectures": ["SomethingForCausalLM"],
            "model_type": "something",
            "num_key_value_heads": 4,
        },
        context=10,
    )
    p = result.prediction
    assert p.kv_bytes_per_token is None
    assert "num_hidden_layers" in p.missing and "head_dim" in p.missing


def test_head_dim_that_does_not_divide_is_unknown():
    config = {
        "model_type": "x",
        "num_hidden_layers": 2,
        "hidden_size": 100,
        "num_attention_heads": 3,
        "num_key_value_heads": 1,
    }
    p = plan(config, context=10).prediction
    assert p.kv_bytes_per_token is None
    assert any("not a multiple" in u for u in p.unknown)


# -- MLA --------------------------------------------------------------------------------------


def test_mla_deepseek_v3():
    result = plan(sample("deepseek-v3"), context=32768)
    p = result.prediction
    assert p.mechanism == "mla_latent"
    # per token = 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B = 70,272 B
    # (no head factor: 128 KV heads do not enter)
    assert p.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    # at 32,768 tokens: 70,272 x 32,768 = 2,302,672,896 B
    assert p.kv_bytes_at_context == 2_302_672_896
    vllm = next(v for v in result.engines if v.engine == "vllm")
    assert vllm.mechanism == "mla_latent" and not vllm.differs_from_prediction
    assert any(c.symbol.endswith("is_deepseek_mla") for c in vllm.citations)


def test_mla_gate_kv_lora_rank_null_means_full_attention_in_vllm():
    config = sample("deepseek-v3")
    config["kv_lora_rank"] = None
    result = plan(config, context=1)
    vllm = next(v for v in result.engines if v.engine == "vllm")
    assert vllm.mechanism == "full_attention"
    assert any("kv_lora_rank is absent or null" in n for n in vllm.notes)


def test_mla_shaped_but_unlisted_model_type_is_full_attention_for_vllm():
    config = sample("deepseek-v3")
    config["model_type"] = "my_latent_model"  # MLA fields, but not in vLLM's model_type list
    result = plan(config, context=32768)
    vllm = next(v for v in result.engines if v.engine == "vllm")
    assert vllm.mechanism == "full_attention"
    # K head = qk_nope_head_dim + qk_rope_head_dim = 128 + 64 = 192; V head = v_head_dim = 128
    # per token = 61 layers x 128 KV heads x (192 + 128) x 2 B = 4,997,120 B
    assert vllm.kv_bytes_per_token == 61 * 128 * (192 + 128) * 2 == 4_997_120
    # against the MLA latent: 4,997,120 / 70,272 = 71.1x
    assert any("71.1x the MLA latent figure" in n for n in vllm.notes)
    assert any("my_latent_model is not in vLLM's is_deepseek_mla list" in n for n in vllm.notes)
    sglang = load_engine("sglang")
    if sglang is not None and any(
        r.architecture == "DeepseekV3ForCausalLM" for r in sglang.rows("mla_architectures")
    ):
        # SGLang decides by architecture, so apron's own prediction stays MLA and vLLM differs
        assert result.prediction.mechanism == "mla_latent" and vllm.differs_from_prediction

    # with vLLM's rules alone, no engine says MLA: the prediction is full attention, and says why
    vllm_only = load_constraints()._replace(
        engines={e: (load_engine(e) if e == "vllm" else None) for e in ENGINES}
    )
    alone = plan(config, context=32768, constraints=vllm_only)
    assert alone.prediction.mechanism == "full_attention"
    assert alone.prediction.kv_bytes_per_token == 4_997_120
    assert any("MLA-shaped" in n for n in alone.notes)


def test_mla_with_compress_ratios_is_unknown():
    config = sample("deepseek-v3")
    config["model_type"] = "deepseek_v4"
    config["compress_ratios"] = [1, 4]
    config["head_dim"] = 512
    p = plan(config, context=8).prediction
    assert p.mechanism == "mla_latent" and p.kv_bytes_per_token is None
    assert "compress_ratios" in p.unknown[0]


# -- sliding window ---------------------------------------------------------------------------


def test_gemma3_interleaved_sliding_window():
    result = plan(sample("gemma-3-27b"), context=32768)
    p = result.prediction
    assert p.mechanism == "sliding_window"
    assert result.text_config_key == "text_config"
    # sliding_window_pattern 6: layer i global when (i + 1) % 6 == 0 -> 62 // 6 = 10 global,
    # 52 windowed; k = 16 KV heads x (128 + 128) x 2 B = 8,192 B per layer per token
    k = 16 * (128 + 128) * 2
    assert k == 8192
    # naive per token = 62 x 8,192 = 507,904 B
    assert p.kv_bytes_per_token == 62 * k == 507_904
    # naive at 32,768 = 507,904 x 32,768 = 16,642,998,272 B
    assert p.naive_kv_bytes_at_context == 16_642_998_272
    # aware = G x k x c + S x k x min(c, w) = 10 x 8,192 x 32,768 + 52 x 8,192 x 1,024
    #       = 2,684,354,560 + 436,207,616 = 3,120,562,176 B
    assert p.kv_bytes_at_context == 10 * k * 32768 + 52 * k * 1024 == 3_120_562_176
    # ratio = 16,642,998,272 / 3,120,562,176 = 5.33x
    assert p.naive_ratio == pytest.approx(16_642_998_272 / 3_120_562_176)
    assert round(p.naive_ratio, 2) == 5.33


def test_gemma3_ratio_at_full_context_matches_the_overpay_table():
    p = plan(sample("gemma-3-27b")).prediction  # context = max_position_embeddings 131,072
    # 62 / (10 + 52 x 1,024 / 131,072) = 62 / 10.40625 = 5.96x
    assert round(p.naive_ratio, 2) == 5.96


def test_layer_types_list_gemma2_style():
    config = {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "sliding_window": 4096,
        "max_position_embeddings": 8192,
        "layer_types": [
            "sliding_attention",
            "full_attention",
            "sliding_attention",
            "full_attention",
        ],
    }
    p = plan(config, context=8192).prediction
    # k = 4 x (256 + 256) x 2 = 4,096 B; naive = 4 x 4,096 x 8,192 = 134,217,728
    # aware = 2 x 4,096 x 8,192 + 2 x 4,096 x min(8,192, 4,096) = 67,108,864 + 33,554,432
    assert p.naive_kv_bytes_at_context == 134_217_728
    assert p.kv_bytes_at_context == 100_663_296
    assert p.naive_ratio == pytest.approx(4 / 3)


def test_window_not_filled_gives_equal_figures():
    p = plan(sample("gemma-3-27b"), context=512).prediction
    assert p.kv_bytes_at_context == p.naive_kv_bytes_at_context == 62 * 8192 * 512
    assert any("has not filled" in n for n in p.notes)


def test_window_at_or_above_max_context_is_inert():
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "num_hidden_layers": 64,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "hidden_size": 5120,
        "max_position_embeddings": 131072,
        "sliding_window": 131072,
        "use_sliding_window": True,  # Qwen2Config's default False turns the window off
    }
    p = plan(config, context=32768).prediction
    assert p.mechanism == "sliding_window" and "inert" in p.title
    assert any("never binds" in n for n in p.notes)
    # = full attention: 64 x 8 x (128 + 128) x 2 = 262,144 B/token
    assert p.kv_bytes_at_context == p.naive_kv_bytes_at_context == 262_144 * 32768


def test_use_sliding_window_false_is_inert():
    config = {
        "model_type": "qwen2",
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "sliding_window": 4096,
        "use_sliding_window": False,
        "max_window_layers": 1,
        "max_position_embeddings": 32768,
    }
    p = plan(config, context=32768).prediction
    assert "inert" in p.title and any("switched off" in n for n in p.notes)


def test_qwen2_max_window_layers_layout():
    model = ModelConfig(
        {
            "num_hidden_layers": 4,
            "use_sliding_window": True,
            "max_window_layers": 3,
            "sliding_window": 16,
        },
        "t",
    )
    assert layout(model).kinds == ("full_attention",) * 3 + ("sliding_attention",)


def test_published_gemma3_without_layout_gets_the_class_default_layout():
    config = sample("gemma-3-27b")
    del config["text_config"]["sliding_window_pattern"]  # as in google/gemma-3-27b-it
    result = plan(config, context=32768)
    p = result.prediction
    # the naive figure needs no layout: 62 x 8,192 x 32,768
    assert p.naive_kv_bytes_at_context == 16_642_998_272
    # transformers Gemma3TextConfig: sliding unless (i + 1) % 6 == 0 -> layers 5, 11, .., 59
    # are global: 10 global, 52 windowed (window 1,024)
    # 10 x 8,192 x 32,768 + 52 x 8,192 x 1,024 = 2,684,354,560 + 436,207,616
    assert p.kv_bytes_at_context == 10 * 8192 * 32768 + 52 * 8192 * 1024 == 3_120_562_176
    assert any("Gemma3TextConfig" in note for note in result.notes)


# -- hybrid attention + state space -------------------------------------------------------------


def test_jamba_hybrid():
    result = plan(sample("jamba-v0.1"), context=262144, batch=2)
    p = result.prediction
    assert p.mechanism == "hybrid_ssm"
    # attention where i % 8 == 4: layers 4, 12, 20, 28 -> 4 attention, 28 Mamba layers
    # KV per token = 4 x 8 KV heads x (128 + 128) x 2 B = 16,384 B
    assert p.kv_bytes_per_token == 4 * 8 * 256 * 2 == 16_384
    assert p.kv_bytes_at_context == 16_384 * 262_144 == 4_294_967_296
    # naive (KV in all 32 layers) = 32 x 4,096 x 262,144 = 34,359,738,368 -> 8.00x
    assert p.naive_kv_bytes_at_context == 34_359_738_368
    assert p.naive_ratio == 8.0
    # Mamba1 state per layer: d_inner = mamba_expand 2 x 4,096 = 8,192
    #   conv = (mamba_d_conv 4 - 1) x 8,192 = 24,576; ssm = 8,192 x mamba_d_state 16 = 131,072
    #   (24,576 + 131,072) x 2 B (bfloat16) = 311,296 B
    # per sequence = 28 x 311,296 = 8,716,288 B
    assert p.state_bytes_per_sequence == 28 * (3 * 8192 + 8192 * 16) * 2 == 8_716_288
    # shown separately and multiplied by the batch, not the context
    assert result.state_bytes_for_batch == 2 * 8_716_288
    assert result.kv_bytes_for_batch == 2 * 4_294_967_296


def test_nemotron_h_pattern_string():
    pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
    assert len(pattern) == 52 and pattern.count("M") == 24 and pattern.count("*") == 4
    config = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "hybrid_override_pattern": pattern,
        "hidden_size": 4096,
        "num_hidden_layers": 52,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "ssm_state_size": 128,
        "mamba_num_heads": 128,
        "mamba_head_dim": 64,
        "n_groups": 8,
        "conv_kernel": 4,
        "expand": 2,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
    p = plan(config, context=8192).prediction
    assert p.mechanism == "hybrid_ssm"
    # KV = 4 attention layers x 8 x (128 + 128) x 2 B = 16,384 B/token
    assert p.kv_bytes_per_token == 16_384
    # Mamba2 per layer (vLLM nemotron_h.py): intermediate = mamba_num_heads x mamba_head_dim
    #   = 128 x 64 = 8,192; conv_dim = 8,192 + 2 x 8 x 128 = 10,240
    #   conv = 3 x 10,240 = 30,720 x 2 B (bf16); ssm = 128 x 64 x 128 = 1,048,576 x 4 B: float32,
    #   vLLM NemotronHForCausalLMConfig's default when the config has no mamba_ssm_cache_dtype
    #   61,440 + 4,194,304 = 4,255,744 B; x 24 Mamba layers = 102,137,856 B
    assert p.state_bytes_per_sequence == 24 * (3 * 10240 * 2 + 128 * 64 * 128 * 4) == 102_137_856


def test_layers_block_type_list():
    config = {
        "model_type": "x",
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "hidden_size": 64,
        "layers_block_type": ["mamba", "attention", "mamba"],
        "mamba_d_state": 4,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "torch_dtype": "float32",
    }
    p = plan(config, context=10).prediction
    # KV = 1 x 2 x (16 + 16) x 2 = 128 B/token
    # Mamba1: d_inner = 2 x 64 = 128; conv = 3 x 128 = 384; ssm = 128 x 4 = 512; x 4 B = 3,584
    assert p.kv_bytes_per_token == 128
    assert p.state_bytes_per_sequence == 2 * (384 + 512) * 4 == 7168


def test_hybrid_without_state_dtype_is_unknown_state():
    config = copy.deepcopy(sample("jamba-v0.1"))
    del config["torch_dtype"]
    p = plan(config, context=10).prediction
    assert p.kv_bytes_per_token == 16_384
    assert p.state_bytes_per_sequence is None and "torch_dtype" in p.missing


def test_hybrid_unknown_layer_word_is_unknown():
    config = {
        "model_type": "x",
        "num_hidden_layers": 2,
        "layers_block_type": ["mamba", "weird"],
        "mamba_d_state": 4,
    }
    p = plan(config, context=10).prediction
    assert p.mechanism == "hybrid_ssm" and "weird" in p.unknown[0]


# -- attention-free recurrent -------------------------------------------------------------------


def test_mamba2_codestral():
    result = plan(sample("mamba-codestral-7b"), context=100_000, batch=8)
    p = result.prediction
    assert p.mechanism == "recurrent" and "mamba2" in p.title
    assert p.kv_bytes_per_token == 0 and p.kv_bytes_at_context == 0
    # per layer: d_inner = expand 2 x 4,096 = 8,192; conv_dim = 8,192 + 2 x 8 groups x 128 = 10,240
    #   conv = (4 - 1) x 10,240 = 30,720; ssm = 128 heads x 64 x 128 = 1,048,576
    #   (30,720 + 1,048,576) x 2 B = 2,158,592 B; x 64 layers = 138,149,888 B (131.75 MiB)
    assert p.state_bytes_per_sequence == 64 * 2_158_592 == 138_149_888
    assert result.state_bytes_for_batch == 8 * 138_149_888
    assert result.kv_bytes_for_batch == 0


def test_mamba1_uses_vllm_constant_zero_override():
    config = {
        "architectures": ["MambaForCausalLM"],
        "model_type": "mamba",
        "hidden_size": 768,
        "num_hidden_layers": 24,
        "state_size": 16,
        "conv_kernel": 4,
        "expand": 2,
        "intermediate_size": 1536,
        "torch_dtype": "float32",
    }
    result = plan(config, context=10)
    assert result.kv_heads.count == 0 and "constant 0" in result.kv_heads.how
    p = result.prediction
    # MambaForCausalLM's vLLM rule (mamba1_state_shape): conv = 3 x 1,536 = 4,608; ssm = 1,536 x
    # 16 = 24,576; in the model dtype, which vLLM downcasts from float32 to bfloat16 (2 B):
    # (4,608 + 24,576) x 2 B = 58,368 B per layer
    assert p.state_bytes_per_sequence == 24 * (3 * 1536 + 1536 * 16) * 2 == 1_400_832


def test_recurrent_without_state_fields_is_unknown():
    config = {
        "architectures": ["MambaForCausalLM"],
        "model_type": "mamba",
        "hidden_size": 768,
        "num_hidden_layers": 24,
    }
    p = plan(config, context=10).prediction
    # vLLM's override says 0 KV heads; with no state fields the state is unknown, never guessed
    # ("recurrent" when llama.cpp's class set says so, else "unsupported")
    assert p.mechanism in ("recurrent", "unsupported")
    assert p.unknown and p.state_bytes_per_sequence is None


# -- anything else ------------------------------------------------------------------------------


def test_encoder_decoder_without_decoder_fields_is_unknown():
    config = {
        "architectures": ["T5ForConditionalGeneration"],
        "model_type": "t5",
        "is_encoder_decoder": True,
        "num_layers": 6,
        "num_heads": 8,
        "d_model": 512,
    }
    p = plan(config, context=10).prediction
    assert p.mechanism == "encoder_decoder" and p.kv_bytes_per_token is None
    assert {"decoder_layers", "decoder_attention_heads", "max_source_positions"} <= set(p.missing)


def test_vllm_encoder_decoder_section_selects_cross_attention():
    config = {
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        "num_hidden_layers": 4,
        "num_attention_heads": 6,
        "num_key_value_heads": 6,
        "hidden_size": 384,
        "decoder_layers": None,  # WhisperConfig's default (4) would fill it
    }
    p = plan(config, context=10).prediction
    assert p.mechanism == "encoder_decoder" and "decoder_layers" in p.missing


def test_chunked_local_attention_llama4_default_layout():
    config = {
        "model_type": "llama4_text",
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "attention_chunk_size": 8192,
    }
    p = plan(config, context=16384).prediction
    # no_rope_layers default (every 4th layer NoPE) = [1, 1, 1, 0]: 3 chunked, 1 full
    # per layer per token 2 x (128 + 128) x 2 B = 1,024 B
    # 1 x 1,024 x 16,384 + 3 x 1,024 x min(16,384, 8,192) = 16,777,216 + 25,165,824
    assert p.kv_bytes_at_context == 1024 * 16384 + 3 * 1024 * 8192 == 41_943_040
    assert p.title.startswith("chunked local attention")


def test_rwkv_is_a_justified_unknown():
    config = {
        "architectures": ["Rwkv5ForCausalLM"],
        "model_type": "rwkv5",
        "num_hidden_layers": 24,
        "hidden_size": 2048,
        "num_attention_heads": 32,
    }
    p = plan(config, context=10).prediction
    assert p.mechanism == "unsupported" and p.kv_bytes_per_token is None
    assert "registers no RWKV architecture" in p.unknown[0]
