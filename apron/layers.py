"""Per-layer layout from the config: which layers hold full-attention KV, windowed KV, or state.

Read, in order, from the first field the config has: `layer_types`, `layers_block_type`,
`hybrid_override_pattern` (Nemotron-H: M = Mamba2, * = attention, - = MLP, E = MoE),
`attn_layer_period` + `attn_layer_offset` (Jamba: layer i is attention when i % period ==
offset, else Mamba), `sliding_window_pattern` (Gemma 3 / Cohere2: every p-th layer is global),
and `use_sliding_window` + `max_window_layers` (Qwen2: layers from max_window_layers on are
windowed). None of these present means the config states no per-layer layout."""

from __future__ import annotations

from apron.config import ModelConfig, is_int
from apron.record import Record
from apron.terminal import shown

FULL, SLIDING, CHUNKED, MAMBA, BOTH, LINEAR, CONV, NONE, SHARED = (
    "full_attention",
    "sliding_attention",
    "chunked_attention",
    "mamba",
    "attention+mamba",
    "linear_attention",
    "short_conv",
    "no_cache",
    "kv_shared",
)
ATTENTION_KINDS = frozenset({FULL, SLIDING, CHUNKED, BOTH})
STATE_KINDS = frozenset({MAMBA, BOTH, LINEAR, CONV})

# Per-layer type words seen in config.json files, normalized. Unknown words stay unknown.
KIND_WORDS = {
    "full_attention": FULL,
    "attention": FULL,
    "global": FULL,
    "global_attention": FULL,
    "full": FULL,
    "*": FULL,
    "sliding_attention": SLIDING,
    "sliding": SLIDING,
    "local": SLIDING,
    "local_attention": SLIDING,
    "sliding_window": SLIDING,
    "swa": SLIDING,
    "mamba": MAMBA,
    "mamba2": MAMBA,
    "m": MAMBA,
    "ssm": MAMBA,
    "hybrid": BOTH,  # Zamba2: a Mamba layer with the shared attention block applied
    "attention+mamba": BOTH,
    "chunked_attention": CHUNKED,
    "linear_attention": LINEAR,
    "linear": LINEAR,
    "gated_deltanet": LINEAR,
    "kda": LINEAR,
    "conv": CONV,
    "short_conv": CONV,
    "mlp": NONE,
    "moe": NONE,
    "-": NONE,
    "e": NONE,
    "ffn": NONE,
}


class LayerLayout(Record):
    """Per-layer kinds (empty when unknown) and where they came from."""

    kinds: tuple[str, ...]
    source: str
    unknown: tuple[str, ...]
    missing: tuple[str, ...]

    def count(self, *kinds: str) -> int:
        return sum(1 for k in self.kinds if k in kinds)

    @property
    def has_state(self) -> bool:
        return any(k in STATE_KINDS for k in self.kinds)

    @property
    def has_sliding(self) -> bool:
        return SLIDING in self.kinds or CHUNKED in self.kinds


def _share_kv(model: ModelConfig, found: LayerLayout) -> LayerLayout:
    """num_kv_shared_layers (Gemma-3n): the last N layers reuse an earlier layer's KV and hold
    none of their own (vLLM gemma3n.py sets kv_sharing_target_layer_name for them)."""
    shared = model.integer("num_kv_shared_layers")
    if not shared or not found.kinds or found.unknown:
        return found
    layers = len(found.kinds)
    if shared >= layers:
        return LayerLayout(
            (),
            found.source,
            (f"num_kv_shared_layers = {shared} is not below the {layers} layers",),
            (),
        )
    first = layers - shared
    kinds = found.kinds[:first] + (SHARED,) * shared
    return LayerLayout(
        kinds,
        f"{found.source}; num_kv_shared_layers = {shared} (layers {first}.. reuse earlier KV)",
        (),
        (),
    )


def _words(values: object, source: str, layers: int | None) -> LayerLayout:
    if not isinstance(values, list | tuple | str) or not values:
        return LayerLayout((), source, (f"{source} is not a non-empty list or string",), ())
    kinds: list[str] = []
    for index, value in enumerate(values):
        word = str(value).strip().lower()
        kind = KIND_WORDS.get(word)
        if kind is None:
            return LayerLayout(
                (),
                source,
                (f"{source}[{index}] = {shown(repr(value))} is a layer type apron does not know",),
                (),
            )
        kinds.append(kind)
    if layers is not None and len(kinds) != layers:
        return LayerLayout(
            (),
            source,
            (f"{source} has {len(kinds)} entries but the model has {layers} layers",),
            (),
        )
    return LayerLayout(tuple(kinds), source, (), ())


HYBRID_FIELDS = ("layers_block_type", "hybrid_override_pattern", "attn_layer_period")


def layout(model: ModelConfig) -> LayerLayout | None:
    """The per-layer layout the config states (after KV sharing), or None when it states none."""
    found = _stated_layout(model)
    return None if found is None else _share_kv(model, found)


