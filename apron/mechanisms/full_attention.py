"""Full attention (MHA / GQA / MQA): every layer caches K and V for every token.

bytes per token = sum over layers of kv_heads x (k_head_dim + v_head_dim) x dtype_bytes."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.mechanisms.base import (
    LayerWidths,
    layer_widths,
    n,
    result,
)
from apron.results import HeadCount, MechanismResult, Request

NAME = "full_attention"
TITLE = "full attention"


def flavour(heads: HeadCount, model: ModelConfig) -> str:
    attention = model.integer("num_attention_heads")
    if heads.per_layer:
        return "per-layer KV heads"
    if heads.count is None or attention is None:
        return "MHA/GQA/MQA"
    if heads.count == 1:
        return "MQA, 1 KV head"
    if heads.count == attention:
        return f"MHA, {heads.count} KV heads"
    return f"GQA, {heads.count} KV heads for {attention} query heads"


def compute(model: ModelConfig, heads: HeadCount, request: Request) -> MechanismResult:
    title = f"{TITLE} ({flavour(heads, model)})"
    found = layer_widths(model, heads, request, NAME, title)
    if not isinstance(found, LayerWidths):
        return found
    layers, dims, counts = found.layers, found.dims, found.counts
    b = request.kv_dtype_bytes
    per_token = sum(found.widths)
    lines = [f"KV heads: {heads.how}", f"head dims: {dims.how}"]
    if heads.per_layer:
        lines.append(
            f"per token = sum over {layers} layers of kv_heads_l x ({dims.k} + {dims.v}) "
            f"x {b} B = {sum(counts):,} KV heads in total x {dims.k + dims.v} x {b} = "
            f"{n(per_token)} B"
        )
    else:
        lines.append(
            f"per token = {layers} layers x {heads.count} KV heads x ({dims.k} + {dims.v})"
            f" x {b} B ({request.kv_dtype}) = {n(per_token)} B"
        )
    at_context = None
    if request.context is not None:
        at_context = per_token * request.context
        lines.append(
            f"at context = {n(per_token)} B x {n(request.context)} tokens = {n(at_context)} B"
        )
    notes = ()
    if request.kv_dtype == "fp8":
        notes = ("fp8 KV: 1 B per element; scales and packing depend on the attention backend",)
    return result(
        NAME,
        title,
        per_token=per_token,
        at_context=at_context,
        arithmetic=tuple(lines),
        notes=notes,
    )
