"""What fits on one GPU in SGLang: the token pools its memory-pool configurator sizes from the
budget, the sequences at the context they hold, and the verdict for the batch at the context.

Budget = GPU memory x mem_fraction_static - weights (the rest memory SGLang's profiling sees,
without activations and graphs). The pools, by configurator (python/sglang/srt/model_executor/
pool_configurator.py and mem_cache/kv_cache_configurator.py at the SGLang pin; cited, not
extracted):
- DefaultPoolConfigurator (full attention, MLA): tokens = budget // cell_size, aligned down to the
  page; a request at the context takes `context` tokens.
- HybridSWAPoolConfigurator (is_hybrid_swa_model, not disabled): cell = full bytes per token +
  swa_full_tokens_ratio x windowed bytes per token; full tokens = budget // cell (aligned); SWA
  tokens = int(full x ratio) (aligned); a request holds `context` full tokens and at most
  sliding_window + page SWA tokens (the admission floor _solve_pool_sizes checks).
- A Mamba / linear-attention state pool (mambaish_config): state slots K = int((budget x r / (1 +
  r) - per request) // per request) with r = mamba_full_memory_ratio; the KV pool gets the budget
  less (K + 1) slots; sequences = min(K, KV tokens // context).
The ratios are the extracted ServerArgs defaults and per-architecture overrides."""

from __future__ import annotations

import math
from typing import Any

from apron import capacity as fit_rules
from apron.config import ModelConfig
from apron.constraints import EngineConstraints
from apron.deployment import Deployment
from apron.mechanisms.layer_specs import ATTENTION, CHUNK, STATE, WINDOWED, Layers, layers_of
from apron.record import Record
from apron.results import Capacity, GpuShare, HeadCount, Request, Verdict

SERVING_DEFAULTS, OVERRIDES = "serving_defaults", "arg_overrides"
SWA_RATIO, MAMBA_RATIO = "swa_full_tokens_ratio", "mamba_full_memory_ratio"
DISABLE_SWA = "disable_hybrid_swa_memory"
CONFIGURATORS = "python/sglang/srt/model_executor/pool_configurator.py"


class Pools(Record):
    """SGLang's pools for one budget: what a request at `context` takes, and how many fit."""

    kind: str  # "default", "hybrid_swa", "mamba"
    full_tokens: int
    swa_tokens: int | None
    state_slots: int | None
    sequences: int
    lines: tuple[str, ...]
    refused: str  # SGLang refuses to start with these pools ("" when it starts)


def setting(sglang: EngineConstraints, model: ModelConfig, name: str) -> tuple[Any, str, str]:
    """(value, where it came from, what may change it) of a pool setting: the ServerArgs default,
    or the override a server with default args gets for this architecture."""
    arch = model.architecture or ""
    value, source = None, f"{name}: not extracted"
    for row in sglang.rows(SERVING_DEFAULTS):
        if row.role == name and row.kind == "literal":
            value, source = row.value, f"ServerArgs.{name} = {row.value}"
    others = []
    for row in sglang.rows(OVERRIDES):
        if row.setting != name:
            continue
        applies = arch in row.architectures or (
            row.predicate.startswith("lambda arch:") and _predicate(row.predicate, arch)
        )
        if not applies:
            continue
        if row.applies_by_default and row.value:
            value, source = row.value, f"{row.function} sets {name} = {row.value} for {arch}"
        else:
            others.append(f"{row.function} sets {row.value or '?'} when {' and '.join(row.guards)}")
    return value, source, "; ".join(others)


