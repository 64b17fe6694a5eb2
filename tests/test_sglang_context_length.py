"""SGLang's default context length: get_context_length read as data (context_length_rules) and
evaluated per config in SGLang's column (apron.engines.sglang.default_context), which is the
context SGLang's figures are at when no --context is given."""

from __future__ import annotations

import json

from apron.extractors.sglang.context_length import context_length_rules
from apron.planning.planner import plan
from tests.sglang_miniatures import CONTEXT_LENGTH, CONTEXT_PATH


def _rules(text: str = CONTEXT_LENGTH) -> list[tuple[str, int, str, str]]:
    return [(r.kind, r.order, r.name, r.value) for r in context_length_rules(text, CONTEXT_PATH)]


def test_keys_factor_and_default_are_read():
    assert _rules() == [
        ("key", 0, "max_sequence_length", ""),
        ("key", 1, "seq_length", ""),
        ("key", 2, "max_seq_len", ""),
        ("key", 3, "model_max_length", ""),
        ("key", 4, "max_position_embeddings", ""),
        ("scaling_attribute", 0, "rope_scaling", ""),
        ("factor_key", 0, "factor", "1"),
        ("factor_one_when_key", 1, "original_max_position_embeddings", ""),
        ("factor_one_when_rope_type", 2, "", "llama3"),
        ("default", 0, "", "2048"),
    ]


def test_reformatting_changes_nothing():
    text = CONTEXT_LENGTH.replace("    return 2048", "    return (\n        2048\n    )")
    text = text.replace('"seq_length",', '"seq_length",  # older configs')
    assert _rules(text) == _rules()


def test_a_statement_of_another_shape_is_unread():
    text = CONTEXT_LENGTH.replace(
        "    for key in CONTEXT_LENGTH_KEYS:",
        "    log(config)\n    for key in CONTEXT_LENGTH_KEYS:",
    )
    unread = [r for r in context_length_rules(text, CONTEXT_PATH) if r.kind == "unread"]
    assert unread[0].code == "log(config)"


def _engine_context(config: dict, tmp_path) -> dict[str, tuple]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return {v.engine: (v.context, v.context_source) for v in plan(str(path)).engines}


WHISPER = {
    "architectures": ["WhisperForConditionalGeneration"],
    "model_type": "whisper",
    "d_model": 768,
    "encoder_attention_heads": 12,
    "decoder_attention_heads": 12,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "max_source_positions": 1500,
    "max_target_positions": 448,
}


def test_whisper_is_at_sglangs_2048_and_vllms_448(tmp_path):
    found = _engine_context(WHISPER, tmp_path)
    assert found["vllm"][0] == 448
    assert found["sglang"][0] == 2048
    assert "none of max_sequence_length" in found["sglang"][1]


LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "max_position_embeddings": 131072,
}


def test_llama3_rope_scaling_keeps_the_key(tmp_path):
    config = {**LLAMA, "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}}
    assert _engine_context(config, tmp_path)["sglang"][0] == 131072


def test_a_scaling_factor_is_unknown_not_guessed(tmp_path):
    config = {**LLAMA, "max_position_embeddings": 32768}
    config["rope_scaling"] = {"factor": 4.0, "rope_type": "yarn"}
    context, source = _engine_context(config, tmp_path)["sglang"]
    assert context is None
    assert "how transformers standardizes rope parameters" in source


def test_a_given_context_is_every_engines(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(WHISPER))
    assert {v.context for v in plan(str(path), context=1000).engines} == {1000}


def test_sglang_sizes_an_encoder_only_model_like_any_other(tmp_path):
    """SGLang budgets its ordinary KV pool for a BERT-type embedder (vLLM: no KV cache): the
    measured cell size of all-MiniLM-L6-v2 is 6 layers x 12 heads x (32 + 32) x 2 B = 9,216."""
    views = {v.engine: v for v in plan("tests/corpus/all-minilm-l6-v2.json").engines}
    assert views["vllm"].kv_bytes_per_token == 0
    assert views["sglang"].kv_bytes_per_token == 9216
    assert any("ordinary KV pool for encoder-only" in n for n in views["sglang"].notes)


KIMI_LINEAR = (
    "conformance/sglang/30cb848d4b455a288a37cfeb6a45aff34f5634a6/inputs/kimi-linear-48b-a3b.json"
)
KIMI_K3 = "conformance/sglang/configs/kimi-k3-shaped.json"


def test_a_key_the_file_lacks_is_sglangs_registered_class_default(tmp_path):
    """kimi_linear is in SGLang's _CONFIG_REGISTRY: KimiLinearConfig(max_position_embeddings=4096)
    is what get_context_length reads (the record: context_len 4,096); vLLM's column stays at its
    own 2,048. Kimi-K3's text_config is built as that class (KimiK3Config), so 4,096 too."""
    for path in (KIMI_LINEAR, KIMI_K3):
        config = json.loads(open(path).read())
        found = _engine_context(config, tmp_path)
        assert found["sglang"][0] == 4096, path
        assert "KimiLinearConfig" in found["sglang"][1] and "4,096" in found["sglang"][1]
        assert found["vllm"][0] == 2048


def test_a_key_the_file_gives_wins_over_the_class_default(tmp_path):
    config = json.loads(open(KIMI_LINEAR).read())
    config["max_position_embeddings"] = 1_048_576
    assert _engine_context(config, tmp_path)["sglang"][0] == 1_048_576
    k3 = json.loads(open(KIMI_K3).read())
    k3["text_config"] = {**k3["text_config"], "max_position_embeddings": 262_144}
    assert _engine_context(k3, tmp_path)["sglang"][0] == 262_144
