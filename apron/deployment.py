"""What a deployment asks beyond the model and the context: the GPU, the memory fraction, the
batch, pipeline parallelism and the engine settings apron models (block size, batched tokens, a
fixed KV cache size). None means the engine's own default."""

from __future__ import annotations

from typing import NamedTuple


class Deployment(NamedTuple):
    """One GPU's settings, as given on the command line (None: the engine decides)."""

    gpu_memory: int | None = None  # bytes per GPU
    gpu_name: str = ""  # the part's name, when given with --gpu ("H100 SXM")
    memory_fraction: float | None = None  # overrides every engine's default
    batch: int = 1  # sequences that must fit at once
    pp: int = 1  # pipeline-parallel stages: layers are split between them
    block_size: int | None = None  # vLLM --block-size
    max_num_batched_tokens: int | None = None  # vLLM --max-num-batched-tokens
    kv_cache_memory_bytes: int | None = None  # vLLM --kv-cache-memory-bytes: the KV budget itself
    swa_full_tokens_ratio: float | None = None  # SGLang --swa-full-tokens-ratio
