"""Per-GPU shares under tensor parallelism, as pure functions of the numbers they are given.

Weights are split evenly (tensors the engine replicates, such as norms, are counted once, not
on every GPU); the KV heads per GPU come from the engine's extracted rule (split, or one replica
per GPU when there are fewer KV heads than GPUs); an MLA latent is replicated on every GPU."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apron.results import GpuShare, HeadCount, MechanismResult

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


def whole_model_share(
    heads: HeadCount, figures: MechanismResult, weights_total: int | None
) -> GpuShare:
    """The share of the only GPU at tp 1: the engine's figures and all the weights."""
    lines = () if weights_total is None else (weights_per_gpu(weights_total, 1)[1],)
    return GpuShare(
        status="split",
        kv_heads_per_gpu=heads.count,
        kv_heads_how=heads.how,
        kv_bytes_per_token=figures.kv_bytes_per_token,
        kv_bytes_at_context=figures.kv_bytes_at_context,
        state_bytes_per_sequence=figures.state_bytes_per_sequence,
        weights_bytes=weights_total,
        refused=(),
        valid_tp=(),
        unknown=figures.unknown,
        arithmetic=lines,
    )


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


def tp_refusal(tp: int, shares: Sequence[tuple[str, GpuShare]]) -> str:
    """One message when no engine accepts `tp` and at least one refuses it ("" otherwise): an
    engine whose tensor-parallel rules are not extracted cannot plan that tp either. When some
    engine accepts it, each refusing engine shows "refused" in its own row instead."""
    if any(share.status == "split" or share.kv_bytes_per_token is not None for _, share in shares):
        return ""  # an engine accepts tp (a share with a KV figure, its state split unknown too)
    refused = [(title, share) for title, share in shares if share.status == "refused"]
    if not refused:
        return ""
    reasons = "; ".join(dict.fromkeys(r for _, share in refused for r in share.refused))
    unknown = [title for title, share in shares if share.status == "unknown"]
    tail = f" ({', '.join(unknown)}: tensor-parallel rules not extracted)" if unknown else ""
    accepted = set.intersection(*(set(share.valid_tp) for _, share in refused))
    sizes = ", ".join(str(size) for size in sorted(accepted)) or "none up to 64"
    return f"--tp {tp} is refused: {reasons}{tail}; tp sizes every check accepts: {sizes}"
