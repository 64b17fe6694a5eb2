"""MLA latent cache (DeepSeek-style): one latent of kv_lora_rank + qk_rope_head_dim per layer per
token, shared by all heads (no head factor). DeepSeek sparse attention (index_topk in the config,
DeepSeek-V3.2 / GLM-5) adds an indexer cache per layer: index_head_dim fp8 values plus one fp32
scale per 128 of them (vLLM deepseek_v2.py DeepseekV32IndexerCache, uint8).

Selected only when an engine's extracted rule says MLA (vLLM's model_type list and gate, or
SGLang's architecture set); an MLA-shaped config no engine lists is served as full attention."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.layers import layout
from apron.mechanisms.base import n, num_layers, result, unknown_result
from apron.results import HeadCount, MechanismResult, Request

NAME = "mla_latent"
TITLE = "MLA latent cache"
INDEX_QUANT_BLOCK = 128  # vLLM deepseek_v2.py Indexer.quant_block_size


def compute(model: ModelConfig, heads: HeadCount, request: Request) -> MechanismResult:
    if model.present("compress_ratios"):
        return unknown_result(
            NAME,
            f"{TITLE} with compressed attention",
            (
                "the config has compress_ratios (DeepSeek-V4-style compressed sparse attention): "
                "per-layer compression is not an implemented mechanism",
            ),
            state=None,
        )
    structure = layout(model)
    if structure is not None and (structure.has_state or structure.unknown):
        return unknown_result(
            NAME,
            f"{TITLE} in a hybrid stack",
            (
                f"per-layer types ({structure.source}) mix MLA with other layer kinds; MLA combined "
                "with linear-attention or state-space layers is not an implemented mechanism",
            ),
            state=None,
        )
    if model.get("linear_attn_config") is not None:
        return unknown_result(
            NAME,
            f"{TITLE} in a hybrid stack",
            (
                "linear_attn_config: MLA layers mixed with linear-attention layers are not an "
                "implemented mechanism",
            ),
            state=None,
        )
    layers, layers_key = num_layers(model)
    rank, rope = model.integer("kv_lora_rank"), model.integer("qk_rope_head_dim")
    missing = tuple(
        k
        for k, v in ((layers_key, layers), ("kv_lora_rank", rank), ("qk_rope_head_dim", rope))
        if v is None
    )
    if missing:
        return unknown_result(
            NAME, TITLE, (f"MLA latent needs {', '.join(missing)}",), missing, state=0
        )
    assert layers is not None and rank is not None and rope is not None
    b = request.kv_dtype_bytes
    per_token = layers * (rank + rope) * b
    lines = [
        f"per token = {layers_key} x (kv_lora_rank + qk_rope_head_dim) x {b} B "
        f"({request.kv_dtype}) = {layers} x ({rank} + {rope}) x {b} = {n(per_token)} B"
    ]
    if model.present("index_topk"):
        index_dim = model.integer("index_head_dim")
        if index_dim is None:
            return unknown_result(
                NAME,
                f"{TITLE} + sparse-attention indexer",
                (
                    "index_topk marks DeepSeek sparse attention (vLLM deepseek_v2.py is_v32), "
                    "whose indexer cache needs index_head_dim",
                ),
                ("index_head_dim",),
                state=0,
            )
        index_bytes = index_dim + index_dim // INDEX_QUANT_BLOCK * 4
        lines.append(
            f"indexer cache per layer per token = index_head_dim + index_head_dim / "
            f"{INDEX_QUANT_BLOCK} x 4 = {index_dim} + {index_dim // INDEX_QUANT_BLOCK * 4} = "
            f"{index_bytes} B (uint8: fp8 values + fp32 scales, whatever the KV dtype)"
        )
        from apron.indexer_layers import indexer_layers

        indexed = indexer_layers(model, layers)
        if indexed.count is None:
            return unknown_result(
                NAME,
                f"{TITLE} + sparse-attention indexer",
                (f"indexer layers: {indexed.how}",),
                state=0,
            )
        lines.append(indexed.how)
        latent = per_token
        per_token = latent + indexed.count * index_bytes
        lines.append(
            f"per token = latent {n(latent)} B + {indexed.count} x {index_bytes} B indexer = "
            f"{n(per_token)} B"
        )
    at_context = None
    if request.context is not None:
        at_context = per_token * request.context
        lines.append(
            f"at context = {n(per_token)} B x {n(request.context)} tokens = {n(at_context)} B"
        )
    notes = [
        "one latent per layer per token, shared by all heads: the KV-head count does not enter"
    ]
    nextn = model.integer("num_nextn_predict_layers")
    if nextn:
        notes.append(
            f"num_nextn_predict_layers = {nextn}: an MTP draft layer adds its own cache "
            "when speculative decoding is on (not counted)"
        )
    if request.kv_dtype == "fp8":
        notes.append(
            "fp8 MLA caches are backend-specific (some pack scales and a bf16 rope part "
            "per token); the fp8 figure is a lower bound"
        )
    return result(
        NAME,
        TITLE,
        per_token=per_token,
        at_context=at_context,
        arithmetic=tuple(lines),
        notes=tuple(notes),
    )
