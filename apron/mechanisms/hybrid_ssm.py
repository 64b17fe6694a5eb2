"""Hybrid attention + state space (Jamba, Nemotron-H, Zamba2, Granite-4-H, ...).

KV applies only to the attention layers; each Mamba/Mamba2 layer adds a fixed per-sequence state
(apron.ssm) that does not grow with context and is multiplied by the batch size, not the context.
The naive figure is what an engine that gives every layer a KV cache would allocate."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.layers import BOTH, CHUNKED, CONV, FULL, LINEAR, MAMBA, SLIDING, layout
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
from apron.terminal import shown

RULE_KINDS = {
    MAMBA: ("mamba1", "mamba2"),
    BOTH: ("mamba1", "mamba2"),
    # transformers 5 writes "linear_attention" for every non-attention mixer (Mamba included)
    LINEAR: ("gated_delta_net", "linear_attention", "mamba1", "mamba2"),
    CONV: ("short_conv",),
}


def state_dtypes(model: ModelConfig, request: Request):  # -> apron.state_shapes.StateDtypes
    """Conv tensors in the model dtype; the ssm tensor in --mamba-ssm-cache-dtype as the engine
    resolves it (request.ssm_dtype), else the model dtype too."""
    from apron.state_shapes import StateDtypes

    dtype = model.model_dtype()
    if dtype in ("float32", "float"):
        # vLLM _resolve_auto_dtype downcasts a float32 config to the platform's preferred
        # dtype (bfloat16, or float16 where bf16 is unsupported): 2 bytes either way
        dtype = "bfloat16"
    if request.ssm_dtype:
        return StateDtypes(
            dtype,
            request.ssm_dtype,
            f"ssm tensor in {request.ssm_dtype}: {request.ssm_dtype_source}",
        )
    return StateDtypes(
        dtype, dtype, "every tensor in the model dtype (--mamba-ssm-cache-dtype auto)"
    )


def _state(
    model: ModelConfig,
    request: Request,
    kinds: tuple[str, ...],
    lines: list[str],
    reasons: list[str],
    missing: list[str],
    notes: list[str],
) -> int | None:
    """Fixed per-sequence state of every state layer, by the model class's vLLM rule."""
    from apron.state_shapes import layer_state as rule_state
    from apron.state_shapes import rule_for

    rule = rule_for(model)
    total = 0
    counts = {k: sum(1 for x in kinds if x == k) for k in RULE_KINDS}
    for kind, count in counts.items():
        if not count:
            continue
        if rule is not None and rule.calculator in RULE_KINDS[kind]:
            state = rule_state(model, rule, state_dtypes(model, request), request.tp)
            lines.extend(f"{kind} state: {line}" for line in state.arithmetic)
            if state.bytes is None:
                reasons.extend(state.unknown)
                missing.extend(state.missing)
                return None
            lines.append(
                f"{kind} state per sequence = {count} layers x {n(state.bytes)} B = "
                f"{n(count * state.bytes)} B (fixed: does not grow with context)"
            )
            total += count * state.bytes
        elif kind in (MAMBA, BOTH) and request.tp > 1:
            reasons.append(
                f"state per GPU at tp {request.tp}: no vLLM state rule for model_type "
                f"{shown(repr(model.text_model_type or model.model_type))}, so how it splits is unknown"
            )
            return None
        elif kind in (MAMBA, BOTH):
            generic = layer_state(model, recurrent=False)
            lines += [
                f"{generic.variant} state per layer: {line}" if i == 0 else f"  {line}"
                for i, line in enumerate(generic.arithmetic)
            ]
            if generic.bytes is None:
                reasons.extend(generic.unknown)
                missing.extend(generic.missing)
                return None
            notes.append(
                f"no vLLM state rule for model_type {shown(repr(model.text_model_type or model.model_type))}:"
                " the generic Mamba field reading was used"
            )
            lines.append(
                f"state per sequence = {count} Mamba layers x {n(generic.bytes)} B = "
                f"{n(count * generic.bytes)} B (fixed: does not grow with context)"
            )
            total += count * generic.bytes
        else:
            reasons.append(
                f"{count} layers of kind {kind}: apron has no vLLM state rule for model_type "
                f"{shown(repr(model.text_model_type or model.model_type))}"
            )
            return None
    notes.append(
        "vLLM pads each state page to the attention page size of the hybrid's KV groups "
        "(attention block size chosen by the backend): the state figures are the tensors "
        "before that padding"
    )
    return total


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
    attention = [i for i, k in enumerate(kinds) if k in (FULL, SLIDING, CHUNKED, BOTH)]
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
    if mamba or other_state:
        state_total = _state(model, request, kinds, lines, reasons, missing, notes)
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
