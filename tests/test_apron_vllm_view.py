"""apron's vLLM column follows vLLM's own class flags: encoder-only and attention-free classes
hold no KV cache, hybrid is vLLM's IsHybrid (not another engine's class), and a class whose
is_hybrid disagrees with the config's layer layout gets a note."""

from __future__ import annotations

from apron import plan
from apron.constraints import load_constraints, load_engine
from apron.generated.schema import ModelClassFlags

BERT = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "num_attention_heads": 12,
    "num_key_value_heads": 12,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "max_position_embeddings": 512,
}


def vllm_view(result):
    return next(v for v in result.engines if v.engine == "vllm")


def with_flags(architecture: str, **changes):
    engine = load_engine("vllm")
    rows = tuple(
        row._replace(**changes) if row.architecture == architecture else row
        for row in engine.facts["model_class_flags"]
    )
    return load_constraints().replace(
        "vllm", engine._replace(facts={**engine.facts, "model_class_flags": rows})
    )


def test_bert_embedding_has_no_kv_cache_in_the_vllm_column():
    result = plan(BERT, context=512)
    view = vllm_view(result)
    assert view.mechanism == "no_kv_cache"
    assert view.kv_bytes_per_token == 0 and view.kv_bytes_at_context == 0
    assert "default_seq_pooling_type CLS" in view.notes[0]
    assert any(c.symbol == "ModelConfig.attn_type" for c in view.citations)
    assert result.prediction.kv_bytes_per_token == 0  # apron's prediction reads the same flags


def test_a_causal_pooling_class_keeps_its_kv_cache_unless_the_config_says_not_causal():
    config = {**BERT, "architectures": ["Qwen2ForRewardModel"], "model_type": "qwen2"}
    assert vllm_view(plan(config, context=512)).mechanism == "full_attention"
    not_causal = {**config, "is_causal": False}
    view = vllm_view(plan(not_causal, context=512))
    assert view.mechanism == "no_kv_cache"
    assert "is_causal is false" in view.notes[0]


def test_attention_free_class_without_state_holds_nothing():
    config = {**BERT, "architectures": ["Terratorch"], "model_type": "terratorch"}
    view = vllm_view(plan(config, context=512))
    assert view.mechanism == "no_kv_cache"
    assert view.state_bytes_per_sequence == 0


def test_hybrid_flag_that_disagrees_with_the_layer_layout_is_a_note():
    config = {
        **BERT,
        "architectures": ["JambaForCausalLM"],
        "model_type": "jamba",
        "layers_block_type": ["attention"] * 12,
    }
    view = vllm_view(plan(config, context=512))
    assert any("vLLM's class is hybrid (IsHybrid)" in n for n in view.notes)
    swapped = with_flags("JambaForCausalLM", is_hybrid=False)
    assert not any("IsHybrid" in n for n in vllm_view(plan(config, constraints=swapped)).notes)


def test_vllm_column_uses_vllm_flags_not_another_engines():
    # llama.cpp classes the architecture as hybrid; with vLLM's class not hybrid and no layer
    # layout in the config, vLLM's column is plain attention
    # (attn_layer_period / offset null: JambaConfig's defaults 8 / 4 would give a layout)
    config = {
        **BERT,
        "architectures": ["JambaForCausalLM"],
        "model_type": "jamba",
        "attn_layer_period": None,
        "attn_layer_offset": None,
    }
    swapped = with_flags("JambaForCausalLM", is_hybrid=False)
    view = vllm_view(plan(config, context=512, constraints=swapped))
    assert view.flags == ()
    assert view.mechanism == "full_attention"
    hybrid = vllm_view(plan(config, context=512))
    assert hybrid.flags == ("hybrid",)
    assert any("states no per-layer layout" in n for n in hybrid.notes)


def test_schema_has_the_flags():
    assert "is_hybrid" in ModelClassFlags._fields and "attn_type" in ModelClassFlags._fields


def test_an_architecture_vllm_does_not_register_gets_no_other_engines_class():
    # llama.cpp classes RWKV as recurrent; vLLM registers no RWKV class, so its column takes no
    # recurrent flag from llama.cpp
    config = {**BERT, "architectures": ["Rwkv7ForCausalLM"], "model_type": "rwkv7"}
    result = plan(config, context=512)
    assert vllm_view(result).flags == ()
    assert vllm_view(result).registered is False


def test_an_unresolved_class_says_its_flags_are_unknown():
    swapped = with_flags("JambaForCausalLM", status="unresolved", is_hybrid=None)
    config = {**BERT, "architectures": ["JambaForCausalLM"], "model_type": "jamba"}
    view = vllm_view(plan(config, context=512, constraints=swapped))
    assert any("not statically resolved" in n for n in view.notes)
    assert view.flags == ()


QWEN35_08B = (
    "conformance/vllm/0231dd5467c61dca76f66269b6298a43772b3519/inputs/qwen3.5-0.8b-base.json"
)


def test_vllm_refuses_a_tp_its_vision_encoder_heads_do_not_divide():
    """Qwen3.5-0.8B's vision encoder has 12 heads; vLLM's vision attention divides them by tp
    (dist_utils.divide asserts), so tp 8 is refused at startup (conformance/vllm records it)."""
    from pathlib import Path

    path = str(Path(__file__).resolve().parent.parent / QWEN35_08B)
    result = plan(path, tp=8)
    gpu = vllm_view(result).gpu
    assert gpu.status == "refused"
    assert any("vision_config.num_heads = 12 is not divisible by tp 8" in r for r in gpu.refused)
    assert gpu.valid_tp[:3] == (1, 2, 4) and 8 not in gpu.valid_tp
    # SGLang accepts tp 8 (its KV cell per GPU, 6,144 B/token, is what SGLang measured)
    sglang = next(v for v in result.engines if v.engine == "sglang")
    assert sglang.gpu.kv_bytes_per_token == 6_144
    assert vllm_view(plan(path, tp=2)).gpu.status == "split"
