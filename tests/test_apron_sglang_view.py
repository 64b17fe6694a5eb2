"""apron's SGLang view follows SGLang's own rules: its KV-head scan, and a window-aware pool only
for the architectures of is_hybrid_swa_model (every other layer at full context)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apron import plan
from apron.config import ModelConfig
from apron.constraints import load_constraints, load_engine
from apron.engines.sglang import hybrid_swa, kv_heads
from apron.extractors.parsing.expressions import config_condition
from apron.extractors.parsing.python_ts import parse_python
from apron.extractors.sglang.kv_heads import kv_head_fallback, kv_head_overrides
from apron.generated.schema import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
    SglangArchitectureSet,
    SglangHybridConfigClass,
)
from tests.sglang_miniatures import MODEL_CONFIG, MODEL_CONFIG_PATH
from tests.test_apron_rules import CHAIN, only, sglang, view

SAMPLES = Path(__file__).resolve().parent.parent / "apron" / "samples"
GEMMA3_FULL_PER_TOKEN = 62 * 2 * 16 * 128 * 2  # layers x (K, V) x KV heads x head_dim x bf16
GEMMA3_WINDOW_AWARE_131072 = 11_173_625_856  # 10 global layers at 131,072 + 52 at 1,024 tokens


def sample(name: str) -> dict:
    return json.loads((SAMPLES / f"{name}.json").read_text())


def member(arch: str, *, condition=None, set_name=None):
    """An architecture_sets row; its condition's rule made by the one builder from its code."""
    rule = ()
    if condition:
        (statement,) = parse_python(f"x = ({condition})\n", "c.py").named_children
        rule = config_condition(statement.named_children[0].child_by_field_name("right"))
    return SglangArchitectureSet(
        set_name=set_name or "is_hybrid_swa_model",
        architecture=arch,
        member_returns=True,
        via="",
        condition=condition,
        condition_rule=rule,
        path=CHAIN,
        symbol="is_hybrid_swa_model",
    )


HYBRID_SET = (
    member("GptOssForCausalLM"),
    member(
        "LagunaForCausalLM",
        condition='getattr(hf_text_config, "sliding_window", 0)',
    ),
    member(
        "*",
        condition='getattr(hf_text_config, "is_hybrid_swa", False)',
    ),
)


def test_gemma3_outside_the_hybrid_set_is_full_context_on_every_layer():
    engines = load_constraints().replace("sglang", sglang(sets=HYBRID_SET))
    result = plan(sample("gemma-3-27b"), context=131072, constraints=engines)
    sgl = view(result, "sglang")
    assert sgl.mechanism == "full_attention"
    assert sgl.kv_bytes_per_token == GEMMA3_FULL_PER_TOKEN == 507_904
    assert sgl.kv_bytes_at_context == GEMMA3_FULL_PER_TOKEN * 131072 == 66_571_993_088
    assert sgl.differs_from_prediction
    note = next(n for n in sgl.notes if "full context" in n)
    assert "is_hybrid_swa_model" in note and "66,571,993,088 B at 131,072 tokens" in note
    assert view(result, "vllm").kv_bytes_at_context == GEMMA3_WINDOW_AWARE_131072


def test_a_member_of_the_hybrid_set_keeps_the_window_aware_figure():
    sets = (*HYBRID_SET, member("Gemma3ForConditionalGeneration"))
    engines = load_constraints().replace("sglang", sglang(sets=sets))
    sgl = view(plan(sample("gemma-3-27b"), context=131072, constraints=engines), "sglang")
    assert sgl.mechanism == "sliding_window"
    assert sgl.kv_bytes_at_context == GEMMA3_WINDOW_AWARE_131072
    assert any(
        n.startswith("window-aware KV pool: Gemma3ForConditionalGeneration") for n in sgl.notes
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"architectures": ["LagunaForCausalLM"], "sliding_window": 4096}, True),
        ({"architectures": ["LagunaForCausalLM"], "sliding_window": 0}, False),
        ({"architectures": ["LagunaForCausalLM"]}, False),  # getattr default 0
        ({"architectures": ["GptOssForCausalLM"]}, True),
        ({"architectures": ["MyWindowedForCausalLM"], "is_hybrid_swa": True}, True),
        ({"architectures": ["MyWindowedForCausalLM"], "sliding_window": 4096}, False),
    ],
)
def test_hybrid_swa_membership_with_member_conditions_and_opt_in(config, expected):
    swa, why, cites = hybrid_swa(ModelConfig(config, "t"), sglang(sets=HYBRID_SET))
    assert swa is expected, why
    assert cites and cites[0].path == CHAIN


