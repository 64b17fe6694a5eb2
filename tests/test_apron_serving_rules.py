"""apron's serving rules read from the committed generated rows, checked by hand arithmetic on
real public configs (tests/corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apron.constraints import load_constraints
from apron.serving_rules import (
    HybridPage,
    divisors,
    first_backend_block,
    kv_heads_per_gpu,
    serving_rules,
    tp_check,
    valid_tp_sizes,
)

CORPUS = Path(__file__).resolve().parent / "corpus"


def corpus(name: str) -> dict:
    return json.loads((CORPUS / f"{name}.json").read_text())


def rules_of(engine: str):
    return serving_rules(load_constraints().get(engine), engine)


def test_vllm_rules_from_its_rows():
    rules = rules_of("vllm")
    assert (rules.block_tokens, rules.memory_fraction) == (16, 0.92)
    assert rules.block_tokens_source.endswith(
        "vllm/config/cache.py::CacheConfig.DEFAULT_BLOCK_SIZE"
    )
    assert rules.memory_fraction_source == (
        "gpu_memory_utilization = 0.92, vllm/config/cache.py::CacheConfig.gpu_memory_utilization"
    )
    assert (rules.kv_heads_split, rules.mla_latent_replicated) == ("split_replicate", True)
    assert rules.tp_must_divide == ("num_attention_heads",)
    assert rules.kv_heads_tp_rule == "divides_or_divided"
    assert "mamba2.num_heads" in rules.ssm_split_dims
    assert "mamba2.conv_dim" in rules.ssm_split_dims
    assert rules.unknown == ()
    assert {c.engine for c in rules.citations} == {"vllm"}
    assert ("vllm/config/model.py", "ModelConfig.get_num_kv_heads") in {
        (c.path, c.symbol) for c in rules.citations
    }


def test_vllm_hybrid_page_rule():
    page = rules_of("vllm").hybrid_page_rule
    assert isinstance(page, HybridPage)
    assert page.shape == "align_ceil"
    assert page.alignment_floor_is_block_size and page.raises_only and page.pads_mamba_page
    assert page.kernel_sizes_from == "get_supported_kernel_block_sizes"
    assert page.other_modes == ("mamba_cache_mode == 'all': chunk_align_ceil",)


def test_the_hybrid_page_rule_is_chosen_by_evaluating_its_condition_for_the_mode():
    vllm = load_constraints().get("vllm")
    (all_mode,) = [r for r in vllm.rows("hybrid_page_rules") if r.shape == "chunk_align_ceil"]
    # an older layout's branch under two tests: `mode == "all" and not flag`
    both = all_mode._replace(when=("and", all_mode.when, ("not", "flag")))
    engine = vllm._replace(facts={**vllm.facts, "hybrid_page_rules": (both,)})
    assert serving_rules(engine, "vllm").hybrid_page_rule_all is None  # `flag` is not given
    engine = vllm._replace(facts={**vllm.facts, "hybrid_page_rules": (all_mode,)})
    rules = serving_rules(engine, "vllm")
    assert rules.hybrid_page_rule_all.shape == "chunk_align_ceil"
    assert rules.hybrid_page_rule is None  # no branch for the default mode ("none")


def test_sglang_rules_from_its_rows():
    rules = rules_of("sglang")
    assert rules.block_tokens == 1
    assert "page_size = 1 on CUDA" in rules.block_tokens_source
    assert rules.memory_fraction is None  # computed at startup from the GPU's memory
    assert "ServerArgs._handle_gpu_memory_settings" in rules.memory_fraction_source
    assert (rules.kv_heads_split, rules.mla_latent_replicated) == ("split_replicate", True)
    assert rules.tp_must_divide == ("num_attention_heads",)
    assert rules.hybrid_page_rule is None
    assert [u.split(":")[0] for u in rules.unknown] == ["memory_fraction", "hybrid_page_rule"]


def test_an_engine_without_rows_is_unknown_with_reasons():
    rules = serving_rules(None, "trtllm")
    assert rules.block_tokens is None and rules.memory_fraction is None
    assert rules.unknown == ("trtllm has no generated constraints",)
    assert kv_heads_per_gpu(rules, 8, 2, False) is None
    assert tp_check(rules, {"num_attention_heads": 40}, 6) == ()
    llamacpp = rules_of("llamacpp")
    assert llamacpp.kv_heads_split is None
    assert "kv_heads_split: llamacpp has no kv_heads_per_gpu rule" in llamacpp.unknown


def test_llama_31_8b_at_tp_16_keeps_one_kv_head_per_gpu():
    config = corpus("llama-3.1-8b")
    rules = rules_of("vllm")
    # 8 KV heads over 16 GPUs: max(1, 8 // 16) = 1, each head on 16 / 8 = 2 GPUs
    assert kv_heads_per_gpu(rules, config["num_key_value_heads"], 16, False) == 1
    assert kv_heads_per_gpu(rules, 8, 4, False) == 2
    assert tp_check(rules, config, 16, total_kv_heads=8) == ()  # 32 % 16 == 0, 16 % 8 == 0
    assert tp_check(rules, config, 8, total_kv_heads=8) == ()


def test_deepseek_v3_mla_at_tp_8_replicates_the_latent():
    config = corpus("deepseek-v3")
    for engine in ("vllm", "sglang"):
        rules = rules_of(engine)
        assert kv_heads_per_gpu(rules, config["num_key_value_heads"], 8, True) == 1
        assert tp_check(rules, config, 8, total_kv_heads=128, is_mla=True) == ()


def test_40_heads_at_tp_6_is_refused_with_the_sizes_that_work():
    config = corpus("qwen2.5-14b")
    assert config["num_attention_heads"] == 40
    rules = rules_of("vllm")
    (error,) = tp_check(rules, config, 6)
    assert error == (
        "vllm: num_attention_heads = 40 is not divisible by tp 6; "
        "tp sizes that divide it: 1, 2, 4, 5, 8, 10, 20, 40"
    )
    assert valid_tp_sizes(config, rules) == (1, 2, 4, 5, 8, 10, 20, 40)
    # its 8 KV heads rule out 5, 10 and 20 (neither divides the other); 40 is a multiple of 8
    assert valid_tp_sizes(config, rules, total_kv_heads=8) == (1, 2, 4, 8, 40)
    (kv_error,) = tp_check(rules, config, 5, total_kv_heads=8)
    assert kv_error.startswith("vllm: 8 KV heads and tp 5: tp must divide the KV heads")


def test_valid_tp_sizes_stops_at_up_to():
    rules = rules_of("sglang")
    assert valid_tp_sizes({"num_attention_heads": 64}, rules, up_to=16) == (1, 2, 4, 8, 16)
    assert valid_tp_sizes({"text_config": {"num_attention_heads": 12}}, rules) == (
        1,
        2,
        3,
        4,
        6,
        12,
    )
    assert divisors(12, up_to=5) == (1, 2, 3, 4)


def test_bad_tp_is_an_error():
    rules = rules_of("vllm")
    with pytest.raises(ValueError, match="tp must be >= 1"):
        tp_check(rules, {"num_attention_heads": 8}, 0)
    with pytest.raises(ValueError, match="tp must be >= 1"):
        kv_heads_per_gpu(rules, 8, 0, False)


def test_rules_follow_the_rows_not_a_default():
    constraints = load_constraints().get("vllm")
    assert constraints is not None
    opaque = {
        **constraints.facts,
        "tp_rules": tuple(
            r._replace(shape="opaque") if r.rule == "kv_heads_per_gpu" else r
            for r in constraints.facts["tp_rules"]
        ),
    }
    rules = serving_rules(constraints._replace(facts=opaque), "vllm")
    assert rules.kv_heads_split is None
    assert kv_heads_per_gpu(rules, 8, 16, False) is None
    assert any(u.startswith("kv_heads_split: opaque rule") for u in rules.unknown)


def test_vllm_backend_blocks_on_cuda():
    rules = rules_of("vllm")
    first = first_backend_block(rules, use_mla=False)
    assert first is not None
    assert (first.backend, first.block_tokens) == ("FLASH_ATTN", 16)  # MultipleOf(16) keeps 16
    mla = first_backend_block(rules, use_mla=True)
    assert mla is not None and (mla.backend, mla.block_tokens) == ("FLASH_ATTN_MLA", 16)
    by_backend = {(b.use_mla, b.backend): b.block_tokens for b in rules.backend_blocks}
    # 16 is not a multiple of FlashMLA's 64 or CUTLASS MLA's 128: the smallest kernel size
    assert by_backend[(True, "FLASHMLA")] == 64
    assert by_backend[(True, "CUTLASS_MLA")] == 128
    assert by_backend[(True, "FLASHINFER_MLA")] == 32  # [32, 64]: 16 % 32 != 0 -> 32
    assert by_backend[(False, "FLASHINFER")] is None  # its kernel sizes are computed
    assert rules.hybrid_page_rule is not None and rules.hybrid_page_rule.kernel_min_block == 16
    cited = {(c.path, c.symbol) for c in rules.citations}
    assert ("vllm/v1/attention/backends/flash_attn.py", "FlashAttentionBackend") in cited
    assert ("vllm/v1/attention/backends/mla/flashattn_mla.py", "FlashAttnMLABackend") in cited
    assert first_backend_block(rules_of("sglang"), use_mla=False) is None
