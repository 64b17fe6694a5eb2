"""An engine's own rule says the architecture holds no KV cache (encoder-only attention, or an
attention-free class without state): zero bytes per token, at any context and batch."""

from __future__ import annotations

from apron.mechanisms.base import result
from apron.results import MechanismResult

NAME = "no_kv_cache"
TITLE = "no KV cache (engine rule)"


def compute(why: str) -> MechanismResult:
    return result(
        NAME,
        TITLE,
        per_token=0,
        at_context=0,
        state=0,
        arithmetic=(f"{why}: 0 B/token",),
        notes=("weights and activations only; the batch adds no cache",),
    )
