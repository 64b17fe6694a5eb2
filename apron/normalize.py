"""Fields the engine sees that config.json leaves out: transformers' config-class defaults and
the derived values vLLM's model classes read, computed by a static reading.

transformers' configuration classes are not imported: one configuration module costs about a
second to import (it pulls in transformers.utils), ten times apron's whole budget. Instead each
rule below restates what the named class does for one model_type; tests check the rules against
transformers' classes when transformers is installed. A model_type with no rule gets no derived
fields, and the plan says so (`reading`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple


class Derived(NamedTuple):
    """One field the engine reads that config.json does not hold, and where its value comes from."""

    name: str
    value: Any
    source: str


Getter = Callable[[str], Any]
Rule = Callable[[Getter], list[Derived]]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _every_nth_global(get: Getter, cls: str, pattern_default: int) -> list[Derived]:
    """layer_types = sliding except every p-th layer (transformers Gemma2/Gemma3/Cohere2)."""
    layers = _int(get("num_hidden_layers"))
    out: list[Derived] = []
    if get("layer_types") is None and layers is not None:
        pattern = _int(get("sliding_window_pattern")) or pattern_default
        where = (
            f"sliding_window_pattern = {pattern}"
            if get("sliding_window_pattern") is not None
            else f"the class default pattern {pattern}"
        )
        kinds = [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)
        ]
        out.append(Derived("layer_types", kinds, f"transformers {cls}: from {where}"))
    return out


def _default(get: Getter, name: str, value: Any, cls: str) -> list[Derived]:
    if get(name) is None:
        return [Derived(name, value, f"transformers {cls} default")]
    return []


def _gemma2(get: Getter) -> list[Derived]:
    return [
        *_every_nth_global(get, "Gemma2Config", 2),
        *_default(get, "sliding_window", 4096, "Gemma2Config"),
        *_default(get, "head_dim", 256, "Gemma2Config"),
        *_default(get, "max_position_embeddings", 8192, "Gemma2Config"),
    ]


def _gemma3(get: Getter) -> list[Derived]:
    return [
        *_every_nth_global(get, "Gemma3TextConfig", 6),
        *_default(get, "sliding_window", 4096, "Gemma3TextConfig"),
        *_default(get, "head_dim", 256, "Gemma3TextConfig"),
        *_default(get, "max_position_embeddings", 131072, "Gemma3TextConfig"),
    ]


def _cohere2(get: Getter) -> list[Derived]:
    return [
        *_every_nth_global(get, "Cohere2Config", 4),
        *_default(get, "sliding_window", 4096, "Cohere2Config"),
    ]


def _interval(cls: str) -> Rule:
    """layer_types from full_attention_interval (Qwen3-Next, Qwen3.5): every n-th layer full."""

    def rule(get: Getter) -> list[Derived]:
        layers = _int(get("num_hidden_layers"))
        if get("layer_types") is not None or layers is None:
            return []
        interval = _int(get("full_attention_interval")) or 4
        where = (
            f"full_attention_interval = {interval}"
            if get("full_attention_interval") is not None
            else f"the class default interval {interval}"
        )
        kinds = [
            "linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)
        ]
        return [Derived("layer_types", kinds, f"transformers {cls}: from {where}")]

    return rule


def _attn_type_list(get: Getter) -> list[Derived]:
    """MiniMax-Text-01 / M1: vLLM's minimax_text_01.py reads attn_type_list (0 lightning linear
    attention, 1 softmax attention)."""
    values = get("attn_type_list")
    if get("layer_types") is not None or not isinstance(values, list):
        return []
    words = {0: "linear_attention", 1: "full_attention"}
    if not all(_int(v) in words for v in values):
        return []
    kinds = [words[v] for v in values]
    return [
        Derived(
            "layer_types",
            kinds,
            "attn_type_list (vLLM minimax_text_01.py: 0 = linear attention, 1 = softmax attention)",
        )
    ]


def _falcon_h1(get: Getter) -> list[Derived]:
    layers = _int(get("num_hidden_layers"))
    if get("layer_types") is not None or layers is None:
        return []
    return [
        Derived(
            "layer_types",
            ["attention+mamba"] * layers,
            "Falcon-H1 runs attention and Mamba2 in parallel in every layer (vLLM falcon_h1.py, "
            "transformers FalconH1Config layers_block_type 'hybrid')",
        )
    ]


def _zamba2(get: Getter) -> list[Derived]:
    hidden, heads = _int(get("hidden_size")), _int(get("num_attention_heads"))
    out: list[Derived] = []
    if hidden is not None and get("attention_hidden_size") is None:
        out.append(
            Derived(
                "attention_hidden_size",
                2 * hidden,
                "transformers Zamba2Config: 2 x hidden_size",
            )
        )
    for name, value in (
        ("mamba_d_state", 64),
        ("mamba_d_conv", 4),
        ("mamba_expand", 2),
        ("mamba_ngroups", 1),
        ("n_mamba_heads", 8),
    ):
        out += _default(get, name, value, "Zamba2Config")
    expand = _int(get("mamba_expand")) or 2
    mamba_heads = _int(get("n_mamba_heads")) or 8
    if hidden is not None and get("mamba_headdim") is None:
        out.append(
            Derived(
                "mamba_headdim",
                expand * hidden // mamba_heads,
                f"transformers Zamba2Config: mamba_expand x hidden_size / n_mamba_heads = "
                f"{expand} x {hidden} / {mamba_heads}",
            )
        )
    if hidden is not None and heads and get("attention_head_dim") is None:
        out.append(
            Derived(
                "attention_head_dim",
                2 * hidden // heads,
                f"transformers Zamba2Config: 2 x hidden_size / num_attention_heads = "
                f"2 x {hidden} / {heads}",
            )
        )
    return out


def _gpt_bigcode(get: Getter) -> list[Derived]:
    if get("num_key_value_heads") is not None:
        return []
    multi_query = get("multi_query")
    if multi_query is None:
        multi_query = True
        how = "multi_query absent: transformers GPTBigCodeConfig defaults it to true"
    else:
        how = f"multi_query = {str(bool(multi_query)).lower()}"
    heads = _int(get("num_attention_heads")) or _int(get("n_head"))
    value = 1 if multi_query else heads
    if value is None:
        return []
    return [
        Derived(
            "num_key_value_heads",
            value,
            f"{how}: vLLM gpt_bigcode.py builds {'1 KV head' if multi_query else 'MHA'}",
        )
    ]


def _llama4(get: Getter) -> list[Derived]:
    layers = _int(get("num_hidden_layers"))
    out: list[Derived] = []
    nope = get("no_rope_layers")
    if layers is None:
        return out
    if not nope:
        interval = _int(get("no_rope_layer_interval")) or 4
        nope = [int((i + 1) % interval != 0) for i in range(layers)]
        out.append(
            Derived(
                "no_rope_layers",
                nope,
                f"transformers Llama4TextConfig: every {interval}th layer has no RoPE "
                "(no_rope_layers empty or absent)",
            )
        )
    chunk = get("attention_chunk_size")
    if get("layer_types") is None and chunk is not None and len(nope) == layers:
        kinds = ["chunked_attention" if flag else "full_attention" for flag in nope]
        out.append(
            Derived(
                "layer_types",
                kinds,
                "vLLM llama4.py: RoPE layers use chunked local attention "
                "(attention_chunk_size), no-RoPE layers full attention",
            )
        )
    return out


def _mimo_v2(get: Getter) -> list[Derived]:
    pattern = get("hybrid_layer_pattern")
    if get("layer_types") is not None or not isinstance(pattern, list):
        return []
    if not all(_int(v) in (0, 1) for v in pattern):
        return []
    kinds = ["sliding_attention" if v == 1 else "full_attention" for v in pattern]
    return [
        Derived(
            "layer_types",
            kinds,
            "hybrid_layer_pattern (vLLM mimo_v2.py: 1 = sliding-window layer with the swa_* "
            "geometry, 0 = full attention)",
        )
    ]


RULES: dict[str, Rule] = {
    "gemma2": _gemma2,
    "gemma3_text": _gemma3,
    "gemma3": _gemma3,
    "cohere2": _cohere2,
    "qwen3_next": _interval("Qwen3NextConfig"),
    "qwen3_5_text": _interval("Qwen3_5TextConfig"),
    "qwen3_5_moe_text": _interval("Qwen3_5MoeTextConfig"),
    "minimax_m1": _attn_type_list,
    "minimax_text_01": _attn_type_list,
    "minimax": _attn_type_list,
    "falcon_h1": _falcon_h1,
    "zamba2": _zamba2,
    "gpt_bigcode": _gpt_bigcode,
    "llama4_text": _llama4,
    "llama4": _llama4,
    "mimo_v2_flash": _mimo_v2,
    "mimo_v2": _mimo_v2,
}


def derive(model_type: str | None, get: Getter) -> tuple[dict[str, Derived], str]:
    """Derived fields for one text config, and a sentence saying how the config was read."""
    rule = RULES.get(model_type or "")
    if rule is None:
        return {}, (
            f"config read as published: apron has no static rule for model_type "
            f"{model_type!r}, so transformers' class defaults for it are not filled in"
        )
    found = {d.name: d for d in rule(get)}
    what = ", ".join(sorted(found)) if found else "nothing to fill in"
    return found, (
        f"config read with apron's static reading of the {model_type} configuration class "
        f"(transformers not imported): derived {what}"
    )


def as_mapping(derived: Mapping[str, Derived]) -> dict[str, Any]:
    return {name: d.value for name, d in derived.items()}
