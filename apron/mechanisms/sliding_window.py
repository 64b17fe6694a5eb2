"""Sliding-window attention with per-layer types (layer_types, sliding_window_pattern, ...).

For G global and S windowed layers of k bytes per token each, at context c with window w:
    window-aware bytes(c) = G x k x c + S x k x min(c, w)
    naive bytes(c)        = (G + S) x k x c   (an engine without window support)
A sliding_window at or above the model's maximum context never binds: the window is inert."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.layers import CHUNKED, FULL, NONE, SHARED, SLIDING, kind_geometry, kind_heads, layout
from apron.mechanisms.base import (
    LayerWidths,
    layer_widths,
    n,
    result,
)
from apron.mechanisms.full_attention import flavour
from apron.results import HeadCount, MechanismResult, Request
from apron.terminal import shown

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

    if model.get("use_sliding_window") is False:
        return inert(
            "use_sliding_window is false: the window is switched off, every layer keeps every token"
        )
    structure = layout(model)
    window_key = (
        "sliding_window_size"
        if model.present("swa_num_key_value_heads") and model.present("sliding_window_size")
        else "sliding_window"
    )
    window = model.get(window_key)
    chunk = model.get("attention_chunk_size")
    has_chunked = structure is not None and CHUNKED in structure.kinds
    if has_chunked and not (is_int(chunk) and chunk > 0):
        return partial(
            "chunked-local layers but attention_chunk_size is not a positive integer",
            ("attention_chunk_size",),
        )
    windowed_kinds = structure is not None and SLIDING in structure.kinds
    if window is None and (windowed_kinds or not has_chunked):
        return partial(
            "per-layer types mark windowed layers but sliding_window is absent or null",
            ("sliding_window",),
        )
    if window is not None and (not is_int(window) or window <= 0):
        return partial(f"{window_key} = {shown(repr(window))} is not a positive integer")
    max_ctx = model.integer("max_position_embeddings")
    if not has_chunked and max_ctx is not None and window >= max_ctx:
        return inert(
            f"{window_key} = {n(window)} >= the maximum context "
            f"(max_position_embeddings = {n(max_ctx)}): the window never binds"
        )
    if structure is None:
        kinds = (SLIDING,) * layers
        source = (
            f"{window_key} = {n(window)} and no per-layer list: vLLM windows every layer "
            "(vllm/engine/arg_utils.py sets CacheConfig.sliding_window for a model that is not "
            "interleaved)"
        )
    elif structure.unknown:
        return partial("; ".join(structure.unknown), structure.missing)
    else:
        kinds, source = structure.kinds, structure.source
    geometry = kind_geometry(model)
    if isinstance(geometry, str):
        return partial(geometry)
    if geometry is not None:
        if not set(kinds) <= {*geometry, SHARED, NONE}:
            return partial("per-kind head geometry for a layer kind it does not name")
        per_layer = heads.per_layer if len(heads.per_layer) == layers else None
        counts = per_layer or kind_heads(geometry, kinds)
        widths = tuple(
            c * (geometry[k].k + geometry[k].v) * b if k in geometry and k != SHARED else 0
            for c, k in zip(counts, kinds, strict=True)
        )
        lines[:] = [
            _kind_line(name, geometry[kind], counts, kinds, kind, b)
            for name, kind in (("windowed", SLIDING), ("full", FULL))
            if kind in kinds
        ]
    else:
        widths = tuple(0 if k in (SHARED, NONE) else w for w, k in zip(widths, kinds, strict=True))
    if SHARED in kinds:
        lines.append(
            f"{kinds.count(SHARED)} layers reuse an earlier layer's KV (num_kv_shared_layers): "
            "0 B of their own"
        )
    naive_per_token = sum(widths)
    naive_at = naive_per_token * c if c is not None else None
    lines.append(f"per token while nothing has left the window = {n(naive_per_token)} B")
    g_bytes = sum(w for w, k in zip(widths, kinds, strict=True) if k == FULL)
    s_bytes = sum(w for w, k in zip(widths, kinds, strict=True) if k == SLIDING)
    ch_bytes = sum(w for w, k in zip(widths, kinds, strict=True) if k == CHUNKED)
    counts = {k: kinds.count(k) for k in (FULL, SLIDING, CHUNKED, SHARED)}
    notes = [
        f"layout from {source}: {counts[FULL]} global, {counts[SLIDING]} windowed"
        + (f", {counts[CHUNKED]} chunked-local" if counts[CHUNKED] else "")
        + (f", {counts[SHARED]} KV-shared" if counts[SHARED] else "")
        + " layers"
        + (f", window {n(window)} tokens" if window is not None and counts[SLIDING] else "")
        + (f", chunk {n(chunk)} tokens" if counts[CHUNKED] else "")
    ]
    if max_ctx is None:
        notes.append("max_position_embeddings absent: cannot tell whether the window is inert")
    notes.append(
        "vLLM's admission cap per sequence is min(window - 1 + max_num_batched_tokens, "
        "max_model_len) tokens + 1 block for a windowed layer (chunk + max_num_batched_tokens "
        "for a chunked one): the steady state shown is the window itself"
    )
    title_now = (
        title if not counts[CHUNKED] else f"chunked local attention ({flavour(heads, model)})"
    )
    if c is None:
        return result(
            NAME,
            title_now,
            per_token=naive_per_token,
            at_context=None,
            naive=None,
            ratio=None,
            arithmetic=tuple(lines),
            notes=tuple(notes),
        )
    aware = g_bytes * c
    parts = [f"{n(g_bytes)} x {n(c)}"]
    if s_bytes:
        aware += s_bytes * min(c, window)
        parts.append(f"{n(s_bytes)} x min({n(c)}, {n(window)})")
    if ch_bytes:
        aware += ch_bytes * min(c, chunk)
        parts.append(f"{n(ch_bytes)} x min({n(c)}, {n(chunk)})")
    lines.append(f"window-aware at context = {' + '.join(parts)} = {n(aware)} B")
    ratio = naive_at / aware if aware else None
    if ratio is not None:
        lines.append(f"naive / window-aware = {n(naive_at)} / {n(aware)} = {ratio:.2f}x")
    bounds = [w for w, used in ((window, s_bytes), (chunk, ch_bytes)) if used]
    bound = min(bounds) if bounds else None
    if bound is not None and c <= bound:
        notes.append(f"at {n(c)} tokens the window ({n(bound)}) has not filled: both figures equal")
    return result(
        NAME,
        title_now,
        per_token=naive_per_token,
        at_context=aware,
        naive=naive_at,
        ratio=ratio,
        arithmetic=tuple(lines),
        notes=tuple(notes),
    )


def _kind_line(name: str, geometry, counts, kinds, kind: str, dtype_bytes: int) -> str:
    here = sorted({c for c, k in zip(counts, kinds, strict=True) if k == kind})
    return (
        f"{name} layers: {geometry.how}; {', '.join(str(c) for c in here)} KV heads here x "
        f"({geometry.k} + {geometry.v}) x {dtype_bytes} B"
    )
