"""Tiny random Hugging Face checkpoints that keep each architecture's memory structure (window
pattern, hybrid layout, state shapes, MLA ranks, KV sharing, per-layer head counts): the specs,
and the code that writes one (config.json, random safetensors from the transformers class, and
a small tokenizer made here). Run inside the measuring environment (torch, transformers)."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VOCAB = 512
CONTEXT_LENGTH = 2048  # max_position_embeddings of every tiny model: what n_ctx 0 takes
WINDOW = 64  # every sliding window the configs set; the contexts measured exceed it

# a small dense base: 4 query heads of 32, 2 KV heads (K/V rows of 64: whole q8_0 blocks)
BASE: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": 128,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "max_position_embeddings": CONTEXT_LENGTH,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}


@dataclass(frozen=True)
class Spec:
    """One tiny checkpoint: its name, transformers model_type and class, config overrides."""

    name: str
    model_type: str
    architecture: str
    overrides: dict[str, Any] = field(default_factory=dict)
    base: bool = True  # start from BASE
    extra_contexts: tuple[int, ...] = ()  # contexts above a built-in window
    note: str = ""
    top: dict[str, Any] | None = None  # a multimodal wrapper: the text config nests in it
    # tensor names transformers saves under another name than the converter maps
    renames: tuple[tuple[str, str], ...] = ()
    tokenizer: str = "bpe"  # "llama-bpe": a byte-fallback BPE (gguf-py's LlamaHfVocab)
    # keys the published checkpoints' config.json carry that transformers no longer saves
    config_extra: dict[str, Any] = field(default_factory=dict)


def _layers(pattern: str, n: int) -> list[str]:
    names = {
        "S": "sliding_attention",
        "F": "full_attention",
        "L": "linear_attention",
        "C": "conv",
        "M": "mamba",
        "A": "attention",
        "K": "chunked_attention",
    }
    return [names[pattern[i % len(pattern)]] for i in range(n)]


SPECS: tuple[Spec, ...] = (
    Spec("llama", "llama", "LlamaForCausalLM"),
    Spec("llama-mha", "llama", "LlamaForCausalLM", {"num_key_value_heads": 4}),
    Spec("mistral", "mistral", "MistralForCausalLM", {"sliding_window": None}),
    Spec("qwen2", "qwen2", "Qwen2ForCausalLM"),
    Spec("qwen3", "qwen3", "Qwen3ForCausalLM"),
    Spec(
        "qwen3-moe",
        "qwen3_moe",
        "Qwen3MoeForCausalLM",
        {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64},
    ),
    Spec("gemma", "gemma", "GemmaForCausalLM", {"num_key_value_heads": 1}),
    Spec(
        "gemma2",
        "gemma2",
        "Gemma2ForCausalLM",
        {"sliding_window": WINDOW, "layer_types": _layers("SF", 4)},
    ),
    Spec(
        "gemma3",
        "gemma3_text",
        "Gemma3ForCausalLM",
        {"num_hidden_layers": 8, "sliding_window": WINDOW, "layer_types": _layers("SSSSSF", 8)},
    ),
    Spec(
        "gemma3n",
        "gemma3n_text",
        "Gemma3nForCausalLM",
        {
            "num_hidden_layers": 10,
            "intermediate_size": [128] * 10,
            "sliding_window": WINDOW,
            "layer_types": _layers("SSSSF", 10),
            "num_kv_shared_layers": 4,
            # llama.cpp's gemma3n takes n_embd_altup 256 and laurel_rank 64 as given
            "hidden_size_per_layer_input": 256,
            "vocab_size_per_layer_input": VOCAB,
            "laurel_rank": 64,
            "activation_sparsity_pattern": [0.0] * 10,
        },
        note="KV sharing: num_kv_shared_layers 4 in the config; llama.cpp fixes 20",
        renames=(("per_layer_model.language_model_projection", "per_layer_model_projection"),),
    ),
    Spec(
        "gemma4",
        "gemma4",
        "Gemma4ForConditionalGeneration",
        {
            "num_hidden_layers": 6,
            "sliding_window": WINDOW,
            "layer_types": _layers("SSF", 6),
            "global_head_dim": 64,
            "num_global_key_value_heads": 1,
            "attention_k_eq_v": True,
            "hidden_size_per_layer_input": 32,
            "vocab_size_per_layer_input": VOCAB,
            # the layers before the shared ones end [sliding, full], as the published models'
            # do: llama.cpp's reuse callback takes the last of each kind (n - 2, n - 1)
            "num_kv_shared_layers": 3,
        },
        note="full-attention layers with their own head size and KV heads; KV sharing",
        tokenizer="llama-bpe",
        top={
            "vision_config": None,
            "audio_config": None,
            "boi_token_id": 4,
            "eoi_token_id": 5,
            "image_token_id": 6,
            "video_token_id": 7,
            "boa_token_id": 8,
            "eoa_token_index": 9,
            "audio_token_id": 10,
            "tie_word_embeddings": True,
        },
    ),
    Spec(
        "cohere2",
        "cohere2",
        "Cohere2ForCausalLM",
        {
            "sliding_window": WINDOW,
            "layer_types": _layers("SSSF", 4),
            "tie_word_embeddings": True,
            "rotary_pct": 1.0,
        },
    ),
    Spec(
        "gpt-oss",
        "gpt_oss",
        "GptOssForCausalLM",
        {
            "sliding_window": WINDOW,
            "layer_types": _layers("SF", 4),
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
        },
    ),
    Spec(
        "exaone4",
        "exaone4",
        "Exaone4ForCausalLM",
        {"sliding_window": WINDOW, "sliding_window_pattern": 4, "layer_types": _layers("SSSF", 4)},
        note="4 layers: llama.cpp turns the window on only for 64 layers",
    ),
    Spec(
        "exaone4-64",
        "exaone4",
        "Exaone4ForCausalLM",
        {
            "num_hidden_layers": 64,
            "hidden_size": 64,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "intermediate_size": 64,
            "sliding_window": WINDOW,
            "sliding_window_pattern": 4,
            "layer_types": _layers("SSSF", 64),
        },
        note="64 layers: the one layer count llama.cpp windows",
    ),
    Spec(
        "llama4",
        "llama4_text",
        "Llama4ForCausalLM",
        {
            "intermediate_size_mlp": 128,
            "num_local_experts": 2,
            "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 2,
            "attention_chunk_size": WINDOW,
            "layer_types": _layers("KKKF", 4),
            "no_rope_layers": [1, 1, 1, 0],
            "moe_layers": [1, 3],
        },
        extra_contexts=(16384,),
        note="chunked attention: the converter writes no window, the loader's is 8192",
    ),
    Spec("phi3", "phi3", "Phi3ForCausalLM", {"sliding_window": WINDOW}),
    Spec("olmo2", "olmo2", "Olmo2ForCausalLM"),
    Spec(
        "olmo3",
        "olmo3",
        "Olmo3ForCausalLM",
        {"sliding_window": WINDOW, "layer_types": _layers("SSSF", 4)},
    ),
    Spec(
        "deepseek-v2",
        "deepseek_v2",
        "DeepseekV2ForCausalLM",
        {
            "num_key_value_heads": 4,
            "kv_lora_rank": 64,
            "q_lora_rank": None,
            "qk_rope_head_dim": 32,
            "qk_nope_head_dim": 32,
            "v_head_dim": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "moe_intermediate_size": 64,
            "first_k_dense_replace": 1,
            "n_group": 1,
            "topk_group": 1,
            "topk_method": "greedy",
        },
        note="MLA: kv_lora_rank 64, rope head 32",
    ),
    Spec(
        "deepseek-v3",
        "deepseek_v3",
        "DeepseekV3ForCausalLM",
        {
            "num_key_value_heads": 4,
            "kv_lora_rank": 64,
            "q_lora_rank": 64,
            "qk_rope_head_dim": 32,
            "qk_nope_head_dim": 32,
            "v_head_dim": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "moe_intermediate_size": 64,
            "first_k_dense_replace": 1,
            "n_group": 1,
            "topk_group": 1,
        },
    ),
    Spec(
        "mamba",
        "mamba",
        "MambaForCausalLM",
        {
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "state_size": 16,
            "num_hidden_layers": 2,
            "conv_kernel": 4,
            "expand": 2,
            "time_step_rank": 8,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
        },
        base=False,
    ),
    Spec(
        "falcon-mamba",
        "falcon_mamba",
        "FalconMambaForCausalLM",
        {
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "state_size": 16,
            "num_hidden_layers": 2,
            "conv_kernel": 4,
            "expand": 2,
            "time_step_rank": 8,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
        },
        base=False,
    ),
    Spec(
        "mamba2",
        "mamba2",
        "Mamba2ForCausalLM",
        {
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "num_heads": 4,
            "head_dim": 32,
            "state_size": 16,
            "n_groups": 1,
            "num_hidden_layers": 2,
            "expand": 2,
            "conv_kernel": 4,
            "time_step_rank": 8,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
        },
        base=False,
        note="the pin sizes ssm_in with n_head(), 0 for Mamba2: expected refused",
    ),
    Spec(
        "jamba",
        "jamba",
        "JambaForCausalLM",
        {
            "attn_layer_period": 2,
            "attn_layer_offset": 1,
            "expert_layer_period": 2,
            "expert_layer_offset": 1,
            "num_experts": 2,
            "num_experts_per_tok": 1,
            "mamba_d_state": 16,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
            "mamba_dt_rank": 8,
            "use_mamba_kernels": False,
        },
    ),
    Spec(
        "falcon-h1",
        "falcon_h1",
        "FalconH1ForCausalLM",
        {
            "mamba_d_ssm": 128,
            "mamba_n_heads": 4,
            "mamba_d_head": 32,
            "mamba_n_groups": 1,
            "mamba_d_state": 16,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
            "mamba_chunk_size": 16,
        },
    ),
    Spec(
        "granite-hybrid",
        "granitemoehybrid",
        "GraniteMoeHybridForCausalLM",
        {
            "layer_types": _layers("MMMA", 4),
            "mamba_n_heads": 4,
            "mamba_d_head": 64,
            "mamba_n_groups": 1,
            "mamba_d_state": 16,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
            "mamba_chunk_size": 16,
            "num_local_experts": 0,
            "num_experts_per_tok": 0,
            "shared_intermediate_size": 128,
        },
    ),
    Spec(
        "nemotron-h",
        "nemotron_h",
        "NemotronHForCausalLM",
        {
            "num_hidden_layers": 6,
            "layers_block_type": ["mamba", "moe", "attention", "moe", "mamba", "moe"],
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "moe_shared_expert_intermediate_size": 64,
            "mamba_num_heads": 4,
            "mamba_head_dim": 64,
            "n_groups": 1,
            "ssm_state_size": 16,
            "conv_kernel": 4,
            "expand": 2,
            "chunk_size": 16,
            "use_mamba_kernels": False,
        },
        config_extra={"num_hidden_layers": 6},
    ),
    Spec(
        "qwen3-next",
        "qwen3_next",
        "Qwen3NextForCausalLM",
        {
            "layer_types": _layers("LLLF", 4),
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 32,
            "linear_value_head_dim": 32,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "shared_expert_intermediate_size": 64,
        },
    ),
    Spec(
        "qwen35",
        "qwen3_5_text",
        "Qwen3_5ForCausalLM",
        {
            "layer_types": _layers("LLLF", 4),
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 32,
            "linear_value_head_dim": 32,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
        },
    ),
    Spec(
        "lfm2",
        "lfm2",
        "Lfm2ForCausalLM",
        {
            "layer_types": _layers("CCFC", 4),
            "full_attn_idxs": [2],
            "conv_L_cache": 3,
            "block_auto_adjust_ff_dim": False,
        },
        note="short-conv layers: the converter writes a per-layer KV head count, 0 for conv",
    ),
    Spec(
        "falcon",
        "falcon",
        "FalconForCausalLM",
        {
            "vocab_size": VOCAB,
            "hidden_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_kv_heads": 2,
            "new_decoder_architecture": True,
            "max_position_embeddings": CONTEXT_LENGTH,
            "bos_token_id": 1,
            "eos_token_id": 2,
        },
        base=False,
    ),
    Spec("gpt-neox", "gpt_neox", "GPTNeoXForCausalLM", config_extra={"rotary_pct": 0.25}),
    Spec(
        "gpt2",
        "gpt2",
        "GPT2LMHeadModel",
        {
            "vocab_size": VOCAB,
            "n_embd": 64,
            "n_layer": 2,
            "n_head": 2,
            "n_positions": CONTEXT_LENGTH,
            "n_ctx": CONTEXT_LENGTH,
            "bos_token_id": 1,
            "eos_token_id": 2,
        },
        base=False,
    ),
    Spec("bloom", "bloom", "BloomForCausalLM", {"n_layer": 2, "n_head": 4}),
    Spec("stablelm", "stablelm", "StableLmForCausalLM"),
    Spec("starcoder2", "starcoder2", "Starcoder2ForCausalLM", {"sliding_window": None}),
    Spec("granite", "granite", "GraniteForCausalLM"),
    Spec("smollm3", "smollm3", "SmolLM3ForCausalLM", {"no_rope_layer_interval": 4}),
    Spec("glm4", "glm4", "Glm4ForCausalLM"),
    # phi2 without GQA, its feed-forward the 4 x n_embd the converter writes
    Spec("phi2", "phi", "PhiForCausalLM", {"intermediate_size": 512, "num_key_value_heads": 4}),
    Spec(
        "olmoe",
        "olmoe",
        "OlmoeForCausalLM",
        {"num_experts": 4, "num_experts_per_tok": 2, "num_key_value_heads": 4},
    ),
    Spec("bert", "bert", "BertModel", {"num_hidden_layers": 2, "num_key_value_heads": 4}),
)


def spec_named(name: str) -> Spec:
    for spec in SPECS:
        if spec.name == name:
            return spec
    raise KeyError(name)


# ---------------------------------------------------------------- tokenizer


def _corpus(path: Path) -> None:
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 7))) for _ in range(400)]
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(2000)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_tokenizer(folder: Path) -> Path:
    """A sentencepiece model (tokenizer.model) and a byte-level BPE (tokenizer.json), both
    under VOCAB entries, trained on random words: whatever each converter class reads."""
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "llama-bpe" / "tokenizer.json").is_file():
        return folder
    import sentencepiece as spm
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = folder / "corpus.txt"
    _corpus(corpus)
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "tokenizer"),
        vocab_size=400,
        model_type="bpe",
        character_coverage=1.0,
        byte_fallback=True,
        user_defined_symbols=["<|endoftext|>"],  # Phi-3's vocabulary loader looks it up
        bos_id=1,
        eos_id=2,
        unk_id=3,
        pad_id=0,
        minloglevel=2,
    )
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<pad>", "<s>", "</s>", "<unk>", "<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train([str(corpus)], trainer)
    bpe.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "pad_token": "<pad>",
                "unk_token": "<unk>",
                "model_max_length": CONTEXT_LENGTH,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    _llama_bpe(corpus, folder / "llama-bpe")
    (folder / "corpus.txt").unlink()
    return folder


def _llama_bpe(corpus: Path, folder: Path) -> None:
    """A byte-fallback BPE with a Metaspace pre-tokenizer and a Sequence decoder: the shape
    gguf-py's LlamaHfVocab reads (Gemma 4's converter uses it)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    folder.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    bpe.normalizer = normalizers.Replace(" ", "\u2581")
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    bpe.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{i:02X}>" for i in range(256)],
    )
    bpe.train([str(corpus)], trainer)
    bpe.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<bos>",
                "eos_token": "<eos>",
                "pad_token": "<pad>",
                "unk_token": "<unk>",
            },
            indent=2,
        ),
        encoding="utf-8",
    )


