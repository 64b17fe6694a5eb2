"""The maximum context vLLM derives from a config, and the check of a requested context.

vLLM's rule at the pin (ModelArchConfigConvertorBase.derive_max_model_len_and_key and
vllm/config/model.py _get_and_verify_max_len): the smallest of the length keys below, replaced by
model_max_length when set; then, unless the model type contains "gemma3", the rope scaling
factor multiplies it (rope types su / longrope / llama3 keep factor 1; yarn starts from
original_max_position_embeddings); a longrope model defaults to original_max_position_embeddings.
A tokenizer's model_max_length can lower it further: that file is not the config, so it is
named, not read."""

from __future__ import annotations

import math
from typing import Any

from apron import bounds
from apron.config import ModelConfig, is_int
from apron.errors import ApronInputError
from apron.record import Record

MAX_CONTEXT = bounds.CONTEXT.high  # tokens; the longest published context (10M) is far below

LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
UNSCALED_ROPE = ("su", "longrope", "llama3")
NO_LENGTH_KEY_DEFAULT = 2048  # by hand from vllm/config/model.py (_get_and_verify_max_len)


class MaxLen(Record):
    """The derived maximum context (None when no length key is present) and how it was found;
    `default` is what vLLM uses without --max-model-len (lower for longrope models)."""

    tokens: int | None
    how: str
    default: int | None = None
    default_how: str = ""


def _rope(model: ModelConfig) -> list[dict[str, Any]]:
    for key in ("rope_parameters", "rope_scaling"):
        value = model.get(key)
        if isinstance(value, dict) and value:
            nested = all(isinstance(v, dict) for v in value.values())
            groups = list(value.values()) if nested else [value]
            out = []
            for group in groups:
                kind = group.get("rope_type", group.get("type", "default"))
                out.append({**group, "rope_type": kind})
            return out
    return []


def derived_max_len(model: ModelConfig) -> MaxLen:
    best: float = float("inf")
    key = None
    for name in LENGTH_KEYS:
        value = model.get(name)
        if is_int(value) and value < best:
            best, key = value, name
    model_max = model.get("model_max_length")
    if is_int(model_max) and model_max:
        best, key = model_max, "model_max_length"
    if key is None:
        how = (
            "no length key in the config (" + ", ".join(LENGTH_KEYS[:4]) + ", ...): vLLM "
            f"assumes {NO_LENGTH_KEY_DEFAULT:,} unless --max-model-len is given "
            "(vllm/config/model.py _get_and_verify_max_len default_max_len)"
        )
        return MaxLen(NO_LENGTH_KEY_DEFAULT, how, NO_LENGTH_KEY_DEFAULT, how)
    base = _context(model, best, model.key_of(key).split(" ")[0])
    how = f"{model.key_of(key).split(' ')[0]} = {base:,}"
    groups = _rope(model)
    model_type = model.model_type or ""
    if groups and "gemma3" not in model_type:
        factor: float = 1.0
        for group in groups:
            if group["rope_type"] not in UNSCALED_ROPE:
                factor = _factor(model, group.get("factor", factor))
                if group["rope_type"] == "yarn" and "original_max_position_embeddings" in group:
                    base = _context(
                        model,
                        group["original_max_position_embeddings"],
                        "yarn original_max_position_embeddings",
                    )
                    how = f"yarn original_max_position_embeddings = {base:,}"
        if factor != 1.0:
            if base * factor > MAX_CONTEXT:
                product = base * factor
                said = f"{product:.3g}" if math.isfinite(product) else "over 1e308"
                raise ApronInputError(
                    f"{model.source}: the rope scaling factor {factor:g} makes the context "
                    f"{said} tokens; apron reads contexts up to {MAX_CONTEXT:,} "
                    f"({bounds.CONTEXT.why})"
                )
            scaled = int(base * factor)
            if scaled < 1:
                raise ApronInputError(
                    f"{model.source}: the rope scaling factor {factor:g} makes the context "
                    f"{base:,} x {factor:g} = {scaled} tokens; the context must be positive"
                )
            base = scaled
            how = f"{how} x rope scaling factor {factor:g} = {base:,}"
        if any(g["rope_type"] == "longrope" for g in groups):
            original = model.get("original_max_position_embeddings")
            if original is not None:
                original = _context(model, original, "original_max_position_embeddings")
                return MaxLen(
                    base,
                    how,
                    original,
                    f"longrope: vLLM defaults to original_max_position_embeddings = {original:,}",
                )
    return MaxLen(base, how, base, how)


def _context(model: ModelConfig, value: object, key: str) -> int:
    """A length the context is read from: an integer within apron.bounds.CONTEXT."""
    return bounds.checked(value, bounds.CONTEXT, f"{model.source}: {key}")


def _factor(model: ModelConfig, value: object) -> float:
    """A rope scaling factor: a positive, finite number; null is 1.0, as vLLM falls back to it
    (_get_and_verify_max_len). A bool or a string is refused, not read as 0 or 1."""
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ApronInputError(
            f"{model.source}: rope scaling factor is {bounds.what_it_is(value)}; it must be a "
            "positive, finite number (vLLM multiplies the context by it)"
        )
    return value


def check(model: ModelConfig, context: int | None) -> tuple[MaxLen, tuple[str, ...]]:
    """The derived maximum and the warnings for a requested context."""
    found = derived_max_len(model)
    warnings: list[str] = []
    if context is not None and found.tokens is not None and context > found.tokens:
        warnings.append(
            f"context {context:,} is beyond the model's maximum {found.tokens:,} ({found.how}): "
            "vLLM refuses a --max-model-len above it unless "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, and the model was not trained for it"
        )
    return found, tuple(warnings)