def _predicate(code: str, arch: str) -> bool:
    """`lambda arch: "X" in arch or "Y" in arch`: the names it tests by substring."""
    names = [part.split('"')[1] for part in code.split(" in arch") if '"' in part]
    return any(name in arch for name in names)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def pools(
    layers: Layers,
    budget: int,
    page: int,
    context: int,
    *,
    swa: bool,
    swa_ratio: float | None,
    mamba_ratio: float | None,
    context_len: int,
) -> Pools | str:
    """The pools SGLang sizes in `budget` bytes, or why apron cannot say."""

    def align(x: int) -> int:
        return x // page * page

    state = [layer for layer in layers.layers if layer.kind == STATE]
    full = sum(layer.per_token_bytes for layer in layers.layers if layer.kind == ATTENTION)
    local = [layer for layer in layers.layers if layer.kind in (WINDOWED, CHUNK)]
    local_bytes = sum(layer.per_token_bytes for layer in local)
    if state:
        if local:
            return "a state pool beside windowed layers is not modelled"
        if mamba_ratio is None:
            return f"{MAMBA_RATIO} is not extracted"
        per_request = sum(layer.state_bytes for layer in state)
        rest_gib = budget / (1 << 30)
        mamba_budget = rest_gib * mamba_ratio / (1 + mamba_ratio) * (1 << 30)
        slots = int((mamba_budget - per_request) // per_request)
        kv_budget = int(budget - (slots + 1) * per_request)
        tokens = align(kv_budget // full) if full else context_len
        sequences = min(slots, tokens // context) if full else slots
        lines = (
            f"state pool: K = int(({budget:,} x {mamba_ratio:g} / {1 + mamba_ratio:g} - "
            f"{per_request:,}) // {per_request:,}) = {slots:,} slots of {per_request:,} B "
            f"({MAMBA_RATIO} {mamba_ratio:g})",
            f"KV pool: ({budget:,} - {slots + 1:,} x {per_request:,}) // {full:,} B/token = "
            f"{tokens:,} tokens"
            if full
            else "no attention layers: no KV pool",
            f"sequences = min({slots:,}, {tokens:,} // {context:,}) = {sequences:,}",
        )
        refused = "" if slots > 0 else "SGLang refuses to start: no room for a state slot"
        return Pools(
            kind="mamba",
            full_tokens=tokens,
            swa_tokens=None,
            state_slots=slots,
            sequences=max(sequences, 0),
            lines=lines,
            refused=refused,
        )
    if local and swa:
        if swa_ratio is None:
            return f"{SWA_RATIO} is not extracted"
        windows = {layer.window for layer in local}
        if len(windows) != 1:
            return "windowed layers with different windows"
        window = windows.pop()
        if full == 0:
            cell = local_bytes
            swa_tokens = align(budget // cell)
            full_tokens = 0
            sequences = swa_tokens // min(context, window + page)
            lines = (
                f"every layer windowed: SWA tokens = {budget:,} // {cell:,} = {swa_tokens:,}",
                f"sequences = {swa_tokens:,} // min({context:,}, window {window:,} + page "
                f"{page}) = {sequences:,}",
            )
            return Pools(
                kind="hybrid_swa",
                full_tokens=swa_tokens,
                swa_tokens=swa_tokens,
                state_slots=None,
                sequences=sequences,
                lines=lines,
                refused="",
            )
        cell = full + swa_ratio * local_bytes
        full_tokens = align(int(budget // cell))
        swa_tokens = align(int(full_tokens * swa_ratio))
        per_swa = min(context, window + page)
        sequences = min(full_tokens // context, swa_tokens // per_swa)
        refused = (
            f"SGLang refuses to start: the SWA pool ({swa_tokens:,} tokens) cannot hold the "
            f"admission floor, window {window:,} + page {page}"
            if window + page >= swa_tokens
            else ""
        )
        lines = (
            f"cell = {full:,} B full + {swa_ratio:g} x {local_bytes:,} B windowed = {cell:,.1f} B "
            f"per token ({SWA_RATIO} {swa_ratio:g})",
            f"full tokens = {budget:,} // {cell:,.1f} = {full_tokens:,}; SWA tokens = "
            f"int({full_tokens:,} x {swa_ratio:g}) = {swa_tokens:,}",
            f"sequences = min({full_tokens:,} // {context:,}, {swa_tokens:,} // min({context:,}, "
            f"{window:,} + {page})) = {sequences:,}",
        )
        return Pools(
            kind="hybrid_swa",
            full_tokens=full_tokens,
            swa_tokens=swa_tokens,
            state_slots=None,
            sequences=sequences,
            lines=lines,
            refused=refused,
        )
    cell = full + local_bytes  # window-unaware: every layer at full context
    if cell == 0:
        return Pools(
            kind="default",
            full_tokens=context_len,
            swa_tokens=None,
            state_slots=None,
            sequences=0,
            lines=("no KV cache",),
            refused="",
        )
    tokens = align(budget // cell)
    sequences = tokens // context
    lines = (
        f"tokens = {budget:,} // {cell:,} B per token, aligned to page {page} = {tokens:,}",
        f"sequences = {tokens:,} // {context:,} = {sequences:,}",
    )
    refused = "" if tokens > 0 else "SGLang refuses to start: not enough memory for the KV pool"
    return Pools(
        kind="default",
        full_tokens=tokens,
        swa_tokens=None,
        state_slots=None,
        sequences=sequences,
        lines=lines,
        refused=refused,
    )


def _unknown(gpu_memory, fraction, source, page, page_source, unknown, notes) -> Capacity:
    return Capacity(
        gpu_memory_bytes=gpu_memory, memory_fraction=fraction, memory_fraction_source=source, block_tokens=page, block_tokens_source=page_source, budget_bytes=None, blocks=None, block_bytes=None, kv_tokens=None, blocks_per_sequence=None, sequence_bytes=None,
        sequences=None, limit="", unknown=tuple(dict.fromkeys(unknown)), arithmetic=(), notes=tuple(notes),
    )  # fmt: skip


def capacity(
    *,
    model: ModelConfig,
    mechanism: str,
    share: GpuShare,
    heads: HeadCount,
    request: Request,
    rules,  # apron.serving_rules.ServingRules
    sglang: EngineConstraints,
    deployment: Deployment,
    context: int | None,
    window_aware: bool | None,
    weights_unknown: str,
) -> Capacity:
    """SGLang's pools, sequences and verdict on one GPU, or unknown with what is missing."""
    gpu_memory = deployment.gpu_memory or 0
    fraction, source = (
        (deployment.memory_fraction, "--memory-fraction")
        if deployment.memory_fraction is not None
        else (rules.memory_fraction, rules.memory_fraction_source)
    )
    page, page_source = rules.block_tokens, rules.block_tokens_source
    notes = [fit_rules.NOT_MODELLED]
    unknown: list[str] = []
    if share.status != "split":
        unknown.append(
            "the engine refuses this tp" if share.status == "refused" else "per-GPU figures unknown"
        )
    if fraction is None:
        unknown.append(f"memory fraction: {source}")
    if page is None:
        unknown.append(f"page size: {page_source}")
    if share.weights_bytes is None:
        unknown.append(
            weights_unknown
            if weights_unknown.startswith("weights")
            else f"weights: {weights_unknown}"
        )
    if context is None:
        unknown.append("no context length (give --context)")
    if deployment.pp > 1:
        unknown.append(
            f"pipeline parallel {deployment.pp}: how SGLang sizes its pools per stage is not "
            "modelled"
        )
    layers = None
    if not unknown:
        if share.kv_bytes_per_token is None or share.state_bytes_per_sequence is None:
            unknown.append("KV or state bytes per GPU unknown: " + "; ".join(share.unknown))
        else:
            layers = layers_of(
                model, mechanism, heads, request, share.kv_bytes_per_token,
                share.state_bytes_per_sequence,
            )  # fmt: skip
            if layers.unknown:
                unknown.append(f"layers: {layers.unknown}")
    if unknown:
        return _unknown(gpu_memory, fraction, source, page, page_source, unknown, notes)
    assert layers is not None and fraction is not None and page is not None
    assert share.weights_bytes is not None and context is not None
    swa_ratio, swa_source, swa_others = setting(sglang, model, SWA_RATIO)
    if deployment.swa_full_tokens_ratio is not None:
        swa_ratio, swa_source = deployment.swa_full_tokens_ratio, "--swa-full-tokens-ratio"
    mamba_ratio, mamba_source, _ = setting(sglang, model, MAMBA_RATIO)
    requested = math.ceil(gpu_memory * fraction)
    budget = requested - share.weights_bytes
    lines = [
        f"budget = ceil({gpu_memory:,} B x {fraction:g}) - {share.weights_bytes:,} B weights = "
        f"{budget:,} B"
    ]
    if budget <= 0:
        verdict = Verdict(
            fits=False,
            reason=f"the weights alone ({share.weights_bytes:,} B) do not fit in {requested:,} B "
            "(GPU memory x mem_fraction_static)",
            weights_fit=False, budget_bytes=requested, weights_bytes=share.weights_bytes, cache_bytes=None, largest_context=0, largest_batch=0, notes=(),
        )  # fmt: skip
        return Capacity(
            gpu_memory_bytes=gpu_memory, memory_fraction=fraction, memory_fraction_source=source, block_tokens=page, block_tokens_source=page_source, budget_bytes=budget, blocks=0, block_bytes=None, kv_tokens=0, blocks_per_sequence=None, sequence_bytes=None, sequences=0,
            limit="weights", unknown=(), arithmetic=tuple(lines), notes=tuple(notes), max_concurrency=0.0, verdict=verdict,
        )  # fmt: skip
    found = pools(
        layers, budget, page, context, swa=bool(window_aware),
        swa_ratio=_number(swa_ratio), mamba_ratio=_number(mamba_ratio),
        context_len=request.max_model_len or context,
    )  # fmt: skip
    if isinstance(found, str):
        return _unknown(gpu_memory, fraction, source, page, page_source, (found,), notes)
    if found.kind == "hybrid_swa":
        notes.append(
            f"{SWA_RATIO} {swa_ratio} ({swa_source})" + (f"; {swa_others}" if swa_others else "")
        )
    if found.kind == "mamba":
        notes.append(f"{MAMBA_RATIO} {mamba_ratio} ({mamba_source})")
    notes.append(f"pools as {CONFIGURATORS} sizes them (cited, not extracted)")
    lines.extend(found.lines)
    verdict = _verdict(
        found, layers, budget, page, context, deployment.batch, requested, share.weights_bytes,
        request, window_aware, _number(swa_ratio), _number(mamba_ratio),
    )  # fmt: skip
    state = sum(layer.state_bytes for layer in layers.of(STATE))
    kv = context * sum(layer.per_token_bytes for layer in layers.layers)
    kv_layers = any(layer.kind != STATE for layer in layers.layers)
    return Capacity(
        gpu_memory_bytes=gpu_memory,
        memory_fraction=fraction,
        memory_fraction_source=source,
        block_tokens=page,
        block_tokens_source=page_source,
        budget_bytes=budget,
        blocks=found.full_tokens // page if page and kv_layers else None,
        block_bytes=None,
        kv_tokens=found.full_tokens if kv_layers else None,
        blocks_per_sequence=None,
        sequence_bytes=None,
        sequences=found.sequences,
        limit="state" if state > kv else "kv",
        unknown=(),
        arithmetic=tuple(lines),
        notes=tuple(notes),
        max_concurrency=None,
        verdict=verdict,
        layout=found.kind,
    )


def _verdict(
    found: Pools, layers, budget, page, context, batch, requested, weights, request,
    window_aware, swa_ratio, mamba_ratio,
) -> Verdict:  # fmt: skip
    def sequences_at(length: int) -> int:
        got = pools(
            layers, budget, page, length, swa=bool(window_aware), swa_ratio=swa_ratio,
            mamba_ratio=mamba_ratio, context_len=request.max_model_len or length,
        )  # fmt: skip
        return got.sequences if isinstance(got, Pools) and not got.refused else 0

    upper = max(context, request.max_model_len or 0)
    low, high, best = 1, upper, 0
    while low <= high:
        middle = (low + high) // 2
        if sequences_at(middle) >= batch:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    full = sum(layer.per_token_bytes for layer in layers.of(ATTENTION))
    local = layers.of(WINDOWED, CHUNK)
    local_bytes = sum(layer.per_token_bytes for layer in local)
    held = context  # a window-unaware pool holds every token of every layer
    if found.kind == "hybrid_swa" and local:
        held = min(context, max(layer.window for layer in local) + page)
    state = sum(layer.state_bytes for layer in layers.of(STATE))
    cache = batch * (context * full + held * local_bytes + state)
    if found.refused:
        return Verdict(
            fits=False,
            reason=found.refused,
            weights_fit=True,
            budget_bytes=requested,
            weights_bytes=weights,
            cache_bytes=cache,
            largest_context=best,
            largest_batch=0,
            notes=(),
        )
    fits = found.sequences >= batch
    held = (
        f"{found.sequences:,} sequence{'' if found.sequences == 1 else 's'} of {context:,} tokens"
    )
    reason = (
        f"fits: the pools hold {held}, batch {batch:,}"
        if fits
        else f"does not fit: the pools hold {held}, batch {batch:,}"
    )
    return Verdict(
        fits=fits,
        reason=reason,
        weights_fit=True,
        budget_bytes=requested,
        weights_bytes=weights,
        cache_bytes=cache,
        largest_context=best,
        largest_batch=found.sequences,
        notes=(),
    )