def test_without_the_hybrid_set_a_windowed_config_gets_no_sglang_figure():
    engines = load_constraints().replace("sglang", sglang())
    sgl = view(plan(sample("gemma-3-27b"), context=131072, constraints=engines), "sglang")
    assert sgl.kv_bytes_at_context is None
    assert any("hybrid-SWA architecture set is not extracted" in n for n in sgl.notes)


def test_kv_heads_come_from_sglangs_own_scan():
    config = sample("llama-3.1-8b")
    engine = sglang()._replace(
        facts={
            **sglang().facts,
            "kv_head_aliases": (KvHeadAlias(0, "n_head_kv", CHAIN, "s"),),
            "kv_head_fallback": (
                KvHeadFallback(**kv_head_fallback(MODEL_CONFIG, MODEL_CONFIG_PATH)[0].model_dump()),
            ),
        }
    )
    result = plan(config, context=8, constraints=only(sglang=engine, vllm=load_engine("vllm")))
    sgl, vllm = view(result, "sglang"), view(result, "vllm")
    layers, heads, head_dim = config["num_hidden_layers"], config["num_attention_heads"], 128
    assert sgl.kv_bytes_per_token == layers * 2 * heads * head_dim * 2  # silent MHA fallback
    assert vllm.kv_bytes_per_token == layers * 2 * config["num_key_value_heads"] * head_dim * 2


def test_without_the_kv_rule_a_full_attention_config_gets_no_sglang_figure():
    engine = sglang()._replace(
        facts={k: v for k, v in sglang().facts.items() if k != "kv_head_aliases"}
    )
    result = plan(sample("llama-3.1-8b"), context=8, constraints=only(sglang=engine))
    sgl = view(result, "sglang")
    assert sgl.kv_bytes_per_token is None
    assert any("KV-head rule is not extracted" in n for n in sgl.notes)


def test_committed_sglang_gives_gemma3_full_context():
    engine = load_engine("sglang")
    if engine is None or not engine.has("architecture_sets"):
        pytest.skip("generated/sglang absent or without architecture_sets")
    sgl = view(plan(sample("gemma-3-27b"), context=131072), "sglang")
    assert (sgl.mechanism, sgl.kv_bytes_at_context) == ("full_attention", 66_571_993_088)


def hybrid_class(config_class: str, model_type: str):
    return SglangHybridConfigClass(
        "mambaish_config",
        config_class,
        "mamba2_config()",
        model_type,
        "hf_config",
        None,
        "python/sglang/srt/configs/hybrid_arch.py",
        "mamba2_config",
    )


def test_a_state_layer_config_sglang_has_no_pool_class_for_gets_no_figure():
    engine = sglang()._replace(
        facts={
            **sglang().facts,
            "hybrid_config_classes": (hybrid_class("NemotronHConfig", "nemotron_h"),),
        }
    )
    result = plan(sample("jamba-v0.1"), context=8192, constraints=only(sglang=engine))
    sgl = view(result, "sglang")
    assert sgl.kv_bytes_per_token is None and sgl.state_bytes_per_sequence is None
    assert any(
        "no config class of SGLang's mambaish_config has model_type jamba" in n for n in sgl.notes
    )


def test_a_config_class_in_mambaish_config_is_named_in_the_view():
    engine = sglang()._replace(
        facts={**sglang().facts, "hybrid_config_classes": (hybrid_class("JambaConfig", "jamba"),)}
    )
    result = plan(sample("jamba-v0.1"), context=8192, constraints=only(sglang=engine))
    sgl = view(result, "sglang")
    assert sgl.mechanism == "hybrid_ssm"
    assert any("state pool: JambaConfig (model_type jamba)" in n for n in sgl.notes)


@pytest.mark.parametrize(
    ("extra", "expected_heads"),
    [
        ({}, 8),  # multi_query absent: the inline rule does not hold, the scan decides
        ({"multi_query": True}, 1),
        ({"multi_query": True, "model_type": "falcon", "new_decoder_architecture": True}, 8),
    ],
)
def test_sglang_inline_multi_query_rule_falls_through_to_the_scan(extra, expected_heads):
    extracted = kv_head_overrides(MODEL_CONFIG, MODEL_CONFIG_PATH)[0]  # the `*` multi_query rule
    assert extracted.model_type == "*" and extracted.otherwise == ""
    rule = KvHeadOverride(**extracted.model_dump())
    engine = sglang()._replace(facts={**sglang().facts, "kv_head_overrides": (rule,)})
    config = {**sample("llama-3.1-8b"), **extra}
    heads = kv_heads(ModelConfig(config, "t"), engine)
    assert heads is not None and heads.count == expected_heads, heads


