"""Encoder-decoder (Whisper-style): decoder self-attention KV grows with the generated tokens;
cross-attention KV over the encoder output is fixed per request.

vLLM's decoder layers hold a FullAttentionSpec (self-attention) and a CrossAttentionSpec
(cross-attention) each; the encoder keeps nothing. Per decoder layer and token both cache
kv_heads x (head_dim + head_dim) x dtype bytes, with kv_heads = decoder_attention_heads and
head_dim = d_model / decoder_attention_heads. The cross-attention cache holds the encoder's
output length, max_source_positions (1,500 frames for Whisper), for every request."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.mechanisms.base import n, result, unknown_result
from apron.results import HeadCount, MechanismResult, Request

NAME = "encoder_decoder"
TITLE = "encoder-decoder: decoder self-attention + cross-attention"


def compute(model: ModelConfig, heads: HeadCount, request: Request) -> MechanismResult:
    layers = model.integer("decoder_layers")
    attn_heads = model.integer("decoder_attention_heads")
    d_model = model.integer("d_model")
    source = model.integer("max_source_positions")
    missing = tuple(
        k
        for k, v in (
            ("decoder_layers", layers),
            ("decoder_attention_heads", attn_heads),
            ("d_model", d_model),
            ("max_source_positions", source),
        )
        if v is None
    )
    if missing:
        return unknown_result(
            NAME,
            TITLE,
            (f"encoder-decoder cache needs {', '.join(missing)}",),
            missing,
            state=None,
        )
    assert layers and attn_heads and d_model and source
    if d_model % attn_heads:
        return unknown_result(
            NAME,
            TITLE,
            (f"d_model {d_model} is not a multiple of decoder_attention_heads {attn_heads}",),
            state=None,
        )
    head = d_model // attn_heads
    b = request.kv_dtype_bytes
    width = attn_heads * (head + head) * b
    per_token = layers * width
    cross = per_token * source
    lines = [
        f"head_dim = d_model / decoder_attention_heads = {d_model} / {attn_heads} = {head}",
        f"self-attention per token = decoder_layers {layers} x {attn_heads} KV heads x "
        f"({head} + {head}) x {b} B = {n(per_token)} B",
        f"cross-attention per request = {n(per_token)} B x max_source_positions {n(source)} = "
        f"{n(cross)} B (fixed: the encoder output length)",
    ]
    at_context = None
    if request.context is not None:
        at_context = per_token * request.context
        lines.append(
            f"self-attention at context = {n(per_token)} x {n(request.context)} = {n(at_context)} B"
        )
    return result(
        NAME,
        TITLE,
        per_token=per_token,
        at_context=at_context,
        state=cross,
        arithmetic=tuple(lines),
        notes=(
            "state per sequence is the cross-attention KV; vLLM sizes that pool by "
            "max_num_encoder_input_tokens (the scheduler's encoder budget)",
            "the encoder's own attention keeps no cache",
        ),
    )
