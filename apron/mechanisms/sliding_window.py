"""Sliding-window attention with per-layer types (layer_types, sliding_window_pattern, ...).

For G global and S windowed layers of k bytes per token each, at context c with window w:
    window-aware bytes(c) = G x k x c + S x k x min(c, w)
    naive bytes(c)        = (G + S) x k x c   (an engine without window support)
A sliding_window at or above the model's maximum context never binds: the window is inert."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.layers import FULL, SLIDING, layout
from apron.mechanisms.base import (
    LayerWidths,
    layer_widths,
    n,
    result,
)
from apron.mechanisms.full_attention import flavour
from apron.results import HeadCount, MechanismResult, Request

NAME = "sliding_window"
TITLE = "sliding-window attention"


def compute(model: ModelConfig, heads: HeadCount, request: Request) -> MechanismResult:
    title = f"{TITLE} ({flavour(heads, model)})"
    found = layer_widths(model, heads, request, NAME, title)
    if not isinstance(found, LayerWidths):
        return found
    layers, dims, counts, widths = found.layers, found.dims, found.counts, found.widths
    b = request.kv_dtype_bytes
    naive_per_token = sum(widths)
    uniform = len(set(widths)) == 1
    lines = [f"KV heads: {heads.how}", f"head dims: {dims.how}"]
    if uniform:
        lines.append(
            f"per layer per token k = {counts[0]} KV heads x ({dims.k} + {dims.v}) x {b} B "
            f"({request.kv_dtype}) = {n(widths[0])} B"
        )
        lines.append(
            f"naive per token = {layers} layers x {n(widths[0])} B = {n(naive_per_token)} B"
        )
    else:
        lines.append(f"naive per token = sum over {layers} layers = {n(naive_per_token)} B")
    c = request.context
    naive_at = naive_per_token * c if c is not None else None
    if c is not None:
        lines.append(f"naive at context = {n(naive_per_token)} B x {n(c)} = {n(naive_at)} B")

    def partial(reason: str, miss: tuple[str, ...] = ()) -> MechanismResult:
        return result(
            NAME,
            title,
            per_token=naive_per_token,
            at_context=None,
            naive=naive_at,
            ratio=None,
            unknown=(f"window-aware figure unknown: {reason}",),
            missing=miss,
            arithmetic=tuple(lines),
        )

    def inert(why: str) -> MechanismResult:
        lines.append(f"window-aware = naive ({why})")
        return result(
            NAME,
            f"{title}, window inert",
            per_token=naive_per_token,
            at_context=naive_at,
            naive=naive_at,
            ratio=1.0 if c is not None else None,
            arithmetic=tuple(lines),
            notes=(why,),
        )

    if (
        model.get("global_head_dim") is not None
        or model.get("num_global_key_value_heads") is not None
    ):
        return partial(
            "global and windowed layers have different head geometry "
            "(global_head_dim / num_global_key_value_heads): not an implemented mechanism"
        )
    if (model.integer("num_kv_shared_layers") or 0) > 0:
        return partial(
            "num_kv_shared_layers: layers that reuse another layer's KV are not an "
            "implemented mechanism"
        )
    if model.get("use_sliding_window") is False:
        return inert(
            "use_sliding_window is false: the window is switched off, every layer keeps every token"
        )
    window = model.get("sliding_window")
    structure = layout(model)
    if window is None:
        return partial(
            "per-layer types mark windowed layers but sliding_window is absent or null",
            ("sliding_window",),
        )
    if not is_int(window) or window <= 0:
        return partial(f"sliding_window = {window!r} is not a positive integer")
    max_ctx = model.integer("max_position_embeddings")
    if max_ctx is not None and window >= max_ctx:
        return inert(
            f"sliding_window = {n(window)} >= the maximum context "
            f"(max_position_embeddings = {n(max_ctx)}): the window never binds"
        )
    if structure is None:
        return partial(
            f"the config sets sliding_window = {n(window)} but states no per-layer layout "
            "(layer_types, sliding_window_pattern, use_sliding_window + "
            "max_window_layers), so which layers are windowed is not in the config",
            ("layer_types",),
        )
    if structure.unknown:
        return partial("; ".join(structure.unknown), structure.missing)
    kinds = structure.kinds
    globals_ = [w for w, k in zip(widths, kinds, strict=True) if k == FULL]
    windowed = [w for w, k in zip(widths, kinds, strict=True) if k == SLIDING]
    g_bytes, s_bytes = sum(globals_), sum(windowed)
    notes = [
        f"layout from {structure.source}: {len(globals_)} global, {len(windowed)} windowed "
        f"layers, window {n(window)} tokens"
    ]
    if max_ctx is None:
        notes.append("max_position_embeddings absent: cannot tell whether the window is inert")
    if c is None:
        return result(
            NAME,
            title,
            per_token=naive_per_token,
            at_context=None,
            naive=None,
            ratio=None,
            arithmetic=tuple(lines),
            notes=tuple(notes),
        )
    aware = g_bytes * c + s_bytes * min(c, window)
    if uniform:
        lines.append(
            f"window-aware at context = G x k x c + S x k x min(c, w) = {len(globals_)} x "
            f"{n(widths[0])} x {n(c)} + {len(windowed)} x {n(widths[0])} x min({n(c)}, "
            f"{n(window)}) = {n(aware)} B"
        )
    else:
        lines.append(
            f"window-aware at context = {n(g_bytes)} x {n(c)} + {n(s_bytes)} x "
            f"min({n(c)}, {n(window)}) = {n(aware)} B"
        )
    ratio = naive_at / aware if aware else None
    if ratio is not None:
        lines.append(f"naive / window-aware = {n(naive_at)} / {n(aware)} = {ratio:.2f}x")
    if c <= window:
        notes.append(
            f"at {n(c)} tokens the window ({n(window)}) has not filled: both figures equal"
        )
    return result(
        NAME,
        title,
        per_token=naive_per_token,
        at_context=aware,
        naive=naive_at,
        ratio=ratio,
        arithmetic=tuple(lines),
        notes=tuple(notes),
    )