def _stated_layout(model: ModelConfig) -> LayerLayout | None:
    layers = model.integer("num_hidden_layers")
    for key in ("layer_types", "layers_block_type", "hybrid_override_pattern"):
        read = model.read(key)
        if read is not None and read.value is not None:
            return _words(read.value, read.key, layers)
    period, offset = model.get("attn_layer_period"), model.get("attn_layer_offset")
    if period is not None or offset is not None:
        source = "attn_layer_period/attn_layer_offset"
        missing = tuple(
            k
            for k, v in (
                ("attn_layer_period", period),
                ("attn_layer_offset", offset),
                ("num_hidden_layers", layers),
            )
            if v is None
        )
        if missing:
            return LayerLayout((), source, (f"{source} needs {', '.join(missing)}",), missing)
        if not (is_int(period) and is_int(offset)) or period <= 0:
            return LayerLayout(
                (),
                source,
                (
                    f"{source} = {shown(repr(period))}/{shown(repr(offset))} are not usable integers",
                ),
                (),
            )
        kinds = tuple(FULL if i % period == offset else MAMBA for i in range(layers))
        return LayerLayout(kinds, f"{source} = {period}/{offset}", (), ())
    pattern = model.get("sliding_window_pattern")
    if pattern is not None:
        source = f"sliding_window_pattern = {shown(repr(pattern))}"
        if not is_int(pattern) or pattern <= 0:
            return LayerLayout((), source, (f"{source} is not a positive integer",), ())
        if layers is None:
            return LayerLayout(
                (), source, (f"{source} needs num_hidden_layers",), ("num_hidden_layers",)
            )
        kinds = tuple(SLIDING if (i + 1) % pattern else FULL for i in range(layers))
        return LayerLayout(kinds, f"{source} (every {pattern}th layer global)", (), ())
    if model.get("use_sliding_window") is True and model.present("max_window_layers"):
        first = model.get("max_window_layers")
        source = f"use_sliding_window + max_window_layers = {shown(repr(first))}"
        if not is_int(first) or layers is None:
            return LayerLayout(
                (),
                source,
                (f"{source} needs integer max_window_layers and num_hidden_layers",),
                ("num_hidden_layers",),
            )
        kinds = tuple(SLIDING if i >= first else FULL for i in range(layers))
        return LayerLayout(kinds, f"{source} (layers {first}.. windowed)", (), ())
    return None


class KindGeometry(Record):
    """One layer kind's KV heads (whole model) and K/V head sizes, and where they came from."""

    kv_heads: int
    k: int
    v: int
    how: str


def kind_geometry(model: ModelConfig) -> dict[str, KindGeometry] | str | None:
    """The KV geometry of windowed and full layers when the config gives them their own heads
    or head sizes, as the engine builds each layer (None: one geometry for every layer; a str:
    the fields such a config needs, missing). Read from the engine's model code by hand:
    - MiMo-V2 (vLLM mimo_v2.py MiMoV2DecoderLayer.__init__): windowed layers take
      swa_num_key_value_heads, swa_head_dim and swa_v_head_dim (default swa_head_dim); full
      layers num_key_value_heads, head_dim and v_head_dim (default head_dim).
    - Gemma 4 (vLLM gemma4.py Gemma4DecoderLayer.__init__): full layers take global_head_dim
      (default head_dim) for K and V, and num_global_key_value_heads (default
      num_key_value_heads) only when attention_k_eq_v; windowed layers num_key_value_heads and
      head_dim. K and V are both cached (k_eq_v only loads K's weights into V's slot)."""
    if model.present("swa_num_key_value_heads"):
        return _paired(
            model,
            (SLIDING, "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim"),
            (FULL, "num_key_value_heads", "head_dim", "v_head_dim"),
        )
    if model.present("global_head_dim") or model.present("num_global_key_value_heads"):
        heads, head = model.integer("num_key_value_heads"), model.integer("head_dim")
        k_eq_v = model.get("attention_k_eq_v") is True
        global_heads_key = (
            "num_global_key_value_heads"
            if k_eq_v and model.present("num_global_key_value_heads")
            else "num_key_value_heads"
        )
        global_head_key = "global_head_dim" if model.present("global_head_dim") else "head_dim"
        global_heads, global_head = (
            model.integer(global_heads_key),
            model.integer(global_head_key),
        )
        missing = [
            k
            for k, v in (
                ("num_key_value_heads", heads),
                ("head_dim", head),
                (global_heads_key, global_heads),
                (global_head_key, global_head),
            )
            if v is None
        ]
        if missing:
            return f"per-kind head geometry needs {', '.join(dict.fromkeys(missing))}"
        return {
            SLIDING: KindGeometry(
                heads, head, head, f"num_key_value_heads {heads}, head_dim {head} (K and V)"
            ),
            FULL: KindGeometry(
                global_heads,
                global_head,
                global_head,
                f"{global_heads_key} {global_heads}"
                + (" (attention_k_eq_v)" if global_heads_key != "num_key_value_heads" else "")
                + f", {global_head_key} {global_head} (K and V)",
            ),
        }
    return None


def _paired(model: ModelConfig, *kinds: tuple[str, str, str, str]):
    found: dict[str, KindGeometry] = {}
    missing: list[str] = []
    for kind, heads_key, k_key, v_key in kinds:
        heads, k = model.integer(heads_key), model.integer(k_key)
        v = k if model.get(v_key) is None else model.integer(v_key)  # getattr(.., None) or k
        missing += [key for key, x in ((heads_key, heads), (k_key, k), (v_key, v)) if x is None]
        if heads is not None and k is not None and v is not None:
            found[kind] = KindGeometry(
                heads, k, v, f"{heads_key} {heads}, {k_key} {k}, {v_key} {v}"
            )
    if missing:
        return f"per-kind head geometry needs {', '.join(dict.fromkeys(missing))}"
    return found


def kind_heads(geometry: dict[str, KindGeometry], kinds: tuple[str, ...]) -> tuple[int, ...]:
    """KV heads of every layer by its kind (0 for a layer that caches nothing of its own)."""
    return tuple(geometry[k].kv_heads if k in geometry else 0 for k in kinds)
