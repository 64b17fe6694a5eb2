"""Each layer's cache as an engine allocates it, for one GPU: full-attention, windowed or
chunked KV (bytes per token), or a fixed state (bytes per sequence); layers that reuse another's
KV, or keep none, are left out.

Built from the same config readings as the mechanism figures (apron.layers for the per-layer
layout, apron.mechanisms.base for the widths), and checked against them: the per-layer KV must add
up to the mechanism's bytes per token and the per-layer state to its state per sequence, or the
layers are unknown (a reading the two would disagree on)."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.layers import (
    BOTH,
    CHUNKED,
    CONV,
    FULL,
    LINEAR,
    MAMBA,
    NONE,
    SHARED,
    SLIDING,
    kind_geometry,
    layout,
)
from apron.mechanisms import full_attention, hybrid_ssm, mla_latent, recurrent, sliding_window
from apron.mechanisms.base import LayerWidths, layer_widths, num_layers
from apron.record import Record
from apron.results import HeadCount, Request

ATTENTION, WINDOWED, CHUNK, STATE = "full", "sliding", "chunked", "mamba"


class Layer(Record):
    """One layer's cache: kind ATTENTION / WINDOWED / CHUNK (KV per token) or STATE (per sequence).

    window: tokens of the window or chunk (0 for full attention and state); geometry tells two
    layers of one kind but different shapes apart."""

    kind: str
    per_token_bytes: int
    state_bytes: int
    window: int
    geometry: tuple
    layer: int = 0  # the model layer it belongs to (pipeline stages split by it)


class Layers(Record):
    """The layers of one model on one GPU, or why they are not known."""

    layers: tuple[Layer, ...]
    source: str
    unknown: str

    def of(self, *kinds: str) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if layer.kind in kinds)


def _unknown(why: str) -> Layers:
    return Layers((), "", why)


def _attention(widths: LayerWidths) -> list[Layer]:
    return [
        Layer(
            kind=ATTENTION,
            per_token_bytes=w,
            state_bytes=0,
            window=0,
            geometry=(c, widths.dims.k, widths.dims.v),
            layer=i,
        )
        for i, (w, c) in enumerate(zip(widths.widths, widths.counts, strict=True))
        if w
    ]


def _window(model: ModelConfig) -> tuple[str, object]:
    key = (
        "sliding_window_size"
        if model.present("swa_num_key_value_heads") and model.present("sliding_window_size")
        else "sliding_window"
    )
    return key, model.get(key)


def _windowed(model: ModelConfig, heads: HeadCount, request: Request, title: str) -> Layers:
    """The layers of a sliding-window / chunked / KV-sharing model (sliding_window.compute's
    reading, layer by layer)."""
    found = layer_widths(model, heads, request, sliding_window.NAME, title)
    if not isinstance(found, LayerWidths):
        return _unknown("; ".join(found.unknown))
    if model.get("use_sliding_window") is False:
        return Layers(tuple(_attention(found)), "use_sliding_window is false", "")
    structure = layout(model)
    window_key, window = _window(model)
    chunk = model.get("attention_chunk_size")
    max_ctx = model.integer("max_position_embeddings")
    has_chunked = structure is not None and CHUNKED in structure.kinds
    if window is not None and not (is_int(window) and window > 0):
        return _unknown(f"{window_key} = {window!r} is not a positive integer")
    if has_chunked and not (is_int(chunk) and chunk > 0):
        return _unknown("chunked-local layers but attention_chunk_size is not a positive integer")
    if not has_chunked and window is not None and max_ctx is not None and window >= max_ctx:
        return Layers(tuple(_attention(found)), f"{window_key} >= the maximum context", "")
    if structure is None:
        if window is None:
            return _unknown("sliding_window is absent or null")
        kinds = (SLIDING,) * found.layers
        source = f"{window_key} = {window:,} on every layer"
    elif structure.unknown:
        return _unknown("; ".join(structure.unknown))
    else:
        kinds, source = structure.kinds, structure.source
        if SLIDING in kinds and window is None:
            return _unknown("windowed layers but sliding_window is absent or null")
    per_kind = kind_geometry(model)  # as sliding_window.compute reads it
    if isinstance(per_kind, str):
        return _unknown(per_kind)
    if per_kind is not None and not set(kinds) <= {*per_kind, SHARED, NONE}:
        return _unknown("per-kind head geometry for a layer kind it does not name")
    per_layer = heads.per_layer if len(heads.per_layer) == len(kinds) else None
    layers = []
    for index, (kind, width, count) in enumerate(
        zip(kinds, found.widths, found.counts, strict=True)
    ):
        if kind in (SHARED, NONE):
            continue
        geometry = (count, found.dims.k, found.dims.v)
        if per_kind is not None:
            own = per_kind[kind]
            count = per_layer[index] if per_layer else own.kv_heads
            width = count * (own.k + own.v) * request.kv_dtype_bytes
            geometry = (count, own.k, own.v)
        if not width:
            continue
        if kind == SLIDING:
            layers.append(
                Layer(
                    kind=WINDOWED,
                    per_token_bytes=width,
                    state_bytes=0,
                    window=int(window),
                    geometry=geometry,
                    layer=index,
                )
            )
        elif kind == CHUNKED:
            layers.append(
                Layer(
                    kind=CHUNK,
                    per_token_bytes=width,
                    state_bytes=0,
                    window=int(chunk),
                    geometry=geometry,
                    layer=index,
                )
            )
        elif kind == FULL:
            layers.append(
                Layer(
                    kind=ATTENTION,
                    per_token_bytes=width,
                    state_bytes=0,
                    window=0,
                    geometry=geometry,
                    layer=index,
                )
            )
        else:
            return _unknown(f"a layer of kind {kind} in a sliding-window model")
    return Layers(tuple(layers), source, "")


def _mla(model: ModelConfig, request: Request, per_token: int) -> Layers:
    layers, _key = num_layers(model)
    rank, rope = model.integer("kv_lora_rank"), model.integer("qk_rope_head_dim")
    if layers is None or rank is None or rope is None:
        return _unknown("MLA latent needs num_hidden_layers, kv_lora_rank and qk_rope_head_dim")
    latent = (rank + rope) * request.kv_dtype_bytes
    rest = per_token - latent * layers
    if rest % layers:
        return _unknown("the indexer cache is not the same on every layer")
    found = []
    for i in range(layers):
        found.append(
            Layer(
                kind=ATTENTION,
                per_token_bytes=latent,
                state_bytes=0,
                window=0,
                geometry=("mla", rank + rope),
                layer=i,
            )
        )
        if rest:
            found.append(
                Layer(
                    kind=ATTENTION,
                    per_token_bytes=rest // layers,
                    state_bytes=0,
                    window=0,
                    geometry=("indexer", rest // layers),
                    layer=i,
                )
            )
    return Layers(tuple(found), "one latent per layer (and one indexer entry)", "")


def _state_layers(state: int, indices: list[int]) -> list[Layer] | str:
    if not indices:
        return "no state layers"
    if state % len(indices):
        return "state layers of different sizes"
    each = state // len(indices)
    return [
        Layer(
            kind=STATE,
            per_token_bytes=0,
            state_bytes=each,
            window=0,
            geometry=("state", each),
            layer=i,
        )
        for i in indices
    ]


def _hybrid(model: ModelConfig, heads: HeadCount, request: Request, state: int) -> Layers:
    structure = layout(model)
    if structure is None or structure.unknown:
        return _unknown("the per-layer layout is unknown")
    kinds = structure.kinds
    if SLIDING in kinds or CHUNKED in kinds:
        return _unknown("windowed layers in a hybrid with state layers are not modelled")
    found = layer_widths(model, heads, request, hybrid_ssm.NAME, hybrid_ssm.TITLE)
    attention_layers = [i for i, k in enumerate(kinds) if k in (FULL, BOTH)]
    if attention_layers and not isinstance(found, LayerWidths):
        return _unknown("; ".join(found.unknown))
    stateful = [i for i, k in enumerate(kinds) if k in (MAMBA, BOTH, LINEAR, CONV)]
    states = _state_layers(state, stateful)
    if isinstance(states, str):
        return _unknown(states)
    by_layer = {layer.layer: layer for layer in states}
    layers: list[Layer] = []
    for i in range(len(kinds)):  # in model order: a Zamba2 layer keeps both
        if i in attention_layers and found.widths[i]:
            geometry = (found.counts[i], found.dims.k, found.dims.v)
            layers.append(
                Layer(
                    kind=ATTENTION,
                    per_token_bytes=found.widths[i],
                    state_bytes=0,
                    window=0,
                    geometry=geometry,
                    layer=i,
                )
            )
        if i in by_layer:
            layers.append(by_layer[i])
    return Layers(tuple(layers), structure.source, "")


def layers_of(
    model: ModelConfig,
    mechanism: str,
    heads: HeadCount,
    request: Request,
    kv_bytes_per_token: int,
    state_bytes_per_sequence: int,
) -> Layers:
    """The layers behind one engine's per-GPU figures (heads and request at that GPU's share)."""
    if mechanism == full_attention.NAME:
        found = layer_widths(model, heads, request, mechanism, full_attention.TITLE)
        if not isinstance(found, LayerWidths):
            return _unknown("; ".join(found.unknown))
        result = Layers(tuple(_attention(found)), "every layer full attention", "")
    elif mechanism == sliding_window.NAME:
        result = _windowed(model, heads, request, sliding_window.TITLE)
    elif mechanism == mla_latent.NAME:
        result = _mla(model, request, kv_bytes_per_token)
    elif mechanism == hybrid_ssm.NAME:
        result = _hybrid(model, heads, request, state_bytes_per_sequence)
    elif mechanism == recurrent.NAME:
        count, _key = num_layers(model)
        states = _state_layers(state_bytes_per_sequence, list(range(count or 0)))
        result = _unknown(states) if isinstance(states, str) else Layers(tuple(states), "", "")
    elif not kv_bytes_per_token and not state_bytes_per_sequence:
        return Layers((), f"{mechanism}: no KV cache and no state", "")
    else:
        return _unknown(f"the layers of a {mechanism} cache are not modelled")
    if result.unknown:
        return result
    kv = sum(layer.per_token_bytes for layer in result.layers)
    state = sum(layer.state_bytes for layer in result.layers)
    if (kv, state) != (kv_bytes_per_token, state_bytes_per_sequence):
        return _unknown(
            f"the layers add up to {kv:,} B/token and {state:,} B of state, not the "
            f"{kv_bytes_per_token:,} B/token and {state_bytes_per_sequence:,} B shown"
        )
    return result
