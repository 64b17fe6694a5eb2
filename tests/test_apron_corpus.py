"""apron on real public config.json files (tests/corpus, provenance in tests/corpus/README.md).

Every expected figure is worked out by hand from vLLM's rule at the pinned commit, with the
arithmetic next to it; all at --context 32768 and a bf16 KV cache (2 B per element). A wrong
figure fails here. Layer counts that come from a list in the config are recounted from the file
so the comment and the file cannot drift apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apron import plan
from apron.config import load_config
from apron.errors import ApronInputError

CORPUS = Path(__file__).resolve().parent / "corpus"
CTX = 32768


def corpus(name: str) -> dict:
    return json.loads((CORPUS / f"{name}.json").read_text())


def figures(name: str, context: int = CTX):
    result = plan(corpus(name), context=context)
    return result, result.prediction


# (file, mechanism, KV bytes per token, KV bytes at 32,768 tokens, state bytes per sequence)
# None means unknown; each row's arithmetic is in the comment above it.
CASES = [
    # -- full attention: per token = layers x kv_heads x (head_dim + head_dim) x 2 B -----------
    # 32 x 8 x (128 + 128) x 2 = 131,072; x 32,768 = 4,294,967,296
    ("llama-3.1-8b", "full_attention", 131_072, 4_294_967_296, 0),
    ("llama-3.1-8b-instruct", "full_attention", 131_072, 4_294_967_296, 0),
    # 28 x 8 x 256 x 2 = 114,688; x 32,768 = 3,758,096,384
    ("llama-3.2-3b", "full_attention", 114_688, 3_758_096_384, 0),
    # sliding_window null: full attention; 32 x 8 x 256 x 2 = 131,072
    ("mistral-7b-instruct-v0.3", "full_attention", 131_072, 4_294_967_296, 0),
    # head_dim 128 (not 5120 / 32 = 160): 40 x 8 x 256 x 2 = 163,840; x 32,768 = 5,368,709,120
    ("mistral-nemo-base-2407", "full_attention", 163_840, 5_368_709_120, 0),
    # 36 x 8 x 256 x 2 = 147,456; x 32,768 = 4,831,838,208
    ("qwen3-4b", "full_attention", 147_456, 4_831_838_208, 0),
    ("qwen3-8b", "full_attention", 147_456, 4_831_838_208, 0),
    # 40 x 8 x 256 x 2 = 163,840
    ("qwen3-14b", "full_attention", 163_840, 5_368_709_120, 0),
    # 64 x 8 x 256 x 2 = 262,144; x 32,768 = 8,589,934,592
    ("qwen3-32b", "full_attention", 262_144, 8_589_934_592, 0),
    # MoE does not change the cache: 48 x 4 x 256 x 2 = 98,304; x 32,768 = 3,221,225,472
    ("qwen3-30b-a3b", "full_attention", 98_304, 3_221_225_472, 0),
    # falcon multi_query: 1 KV head; head_dim 4544 / 71 = 64: 32 x 1 x 128 x 2 = 8,192
    ("falcon-7b", "full_attention", 8_192, 268_435_456, 0),
    # MPT d_model / n_heads = 4096 / 32 = 128, MHA: 32 x 32 x 256 x 2 = 524,288
    ("mpt-7b", "full_attention", 524_288, 17_179_869_184, 0),
    # GPTBigCode multi_query true -> vLLM builds 1 KV head; head_dim 2048 / 16 = 128:
    # 24 x 1 x 256 x 2 = 12,288 (MHA would be 24 x 16 x 256 x 2 = 196,608); x 32,768
    ("gpt_bigcode-santacoder", "full_attention", 12_288, 402_653_184, 0),
    # -- Qwen2.5: use_sliding_window false, the window never applies -----------------------------
    # hidden 2048 / 16 = 128: 36 x 2 x 256 x 2 = 36,864; x 32,768 = 1,207,959,552
    ("qwen2.5-3b", "sliding_window", 36_864, 1_207_959_552, 0),
    # 3584 / 28 = 128: 28 x 4 x 256 x 2 = 57,344; x 32,768 = 1,879,048,192
    ("qwen2.5-7b", "sliding_window", 57_344, 1_879_048_192, 0),
    # 5120 / 40 = 128: 48 x 8 x 256 x 2 = 196,608; x 32,768 = 6,442,450,944
    ("qwen2.5-14b", "sliding_window", 196_608, 6_442_450_944, 0),
    # 64 x 8 x 256 x 2 = 262,144
    ("qwen2.5-32b", "sliding_window", 262_144, 8_589_934_592, 0),
    # -- MLA latent (+ DSA indexer) ----------------------------------------------------------------
    # 61 x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 = 70,272; x 32,768 = 2,302,672,896
    ("deepseek-v3", "mla_latent", 70_272, 2_302_672_896, 0),
    # index_topk -> indexer per layer: 128 + 128 / 128 x 4 = 132 B (uint8);
    # 61 x (576 x 2 + 132) = 61 x 1,284 = 78,324; x 32,768 = 2,566,520,832
    ("deepseek-v3.2", "mla_latent", 78_324, 2_566_520_832, 0),
    # -- sliding window ---------------------------------------------------------------------------
    # no per-layer list: vLLM windows every layer. 32 x 8 x 256 x 2 = 131,072 per token;
    # at 32,768: 131,072 x min(32,768, 4,096) = 536,870,912
    ("mistral-7b-v0.1", "sliding_window", 131_072, 536_870_912, 0),
    # head_dim 3072 / 32 = 96, MHA: 32 x 32 x 192 x 2 = 393,216; x min(32,768, 2,047) = 804,913,152
    ("phi-3-mini-4k-instruct", "sliding_window", 393_216, 804_913_152, 0),
    # Gemma2Config default layout: sliding unless (i + 1) % 2 == 0 -> 13 full, 13 windowed;
    # per layer 4 x 512 x 2 = 4,096; 26 x 4,096 = 106,496 per token;
    # 13 x 4,096 x 32,768 + 13 x 4,096 x 4,096 = 1,744,830,464 + 218,103,808 = 1,962,934,272
    ("gemma-2-2b", "sliding_window", 106_496, 1_962_934_272, 0),
    # 21 full, 21 windowed; per layer 8 x 512 x 2 = 8,192; 42 x 8,192 = 344,064;
    # 21 x 8,192 x 32,768 + 21 x 8,192 x 4,096 = 5,637,144,576 + 704,643,072 = 6,341,787,648
    ("gemma-2-9b", "sliding_window", 344_064, 6_341_787_648, 0),
    # Gemma3TextConfig default pattern 6 -> 10 global (5, 11, .., 59), 52 windowed (1,024);
    # per layer 16 x 256 x 2 = 8,192; 62 x 8,192 = 507,904;
    # 10 x 8,192 x 32,768 + 52 x 8,192 x 1,024 = 2,684,354,560 + 436,207,616 = 3,120,562,176
    ("gemma-3-27b", "sliding_window", 507_904, 3_120_562_176, 0),
    # model_type gemma3n, Gemma3nForConditionalGeneration; geometry from its text_config
    # (vLLM's hf_text_config). num_kv_shared_layers 15: layers 20..34 hold no KV;
    # layers 0..19: full at 4, 9, 14, 19 ->
    # 4 full, 16 windowed (512); per layer 2 x 512 x 2 = 2,048; 20 x 2,048 = 40,960;
    # 4 x 2,048 x 32,768 + 16 x 2,048 x 512 = 268,435,456 + 16,777,216 = 285,212,672
    ("gemma-3n-e4b", "sliding_window", 40_960, 285_212_672, 0),
    # gpt-oss: layer_types alternate, window 128; per layer 8 x 128 x 2 = 2,048; 24 x 2,048 =
    # 49,152; 12 x 2,048 x 32,768 + 12 x 2,048 x 128 = 805,306,368 + 3,145,728 = 808,452,096
    ("gpt-oss-20b", "sliding_window", 49_152, 808_452_096, 0),
    # hybrid_layer_pattern: 9 full layers, 39 SWA layers with their own geometry;
    # full 4 x (192 + 128) x 2 = 2,560, SWA 8 x (192 + 128) x 2 = 5,120;
    # 9 x 2,560 + 39 x 5,120 = 23,040 + 199,680 = 222,720 per token;
    # 23,040 x 32,768 + 199,680 x min(32,768, 128) = 754,974,720 + 25,559,040 = 780,533,760
    ("mimo-v2-flash", "sliding_window", 222_720, 780_533_760, 0),
    # Gemma 4 (vLLM gemma4.py): 50 windowed layers x 16 KV heads x (256 + 256) x 2 B = 819,200;
    # 10 full layers take num_global_key_value_heads 4 (attention_k_eq_v) and global_head_dim
    # 512: 10 x 4 x (512 + 512) x 2 B = 81,920 -> 901,120 B/token;
    # at 32,768: 81,920 x 32,768 + 819,200 x 1,024 = 3,523,215,360
    ("gemma-4-31b", "sliding_window", 901_120, 3_523_215_360, 0),
    # Kimi-Linear: MLA layers among KDA layers is not an implemented mechanism: unknown
    (
        "kimi-linear-48b-a3b",
        "mla_latent",
        None,
        None,
        None,
    ),  # -- hybrids: KV on attention layers + fixed state ---------------------------------------------
    # Jamba: 4 attention x 8 x 256 x 2 = 16,384; Mamba1 d_inner 2 x 4,096 = 8,192:
    # (3 x 8,192 + 8,192 x 16) x 2 = 311,296 x 28 layers = 8,716,288
    ("jamba-v0.1", "hybrid_ssm", 16_384, 536_870_912, 8_716_288),
    # Nemotron-H: 4 attention x 8 x 256 x 2 = 16,384; Mamba2 intermediate 128 x 64 = 8,192;
    # conv 3 x (8,192 + 2 x 8 x 128) = 30,720 x 2 B; ssm 128 x 64 x 128 = 1,048,576 x 4 B
    # (vLLM's float32 default) = 61,440 + 4,194,304 = 4,255,744 x 24 = 102,137,856
    ("nemotron-h-8b-base-8k", "hybrid_ssm", 16_384, 536_870_912, 102_137_856),
    # Nemotron-3-Nano: 6 attention x 2 x 256 x 2 = 6,144; intermediate 64 x 64 = 4,096
    # (expand x hidden would be 5,376); conv 3 x (4,096 + 2 x 8 x 128) = 18,432 x 2 B;
    # ssm 64 x 64 x 128 = 524,288 x 4 B (config mamba_ssm_cache_dtype float32);
    # 36,864 + 2,097,152 = 2,134,016 x 23 Mamba layers = 49,082,368
    ("nemotron-3-nano-30b-a3b", "hybrid_ssm", 6_144, 201_326_592, 49_082_368),
    # Qwen3-Next: full_attention_interval 4 -> 12 attention, 36 GDN layers;
    # KV 12 x 2 x 512 x 2 = 24,576; GDN conv 3 x (2 x 16 x 128 + 32 x 128) = 24,576 x 2 B,
    # ssm 32 x 128 x 128 = 524,288 x 2 B; 49,152 + 1,048,576 = 1,097,728 x 36 = 39,518,208
    ("qwen3-next-80b-a3b-instruct", "hybrid_ssm", 24_576, 805_306_368, 39_518_208),
    # Qwen3.5: 6 attention x 2 x 512 x 2 = 12,288; GDN conv 3 x (2 x 16 x 128 + 16 x 128) =
    # 18,432 x 2 B, ssm 16 x 128 x 128 = 262,144 x 4 B (mamba_ssm_dtype float32);
    # 36,864 + 1,048,576 = 1,085,440 x 18 = 19,537,920
    ("qwen3.5-0.8b-base", "hybrid_ssm", 12_288, 402_653_184, 19_537_920),
    # MiniMax-M1: attn_type_list -> 10 softmax layers: 10 x 8 x 256 x 2 = 40,960;
    # the linear-attention state needs the weights' dtype, which the config does not give
    ("minimax-m1-40k", "hybrid_ssm", 40_960, 1_342_177_280, None),
    # Zamba2: attention_head_dim 2 x 3,584 / 32 = 224 (hidden / heads would be 112);
    # 13 hybrid layers x 32 x (224 + 224) x 2 = 372,736; Mamba2 on all 81 layers with
    # Zamba2Config defaults n_mamba_heads 8, mamba_d_state 64, mamba_d_conv 4, mamba_expand 2:
    # conv 3 x (7,168 + 2 x 2 x 64) = 22,272; ssm 8 heads x head_dim x 64, where head_dim is
    # what the layer vLLM builds takes (zamba2.py MambaMixer2: intermediate_size // n_mamba_heads
    # = 7,168 // 8 = 896), not the hook's mamba_headdim 64: 8 x 896 x 64 = 458,752;
    # (22,272 + 458,752) x 2 = 962,048 x 81 = 77,925,888 (vLLM's own spec: conformance/vllm)
    ("zamba2-7b", "hybrid_ssm", 372_736, 12_213_813_248, 77_925_888),
    # Falcon-H1 parallel hybrid: KV on all 44 layers 44 x 2 x 256 x 2 = 45,056; no dtype
    ("falcon-h1-7b", "hybrid_ssm", 45_056, 1_476_395_008, None),
    # LFM2: 8 full-attention layers x 8 x 128 x 2 = 16,384; short-conv state needs the dtype
    ("lfm2-2.6b", "hybrid_ssm", 16_384, 536_870_912, None),
    # -- attention-free, encoder-only, encoder-decoder ---------------------------------------------
    # Mamba2: 64 layers x (3 x (8,192 + 2 x 8 x 128) + 128 x 64 x 128) x 2 = 138,149,888
    ("mamba-codestral-7b", "recurrent", 0, 0, 138_149_888),
    # BertModel -> vLLM models/bert.py EncoderOnlyAttention: no KV
    ("all-minilm-l6-v2", "encoder_only", 0, 0, 0),
    ("biobert-v1.1", "encoder_only", 0, 0, 0),
    # Whisper: head_dim 768 / 12 = 64; decoder self-attention 12 x 12 x 128 x 2 = 36,864 per
    # token; cross-attention 36,864 x max_source_positions 1,500 = 55,296,000 per request
    ("whisper-small", "encoder_decoder", 36_864, 1_207_959_552, 55_296_000),
]


def test_corpus_has_at_least_40_real_configs_and_every_one_is_checked():
    files = {p.stem for p in CORPUS.glob("*.json")}
    checked = {row[0] for row in CASES} | {"llama-7b"} | set(REFUSED)
    assert len(files) >= 40
    assert files == checked


@pytest.mark.parametrize(("name", "mechanism", "per_token", "at_context", "state"), CASES)
def test_corpus_figure(name, mechanism, per_token, at_context, state):
    _, p = figures(name)
    assert p.mechanism == mechanism
    assert p.kv_bytes_per_token == per_token
    assert p.kv_bytes_at_context == at_context
    assert p.state_bytes_per_sequence == state


# configs the configuration class vLLM builds them with refuses (conformance/vllm measured each)
REFUSED = {
    "llama-4-scout-17b-16e": "attn_temperature_tuning is 4, not a boolean",  # @strict field type
}
VLLM_COLUMN_REFUSES = {"nemotron-h-8b-base-8k": "raises KeyError: '-'"}  # SGLang's own class


@pytest.mark.parametrize(("name", "mechanism", "per_token", "at_context", "state"), CASES)
def test_vllm_column_matches_the_prediction(name, mechanism, per_token, at_context, state):
    result, _ = figures(name)
    vllm = next(v for v in result.engines if v.engine == "vllm")
    if name in VLLM_COLUMN_REFUSES:
        assert vllm.kv_bytes_per_token is None
        assert any(VLLM_COLUMN_REFUSES[name] in n for n in vllm.notes)
        return
    assert (vllm.kv_bytes_per_token, vllm.state_bytes_per_sequence) == (per_token, state)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_config_its_class_refuses_is_refused(name):
    with pytest.raises(ApronInputError, match=REFUSED[name]):
        figures(name)


def test_layer_counts_behind_the_comments():
    nano = corpus("nemotron-3-nano-30b-a3b")["hybrid_override_pattern"]
    assert (nano.count("M"), nano.count("*"), len(nano)) == (23, 6, 52)
    zamba = corpus("zamba2-7b")["layers_block_type"]
    assert (zamba.count("hybrid"), len(zamba)) == (13, 81)
    assert corpus("minimax-m1-40k")["attn_type_list"].count(1) == 10
    assert corpus("lfm2-2.6b")["layer_types"].count("full_attention") == 8
    mimo = corpus("mimo-v2-flash")["hybrid_layer_pattern"]
    assert (mimo.count(0), mimo.count(1)) == (9, 39)
    assert corpus("qwen3.5-0.8b-base")["text_config"]["layer_types"].count("full_attention") == 6


def test_llama_7b_without_kv_head_key_is_unknown_but_vllm_assumes_mha():
    result, p = figures("llama-7b")
    assert p.kv_bytes_per_token is None and p.mechanism == "full_attention"
    vllm = next(v for v in result.engines if v.engine == "vllm")
    # vLLM's fallback: num_attention_heads 32 -> 32 x 32 x 256 x 2 = 524,288
    assert vllm.kv_bytes_per_token == 524_288


def test_qwen3_0_6b_without_head_dim_uses_the_class_default():
    # Qwen3-0.6B's geometry without head_dim: transformers Qwen3Config head_dim default 128
    # (not 1024 / 16 = 64): 28 layers x 8 KV heads x (128 + 128) x 2 B = 114,688 B/token
    # (57,344 with head_dim 64)
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "num_hidden_layers": 28,
        "max_position_embeddings": 40960,
        "torch_dtype": "bfloat16",
    }
    result = plan(config, context=CTX)
    vllm = next(v for v in result.engines if v.engine == "vllm")
    assert vllm.kv_bytes_per_token == 28 * 8 * (128 + 128) * 2 == 114_688
    assert result.prediction.kv_bytes_per_token == 114_688


def test_minimax_m1_state_is_unknown_at_the_pin():
    config = corpus("minimax-m1-40k") | {"torch_dtype": "bfloat16"}
    p = plan(config, context=CTX).prediction
    # vLLM 0231dd54's registry.py lists MiniMaxM1ForCausalLM in _PREVIOUSLY_SUPPORTED_MODELS
    # (0.23.0) and no model file defines its state hook any more: no extracted rule, no figure
    # (at 9aaf83ef it was 70 x 64 x 128 x 128 x 2 B by minimax_text_01.py)
    assert p.state_bytes_per_sequence is None
    assert any("no vLLM state rule" in u for u in p.unknown)


# the corpus copies of LFM2-2.6B and Falcon-H1-7B are subsets without `architectures`; the
# published files name these classes, whose state hooks vLLM calls
LFM2 = {"architectures": ["Lfm2ForCausalLM"]}
FALCON_H1 = {"architectures": ["FalconH1ForCausalLM"]}


def test_unknown_state_names_the_missing_field():
    for config in (corpus("falcon-h1-7b") | FALCON_H1, corpus("lfm2-2.6b") | LFM2):
        p = plan(config, context=CTX).prediction
        assert "torch_dtype" in p.missing
        assert any("safetensors weights" in u for u in p.unknown)


def test_state_without_architectures_is_unknown():
    # vLLM resolves the model class (and so its state hook) from `architectures`
    p = plan(corpus("lfm2-2.6b") | {"torch_dtype": "bfloat16"}, context=CTX).prediction
    assert p.state_bytes_per_sequence is None
    assert any("no vLLM state rule" in u for u in p.unknown)


def test_nemotron_h_ssm_dtype_default_is_extracted_and_cited():
    result, _ = figures("nemotron-h-8b-base-8k")
    assert result.request.ssm_dtype == "float32"
    assert (
        "NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype" in result.request.ssm_dtype_source
    )
    assert "default float32" in result.request.ssm_dtype_source
    nano, _ = figures("nemotron-3-nano-30b-a3b")
    assert "the config's mamba_ssm_cache_dtype = float32" in nano.request.ssm_dtype_source


def test_without_the_extracted_default_the_state_is_in_the_model_dtype():
    from apron.constraints import load_constraints

    cs = load_constraints()
    vllm = cs.get("vllm")

    class NoDefaults:
        def __getattr__(self, name):
            return getattr(vllm, name)

        def rows(self, fact):
            return () if fact == "mamba_ssm_dtype_defaults" else vllm.rows(fact)

    p = plan(
        corpus("nemotron-h-8b-base-8k"), context=CTX, constraints=cs.replace("vllm", NoDefaults())
    )
    # all bf16: 24 x (30,720 + 1,048,576) x 2 = 51,806,208: the default doubles the ssm tensor
    assert p.prediction.state_bytes_per_sequence == 24 * (30_720 + 1_048_576) * 2 == 51_806_208


def test_static_reading_is_stated_in_the_answer():
    result, _ = figures("gemma-2-9b")
    assert any("transformers 5.5.3 Gemma2Config" in n for n in result.notes)
    result = plan(corpus("llama-3.1-8b") | {"model_type": "no_such_model"}, context=CTX)
    assert any("no configuration class for model_type 'no_such_model'" in n for n in result.notes)


def test_zamba2_derived_fields_say_where_they_come_from():
    model = load_config(corpus("zamba2-7b"))
    read = model.read("attention_head_dim")
    # Zamba2Config.__post_init__: attention_head_dim = 2 * hidden_size // num_attention_heads
    # = 2 x 3584 / 32 = 224
    assert read.value == 224 and "2 * self.hidden_size // self.num_attention_heads" in read.key
    assert model.read("n_mamba_heads").value == 8


# -- context ----------------------------------------------------------------------------------


def test_context_beyond_the_model_warns():
    result = plan(corpus("llama-3.1-8b"), context=1_000_000)
    # rope_type llama3 keeps factor 1 in vLLM's rule: the maximum is max_position_embeddings
    assert result.request.max_model_len == 131_072
    assert any("beyond the model's maximum 131,072" in n for n in result.notes)
    assert not any("beyond" in n for n in plan(corpus("llama-3.1-8b"), context=CTX).notes)


def test_default_context_is_the_derived_maximum_and_says_where_from():
    result = plan(corpus("minimax-m1-40k"))
    assert result.request.context == 10_240_000
    assert "max_position_embeddings = 10,240,000" in result.request.context_source
    # yarn: original_max_position_embeddings 4,096 x factor 40 = 163,840
    ds = plan(corpus("deepseek-v3.2"))
    assert ds.request.context == 4096 * 40 == 163_840
    assert "yarn" in ds.request.context_source
    # gpt-oss yarn: 4,096 x 32 = 131,072
    assert plan(corpus("gpt-oss-20b")).request.context == 131_072
    # Whisper: max_target_positions 448
    assert plan(corpus("whisper-small")).request.context == 448


def test_phi3_at_32k_is_beyond_its_4k_maximum():
    result, _ = figures("phi-3-mini-4k-instruct")
    assert result.request.max_model_len == 4096
    assert result.request.context_warnings


def test_longrope_default_is_the_original_length_but_the_limit_is_the_full_one():
    config = corpus("phi-3-mini-4k-instruct") | {
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]},
    }
    result = plan(config)
    assert result.request.context == 4096 and "longrope" in result.request.context_source
    assert result.request.max_model_len == 131_072
    assert not plan(config, context=131_072).request.context_warnings


def test_short_conv_and_parallel_hybrid_state_once_the_dtype_is_known():
    lfm2 = plan(corpus("lfm2-2.6b") | LFM2 | {"torch_dtype": "bfloat16"}, context=CTX).prediction
    # lfm2.py passes intermediate_size=hf_config.conv_dim, conv_kernel=hf_config.conv_L_cache to
    # short_conv_state_shape -> (conv_kernel - 1, divide(intermediate_size, tp)):
    # 30 - 8 = 22 conv layers x (conv_L_cache 3 - 1) x conv_dim 2,048 x 2 B = 180,224
    assert lfm2.state_bytes_per_sequence == 22 * 2 * 2048 * 2 == 180_224
    falcon = plan(corpus("falcon-h1-7b") | {"torch_dtype": "bfloat16"}, context=CTX).prediction
    # intermediate = mamba_d_ssm 3,072; conv 3 x (3,072 + 2 x 1 x 256) = 10,752;
    # ssm 24 x 128 x 256 = 786,432; (10,752 + 786,432) x 2 B = 1,594,368 x 44 layers
    assert falcon.state_bytes_per_sequence == 44 * (3 * 3584 + 24 * 128 * 256) * 2 == 70_152_192


def test_transformers5_layer_types_spelling_for_mamba_layers():
    config = corpus("jamba-v0.1")
    period, offset = config.pop("attn_layer_period"), config.pop("attn_layer_offset")
    config["layer_types"] = [
        "full_attention" if i % period == offset else "linear_attention" for i in range(32)
    ]
    p = plan(config, context=CTX).prediction
    # the same 4 attention + 28 Mamba1 layers as the published file: 16,384 B/token, 8,716,288 B
    assert (p.kv_bytes_per_token, p.state_bytes_per_sequence) == (16_384, 8_716_288)
