"""Hybrid attention + state space (Jamba, Nemotron-H, Zamba2, Granite-4-H, ...).

KV applies only to the attention layers; each Mamba/Mamba2 layer adds a fixed per-sequence state
(apron.ssm) that does not grow with context and is multiplied by the batch size, not the context.
The naive figure is what an engine that gives every layer a KV cache would allocate."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.layers import BOTH, CONV, FULL, LINEAR, MAMBA, SLIDING, layout
from apron.mechanisms.base import (
    head_dims,
    missing_inputs,
    n,
    num_layers,
    per_layer_heads,
    result,
    unknown_result,
)
from apron.results import HeadCount, MechanismResult, Request
from apron.ssm import layer_state

NAME = "hybrid_ssm"
TITLE = "hybrid attention + state space"


def compute(model: ModelConfig, heads: HeadCount, request: Request) -> MechanismResult:
    structure = layout(model)
    layers, layers_key = num_layers(model)
    if structure is None:
        return unknown_result(
            NAME,
            TITLE,
            (
                "the config states no per-layer block types (layers_block_type, "
                "hybrid_override_pattern, layer_types, attn_layer_period/attn_layer_offset), so which "
                "layers hold KV and which hold state is not in the config",
            ),
            ("layers_block_type",),
        )
    if structure.unknown:
        return unknown_result(NAME, TITLE, structure.unknown, structure.missing)
    kinds = structure.kinds
    layers = len(kinds)
    attention = [i for i, k in enumerate(kinds) if k in (FULL, SLIDING, BOTH)]
    mamba = [i for i, k in enumerate(kinds) if k in (MAMBA, BOTH)]
    other_state = [k for k in kinds if k in (LINEAR, CONV)]
    lines = [
        f"layout from {structure.source}: {len(attention)} attention layers, {len(mamba)} "
        f"Mamba layers, {len(other_state)} other state layers, of {layers}"
    ]
    reasons: list[str] = []
    missing: list[str] = []
    notes: list[str] = []
    b = request.kv_dtype_bytes
    c = request.context
    per_token = at_context = naive_at = None
    ratio = None
    if not attention:
        per_token, at_context, naive_at = 0, 0, None
    else:
        dims = head_dims(model)
        more_reasons, more_missing = missing_inputs(dims, heads)
        reasons += more_reasons
        missing += more_missing
        counts = None
        if not reasons:
            counts, why = per_layer_heads(heads, layers)
            if counts is None:
                reasons.append(why)
        if counts is not None and dims.k is not None and dims.v is not None:
            widths = [h * (dims.k + dims.v) * b for h in counts]
            per_token = sum(widths[i] for i in attention)
            lines += [f"KV heads: {heads.how}", f"head dims: {dims.how}"]
            if len(set(widths)) == 1:
                lines.append(
                    f"KV per token = {len(attention)} attention layers x {counts[0]} KV heads"
                    f" x ({dims.k} + {dims.v}) x {b} B ({request.kv_dtype}) = "
                    f"{n(per_token)} B"
                )
            else:
                lines.append(
                    f"KV per token = sum over {len(attention)} attention layers = {n(per_token)} B"
                )
            windowed = [i for i in attention if kinds[i] == SLIDING]
            window = model.get("sliding_window")
            if windowed and not (is_int(window) and window > 0):
                reasons.append("windowed attention layers but no usable sliding_window")
                missing.append("sliding_window")
            elif c is not None:
                full_bytes = sum(widths[i] for i in attention if kinds[i] != SLIDING)
                win_bytes = sum(widths[i] for i in windowed)
                at_context = full_bytes * c + (win_bytes * min(c, window) if windowed else 0)
                naive_at = sum(widths) * c
                lines.append(
                    f"KV at context = {n(per_token)} B x {n(c)} = {n(at_context)} B"
                    if not windowed
                    else f"KV at context = {n(full_bytes)} x {n(c)} + {n(win_bytes)} x "
                    f"min({n(c)}, {n(window)}) = {n(at_context)} B"
                )
                lines.append(
                    f"naive (KV in all {layers} layers) = {n(sum(widths))} B x {n(c)} = "
                    f"{n(naive_at)} B"
                )
                if at_context:
                    ratio = naive_at / at_context
                    lines.append(f"naive / hybrid-aware = {ratio:.2f}x")
            if window is not None and not windowed and is_int(window):
                notes.append(
                    f"sliding_window = {window} but no layer is marked windowed: attention "
                    "layers counted as full attention"
                )
    state_total: int | None = 0
    if mamba:
        state = layer_state(model, recurrent=False)
        lines += [
            f"{state.variant} state per layer: {line}" if i == 0 else f"  {line}"
            for i, line in enumerate(state.arithmetic)
        ]
        if state.bytes is None:
            reasons.extend(state.unknown)
            missing.extend(state.missing)
            state_total = None
        else:
            state_total = state.bytes * len(mamba)
            lines.append(
                f"state per sequence = {len(mamba)} Mamba layers x {n(state.bytes)} B = "
                f"{n(state_total)} B (fixed: does not grow with context)"
            )
    if other_state:
        reasons.append(
            f"{len(other_state)} layers of kind {', '.join(sorted(set(other_state)))}: "
            "their recurrent state formula is not implemented"
        )
        state_total = None
    return result(
        NAME,
        TITLE,
        per_token=per_token,
        at_context=at_context,
        naive=naive_at,
        ratio=ratio,
        state=state_total,
        unknown=tuple(reasons),
        missing=tuple(missing),
        arithmetic=tuple(lines),
        notes=tuple(notes),
    )