def test_an_encoder_decoder_architecture_in_sglangs_set_gets_no_figure():
    sets = (member("MllamaForConditionalGeneration", set_name="is_encoder_decoder_model"),)
    config = {**sample("llama-3.1-8b"), "architectures": ["MllamaForConditionalGeneration"]}
    result = plan(config, context=8, constraints=only(sglang=sglang(sets=sets)))
    sgl = view(result, "sglang")
    assert sgl.kv_bytes_per_token is None
    assert any("encoder-decoder (is_encoder_decoder_model)" in n for n in sgl.notes)


def test_lfm2_gets_sglangs_state_pool_through_its_registered_model_type():
    """SGLang's Lfm2Config inherits model_type and registers under "lfm2": the generated class
    row carries it, so an LFM2 config gets SGLang's Mamba-style state pool (it had none)."""
    from apron.engines import sglang as sglang_rules

    config = json.loads(Path("tests/corpus/lfm2-2.6b.json").read_text())
    config["architectures"] = ["Lfm2ForCausalLM"]
    pool = sglang_rules.state_pool_class(ModelConfig(config, "x"), load_constraints().get("sglang"))
    assert pool is not None and pool[0].startswith("Lfm2Config (model_type lfm2")


DEEPSEEK_V32 = (
    Path(__file__).resolve().parent.parent
    / "conformance/sglang/30cb848d4b455a288a37cfeb6a45aff34f5634a6/inputs/deepseek-v3.2.json"
)


def test_a_dsa_model_with_an_fp8_cache_has_no_sglang_cell_figure():
    """SGLang's DSA latent with fp8 stores per-block scales and a bf16 rope part unless the DSA
    backend it picks from the GPU is trtllm (calculate_mla_kv_cache_dim): unknown, not a figure."""
    sgl = view(plan(str(DEEPSEEK_V32), kv_dtype="fp8"), "sglang")
    assert sgl.kv_bytes_per_token is None
    assert any("DSA backend" in n and "calculate_mla_kv_cache_dim" in n for n in sgl.notes)


def test_a_dsa_model_with_a_bf16_cache_keeps_the_latent_figure():
    """bf16: the plain latent whatever the backend (kv_lora_rank 512 + rope 64, 61 layers, plus
    the indexer's cache as SGLang measured it: 78,324 B/token)."""
    sgl = view(plan(str(DEEPSEEK_V32), kv_dtype="bf16"), "sglang")
    assert sgl.kv_bytes_per_token == 78_324


def test_a_config_class_without_num_attention_heads_gets_no_sglang_figure():
    """SGLang's ModelConfig reads hf_text_config.num_attention_heads by plain attribute access;
    Mamba2Config declares no such field (transformers' class), so SGLang refuses the config
    (AttributeError, conformance/sglang) while vLLM serves it."""
    result = plan(sample("mamba-codestral-7b"))
    sgl = view(result, "sglang")
    assert (sgl.kv_bytes_per_token, sgl.state_bytes_per_sequence) == (None, None)
    assert any("num_attention_heads" in n and "Mamba2Config" in n for n in sgl.notes)
    assert view(result, "vllm").state_bytes_per_sequence is not None


def test_a_published_num_attention_heads_keeps_the_sglang_figure():
    config = {**sample("mamba-codestral-7b"), "num_attention_heads": 128}
    assert view(plan(config), "sglang").state_bytes_per_sequence is not None


KIMI_K3 = Path(__file__).resolve().parent.parent / "conformance/sglang/configs/kimi-k3-shaped.json"


def test_kimi_k3_gets_the_state_pool_through_the_text_config_sglangs_class_builds():
    """kimi_linear_config tests getattr(config, "text_config", None) too, and KimiK3Config builds
    text_config as KimiLinearConfig(**text_config) (config_class_attributes): the class decides,
    not the model_type the file's text_config names (the record: KimiLinearConfig)."""
    from apron.engines import sglang as sglang_rules

    config = json.loads(KIMI_K3.read_text())
    engine = load_constraints().get("sglang")
    for text_model_type in ("kimi_linear", None, "llama"):
        text = {k: v for k, v in config["text_config"].items() if k != "model_type"}
        if text_model_type:
            text["model_type"] = text_model_type
        pool = sglang_rules.state_pool_class(
            ModelConfig({**config, "text_config": text}, "x"), engine
        )
        assert pool is not None and pool[0].startswith("KimiLinearConfig"), text_model_type
        assert "text_config" in pool[0]


def test_a_text_config_sglang_builds_as_another_class_gets_no_state_pool():
    """Without SGLang's class for the top model_type, the sub-config is the class of its own
    model_type: a llama text_config is no KimiLinearConfig."""
    from apron.engines import sglang as sglang_rules

    config = {**json.loads(KIMI_K3.read_text()), "model_type": "not_registered"}
    config["text_config"] = {**config["text_config"], "model_type": "llama"}
    pool = sglang_rules.state_pool_class(ModelConfig(config, "x"), load_constraints().get("sglang"))
    assert pool is None