# ---------------------------------------------------------------- checkpoint


def make_checkpoint(spec: Spec, folder: Path, tokenizer: Path) -> Path:
    """Write the tiny checkpoint of `spec` into `folder` (config.json, model.safetensors,
    tokenizer files)."""
    import torch
    import transformers
    from transformers import AutoConfig

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    values = {**(BASE if spec.base else {}), **spec.overrides}
    if spec.tokenizer == "llama-bpe":  # the converter writes no padding for this vocabulary
        vocab = json.loads((tokenizer / spec.tokenizer / "tokenizer.json").read_text())
        size = len(set(vocab["model"]["vocab"]) | {t["content"] for t in vocab["added_tokens"]})
        values = {**values, "vocab_size": size, "vocab_size_per_layer_input": size}
    if spec.top is not None:
        config = AutoConfig.for_model(spec.model_type, text_config=values, **spec.top)
    else:
        config = AutoConfig.for_model(spec.model_type, **values)
    config.architectures = [spec.architecture]
    torch.manual_seed(0)
    model_class = getattr(transformers, spec.architecture)
    model = model_class(config)
    model = model.to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    if spec.renames:
        _rename_tensors(folder / "model.safetensors", spec.renames)
    if spec.config_extra:
        path = folder / "config.json"
        saved = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(
            json.dumps({**saved, **spec.config_extra}, indent=2) + "\n", encoding="utf-8"
        )
    source = tokenizer / spec.tokenizer if spec.tokenizer != "bpe" else tokenizer
    for name in ("tokenizer.model", "tokenizer.json", "tokenizer_config.json"):
        if (source / name).is_file():
            shutil.copy(source / name, folder / name)
    return folder


def _rename_tensors(path: Path, renames: tuple[tuple[str, str], ...]) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    renamed = {}
    for name, tensor in tensors.items():
        for old, new in renames:
            name = name.replace(old, new)
        renamed[name] = tensor
    save_file(renamed, str(path), metadata={"format": "pt"})
