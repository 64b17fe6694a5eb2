"""The inverse: how many KV tokens and sequences fit in one GPU's memory, as pure arithmetic.

budget   = gpu_memory x memory_fraction - weights_per_gpu
blocks   = floor(budget / (block_tokens x kv_bytes_per_token))        (one block of every layer)
tokens   = blocks x block_tokens                                      (rounded down to a block)
per seq  = ceil(context / block_tokens) blocks + the fixed state
sequences= floor(budget / (blocks_per_sequence x block_bytes + state_per_sequence))

This is vLLM's get_num_blocks (available // page_size // num_layers) with the weights as the only
non-KV memory: activations, CUDA graphs, the sampler and non-torch memory are not modelled, so
the engine's own figure is lower by what its profiling run measures."""

from __future__ import annotations

import math

from apron.record import Record

MEMORY_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
NOT_MODELLED = (
    "activations (the profiled forward pass), CUDA graphs, the sampler and non-torch memory "
    "(NCCL, allocator) are not modelled: the engine subtracts what its profiling run measures, "
    "so expect fewer blocks than shown; the size of that margin is not modelled"
)


def parse_memory(text: str, option: str = "--gpu-memory") -> int:
    """'80GiB' -> 85,899,345,920 bytes; 'GB'/'MB' are decimal, 'GiB'/'MiB' binary; a unit is
    required (apron.bounds reads the number exactly and bounds it)."""
    from apron import bounds

    return bounds.parse_quantity(
        text, MEMORY_UNITS, bounds.BYTES, option, example="80GiB, 80GB or 81920MiB"
    )


class Fit(Record):
    """What fits in one GPU's KV budget. None fields are unknown (see `unknown`)."""

    budget_bytes: int | None
    blocks: int | None
    block_bytes: int | None
    kv_tokens: int | None
    blocks_per_sequence: int | None
    sequence_bytes: int | None  # blocks_per_sequence x block_bytes + state
    sequences: int | None
    limit: str  # "kv" (tokens at the context), "state" (the fixed state), "weights", ""
    unknown: tuple[str, ...]
    arithmetic: tuple[str, ...]


def budget(gpu_memory: int, fraction: float, weights_per_gpu: int) -> int:
    """gpu_memory x fraction - weights (vLLM request_memory takes ceil(total x fraction))."""
    return math.ceil(gpu_memory * fraction) - weights_per_gpu


def fit(
    *,
    gpu_memory: int,
    fraction: float,
    weights_per_gpu: int,
    kv_bytes_per_token: int,
    state_bytes_per_sequence: int,
    block_tokens: int,
    context: int | None,
) -> Fit:
    """Blocks, tokens and sequences that fit (all per GPU), with the arithmetic written out."""
    room = budget(gpu_memory, fraction, weights_per_gpu)
    lines = [
        f"budget = {gpu_memory:,} B x {fraction:g} - {weights_per_gpu:,} B weights = {room:,} B"
    ]
    if room <= 0:
        lines.append("the weights alone take the whole budget: nothing fits")
        return Fit(
            budget_bytes=room,
            blocks=0,
            block_bytes=None,
            kv_tokens=0,
            blocks_per_sequence=None,
            sequence_bytes=None,
            sequences=0,
            limit="weights",
            unknown=(),
            arithmetic=tuple(lines),
        )
    if kv_bytes_per_token == 0:
        block_bytes = 0
        blocks = tokens = None
        lines.append("no KV cache: only the fixed state per sequence takes memory")
    else:
        block_bytes = block_tokens * kv_bytes_per_token
        blocks = room // block_bytes
        tokens = blocks * block_tokens
        lines.append(
            f"block = {block_tokens} tokens x {kv_bytes_per_token:,} B/token = {block_bytes:,} B"
        )
        lines.append(
            f"blocks = floor({room:,} / {block_bytes:,}) = {blocks:,}; "
            f"tokens = {blocks:,} x {block_tokens} = {tokens:,}"
        )
    if context is None:
        return Fit(
            budget_bytes=room,
            blocks=blocks,
            block_bytes=block_bytes or None,
            kv_tokens=tokens,
            blocks_per_sequence=None,
            sequence_bytes=None,
            sequences=None,
            limit="",
            unknown=("sequences: no context length (give --context)",),
            arithmetic=tuple(lines),
        )
    per_seq_blocks = -(-context // block_tokens) if block_bytes else 0
    per_seq = per_seq_blocks * block_bytes + state_bytes_per_sequence
    if per_seq == 0:
        return Fit(
            budget_bytes=room,
            blocks=blocks,
            block_bytes=None,
            kv_tokens=tokens,
            blocks_per_sequence=0,
            sequence_bytes=0,
            sequences=None,
            limit="",
            unknown=("sequences: a sequence takes no KV and no state, so memory sets no limit",),
            arithmetic=tuple(lines),
        )
    sequences = room // per_seq
    state_part = f" + {state_bytes_per_sequence:,} B state" if state_bytes_per_sequence else ""
    if block_bytes:
        lines.append(
            f"per sequence = ceil({context:,} / {block_tokens}) = {per_seq_blocks:,} blocks x "
            f"{block_bytes:,} B{state_part} = {per_seq:,} B"
        )
    else:
        lines.append(f"per sequence = {state_bytes_per_sequence:,} B state")
    lines.append(f"sequences = floor({room:,} / {per_seq:,}) = {sequences:,}")
    if state_bytes_per_sequence and block_bytes:
        reported = int(blocks * block_bytes / per_seq * context)
        lines.append(
            f"(vLLM's 'GPU KV cache size' line counts state pages too: blocks / blocks per "
            f"sequence x context = {blocks:,} / {per_seq / block_bytes:g} x {context:,} = "
            f"{reported:,} tokens)"
        )
    limit = "state" if state_bytes_per_sequence > per_seq_blocks * block_bytes else "kv"
    return Fit(
        budget_bytes=room,
        blocks=blocks,
        block_bytes=block_bytes or None,
        kv_tokens=tokens,
        blocks_per_sequence=per_seq_blocks,
        sequence_bytes=per_seq,
        sequences=sequences,
        limit=limit,
        unknown=(),
        arithmetic=tuple(lines),
    )
