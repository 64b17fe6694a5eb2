"""The mechanism protocol and the arithmetic helpers the mechanism modules share.

Every mechanism module declares NAME and TITLE and a `compute(model, heads, request)` that
returns a MechanismResult. Missing fields give `unknown`
with their names, never a default. Each figure carries its arithmetic written out."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.record import Record
from apron.results import HeadCount, MechanismResult, Request


def n(value: int) -> str:
    """An integer with thousands separators, for arithmetic lines."""
    return f"{value:,}"


def result(
    name: str,
    title: str,
    *,
    per_token: int | None = None,
    at_context: int | None = None,
    naive: int | None = None,
    ratio: float | None = None,
    state: int | None = 0,
    unknown: tuple[str, ...] = (),
    missing: tuple[str, ...] = (),
    arithmetic: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
) -> MechanismResult:
    if naive is None and ratio is None:
        naive = at_context
    return MechanismResult(
        mechanism=name,
        title=title,
        kv_bytes_per_token=per_token,
        kv_bytes_at_context=at_context,
        naive_kv_bytes_at_context=naive,
        naive_ratio=ratio,
        state_bytes_per_sequence=state,
        unknown=tuple(dict.fromkeys(unknown)),
        missing=tuple(dict.fromkeys(missing)),
        arithmetic=arithmetic,
        notes=notes,
    )


def unknown_result(
    name: str,
    title: str,
    reasons: tuple[str, ...],
    missing: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
    state: int | None = None,
) -> MechanismResult:
    return result(name, title, unknown=reasons, missing=missing, notes=notes, state=state)


def num_layers(model: ModelConfig) -> tuple[int | None, str]:
    """(num_hidden_layers, how it is spelled in the config)."""
    return model.integer("num_hidden_layers"), model.key_of("num_hidden_layers")


class HeadDims:
    """K and V head dimensions for a full-attention layer, and how they were found."""

    __slots__ = ("k", "v", "how", "missing")

    def __init__(self, k: int | None, v: int | None, how: str, missing: tuple[str, ...]) -> None:
        self.k, self.v, self.how, self.missing = k, v, how, missing

    @property
    def known(self) -> bool:
        return self.k is not None and self.v is not None

    @property
    def reason(self) -> str:
        if self.how:
            return f"head size unknown: {self.how}"
        return f"head size unknown: needs {', '.join(self.missing)}"


def is_mla_shaped(model: ModelConfig) -> bool:
    """The config carries a latent KV projection (DeepSeek-style MLA fields)."""
    return model.get("kv_lora_rank") is not None


def head_dims(model: ModelConfig) -> HeadDims:
    """K/V head dims: the unabsorbed MLA shape for MLA-shaped configs, else head_dim (or
    hidden_size_per_head, or hidden_size / num_attention_heads when it divides exactly)."""
    if is_mla_shaped(model):
        nope, rope, v = (
            model.integer(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
        )
        missing = tuple(
            k
            for k, x in (("qk_nope_head_dim", nope), ("qk_rope_head_dim", rope), ("v_head_dim", v))
            if x is None
        )
        if missing:
            return HeadDims(None, None, "", missing)
        return HeadDims(
            nope + rope,
            v,
            f"K head = qk_nope_head_dim + qk_rope_head_dim = {nope} + {rope} = "
            f"{nope + rope}, V head = v_head_dim = {v} (MLA fields, unabsorbed)",
            (),
        )
    head_keys = ("head_dim", "hidden_size_per_head")
    if (model.text_model_type or model.model_type) == "zamba2":
        head_keys = ("attention_head_dim",)  # vLLM zamba2.py: head_size=config.attention_head_dim
    for key in head_keys:
        value = model.get(key)
        if is_int(value):
            return HeadDims(value, value, f"{model.key_of(key)} = {value}", ())
    hidden, heads = model.integer("hidden_size"), model.integer("num_attention_heads")
    if hidden is None or heads is None:
        missing = ("head_dim",) + tuple(
            k for k, x in (("hidden_size", hidden), ("num_attention_heads", heads)) if x is None
        )
        return HeadDims(None, None, "", missing)
    if heads <= 0 or hidden % heads:
        return HeadDims(
            None,
            None,
            f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}",
            ("head_dim",),
        )
    dim = hidden // heads
    return HeadDims(
        dim,
        dim,
        f"head_dim = {model.key_of('hidden_size')} / "
        f"{model.key_of('num_attention_heads')} = {hidden} / {heads} = {dim} "
        "(no head_dim key)",
        (),
    )


def missing_inputs(
    dims: HeadDims, heads: HeadCount, layers: int | None = None, layers_key: str | None = None
) -> tuple[list[str], list[str]]:
    """(reasons, missing field names) for what an attention cache needs: the layer count (when
    `layers_key` is given), the head dimensions and the KV-head count."""
    reasons: list[str] = []
    missing: list[str] = []
    if layers_key is not None and layers is None:
        reasons.append(f"{layers_key} is absent")
        missing.append(layers_key)
    if not dims.known:
        reasons.append(dims.reason)
        missing.extend(dims.missing)
    if not heads.known:
        reasons.extend(heads.unknown)
        missing.extend(heads.missing)
    return reasons, missing


def per_layer_heads(heads: HeadCount, layers: int) -> tuple[tuple[int, ...] | None, str]:
    """The KV-head count of each layer, or (None, why)."""
    if heads.per_layer:
        if len(heads.per_layer) != layers:
            return None, (
                f"the KV-head rule gives {len(heads.per_layer)} per-layer counts for "
                f"{layers} layers"
            )
        return heads.per_layer, ""
    if heads.count is None:
        return None, "; ".join(heads.unknown) or "KV-head count unknown"
    return (heads.count,) * layers, ""


class LayerWidths(Record):
    """Every attention layer's KV bytes per token, with what they were computed from."""

    layers: int
    dims: HeadDims
    counts: tuple[int, ...]  # KV heads per layer
    widths: tuple[int, ...]  # bytes per token per layer: kv_heads x (k + v) x dtype bytes


def layer_widths(
    model: ModelConfig, heads: HeadCount, request: Request, name: str, title: str
) -> LayerWidths | MechanismResult:
    """Per-layer KV widths for a cache where every layer attends, or the `unknown` result
    (with the missing field names) when the config lacks what that needs."""
    layers, layers_key = num_layers(model)
    dims = head_dims(model)
    reasons, missing = missing_inputs(dims, heads, layers, layers_key)
    if reasons:
        return unknown_result(name, title, tuple(reasons), tuple(missing), state=0)
    assert layers is not None and dims.k is not None and dims.v is not None
    counts, why = per_layer_heads(heads, layers)
    if counts is None:
        return unknown_result(name, title, (why,), state=0)
    b = request.kv_dtype_bytes
    return LayerWidths(layers, dims, counts, tuple(c * (dims.k + dims.v) * b for c in counts))


def layer_bytes_text(kv_heads: int, dims: HeadDims, dtype_bytes: int) -> str:
    return f"{kv_heads} KV heads x ({dims.k} + {dims.v}) x {dtype_bytes} B"
