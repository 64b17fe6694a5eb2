"""Per-GPU shares under tensor parallelism, as pure functions of the numbers they are given.

Weights are split evenly (tensors the engine replicates, such as norms, are counted once, not
on every GPU); the KV heads per GPU come from the engine's extracted rule (split, or one replica
per GPU when there are fewer KV heads than GPUs); an MLA latent is replicated on every GPU."""

from __future__ import annotations

from collections.abc import Callable

from apron.results import HeadCount

REPLICATED_TENSORS_NOTE = (
    "weights / tp: tensors the engine replicates on every GPU (norms, biases of row-parallel "
    "layers) are counted once, not per GPU"
)


def weights_per_gpu(total_bytes: int, tp: int) -> tuple[int, str]:
    """ceil(total / tp) bytes, and the arithmetic."""
    share = -(-total_bytes // tp)
    if tp == 1:
        return share, f"weights per GPU = {total_bytes:,} B (tp 1)"
    return share, f"weights per GPU = ceil({total_bytes:,} B / {tp}) = {share:,} B"


def split_heads(heads: HeadCount, tp: int, per_gpu: Callable[[int], int], rule: str) -> HeadCount:
    """The KV heads one GPU holds, per layer, when each layer's total is mapped by `per_gpu`."""
    if tp == 1 or not heads.known:
        return heads
    if heads.per_layer:
        shares = tuple(per_gpu(c) for c in heads.per_layer)
        how = f"per layer, {rule}: {', '.join(str(s) for s in dict.fromkeys(shares))} per GPU"
        return heads._replace(count=None, per_layer=shares, how=how)
    assert heads.count is not None
    share = per_gpu(heads.count)
    return heads._replace(count=share, how=f"{heads.count} KV heads at tp {tp}: {rule} = {share}")


def valid_sizes(total: int, up_to: int = 64) -> tuple[int, ...]:
    """The sizes from 1 to `up_to` that divide `total` (the fallback shape of a divisibility rule)."""
    return tuple(size for size in range(1, up_to + 1) if total % size == 0)
