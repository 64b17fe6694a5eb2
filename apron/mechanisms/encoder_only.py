"""Encoder-only attention (BERT-style embedders): no KV cache at all.

vLLM builds these layers as EncoderOnlyAttention, whose EncoderOnlyAttentionSpec reports 0 bytes
(vllm/v1/kv_cache_interface.py): the whole sequence is encoded in one pass, nothing is kept."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.mechanisms.base import result
from apron.results import HeadCount, MechanismResult, Request

NAME = "encoder_only"
TITLE = "encoder-only attention (no KV cache)"


def compute(
    model: ModelConfig, heads: HeadCount, request: Request, why: str = ""
) -> MechanismResult:
    return result(
        NAME,
        TITLE,
        per_token=0,
        at_context=0,
        state=0,
        arithmetic=(
            f"{why or 'encoder-only model'}: EncoderOnlyAttentionSpec.max_memory_usage_bytes = 0",
        ),
        notes=("memory for activations and weights only; the batch adds no cache",),
    )
