"""Config values the engines refuse, refused here too (exit 2) rather than planned from.

Limits (README "Limits"): a dimension (heads, KV heads, head_dim, hidden_size) is 1..MAX_DIMENSION,
num_hidden_layers is 1..MAX_LAYERS (apron builds one entry per layer), and vLLM's attention layer
asserts num_heads % num_kv_heads == 0."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.errors import ApronInputError

MAX_LAYERS = 100_000
MAX_DIMENSION = 2**24
DIMENSIONS = ("num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size")


def refuse_impossible(model: ModelConfig) -> None:
    """ApronInputError naming the first value the engine would refuse (or apron cannot bound)."""
    layers = model.integer("num_hidden_layers")
    if layers is not None and not 1 <= layers <= MAX_LAYERS:
        raise ApronInputError(
            f"{model.source}: {model.key_of('num_hidden_layers')} = {layers}; a model has at "
            f"least 1 layer and apron reads at most {MAX_LAYERS:,}"
        )
    for name in DIMENSIONS:
        value = model.integer(name)
        if value is not None and not 1 <= value <= MAX_DIMENSION:
            raise ApronInputError(
                f"{model.source}: {model.key_of(name)} = {value}; it must be positive "
                f"(the engines build tensors of that size) and apron reads at most {MAX_DIMENSION:,}"
            )
    heads = model.integer("num_attention_heads")
    kv_heads = model.integer("num_key_value_heads")
    if heads is not None and kv_heads is not None and heads % kv_heads:
        raise ApronInputError(
            f"{model.source}: num_attention_heads {heads} is not a multiple of "
            f"num_key_value_heads {kv_heads}; vLLM's attention layer asserts "
            "num_heads % num_kv_heads == 0"
        )
