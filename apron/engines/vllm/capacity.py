"""What fits on one GPU in vLLM: its KV cache groups for the model's layers, the blocks its budget
holds, the blocks one request at max_model_len takes, its startup check, and the verdict for the
batch at the context.

Budget = ceil(GPU memory x gpu_memory_utilization) - weights (vLLM's requested memory minus the
model; activations, CUDA graphs and non-torch memory are not modelled). The groups, blocks and
concurrency are vLLM's own arithmetic (apron.engines.vllm.kv_cache, from vllm/v1/core/kv_cache_utils.py);
what a request takes per group is vLLM's extracted sizing rules (apron.engines.vllm.sizing). Block sizes:
the first default attention backend's (full attention, chunked-local, Mamba pages), raised for a
hybrid by the page-size rule; the backend's smallest kernel block for sliding-window layers
(vLLM Attention.get_kv_cache_spec)."""

from __future__ import annotations

import math

from apron import capacity as fit_rules
from apron.config import ModelConfig
from apron.constraints import EngineConstraints
from apron.deployment import Deployment
from apron.engines.vllm.kv_cache import (
    CHUNKED,
    FULL,
    MAMBA,
    SLIDING,
    Grouping,
    LayerSpec,
    NotModelled,
    blocks_per_request,
    estimated_max_model_len,
    group_specs,
    kv_cache_plan,
    pipeline_stages,
    stage_pools,
)
from apron.engines.vllm.sizing import Unknown, request_pages, scheduler
from apron.mechanisms import hybrid_ssm, mla_latent
from apron.mechanisms.layer_specs import ATTENTION, CHUNK, STATE, WINDOWED, Layers, layers_of
from apron.results import Capacity, GpuShare, HeadCount, Request, Verdict

HMA_CHUNKED = (
    "chunked-local layers keep their own groups: VllmConfig turns the hybrid KV cache manager "
    "off for attention_chunk_size only when VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE "
    "is 0, and it defaults to 1 (vllm/config/vllm.py, vllm/envs.py; cited, not extracted)"
)


def _unknown_capacity(
    gpu_memory: int, fraction, fraction_source: str, block, block_source: str, unknown, notes
) -> Capacity:
    return Capacity(
        gpu_memory_bytes=gpu_memory,
        memory_fraction=fraction,
        memory_fraction_source=fraction_source,
        block_tokens=block,
        block_tokens_source=block_source,
        budget_bytes=None,
        blocks=None,
        block_bytes=None,
        kv_tokens=None,
        blocks_per_sequence=None,
        sequence_bytes=None,
        sequences=None,
        limit="",
        unknown=tuple(dict.fromkeys(unknown)),
        arithmetic=(),
        notes=tuple(notes),
    )


def _specs(layers: Layers, block: int, sliding_block: int | None) -> tuple[list[LayerSpec], str]:
    """vLLM's per-layer specs for these layers, or ([], why)."""
    specs: list[LayerSpec] = []
    attention = [layer for layer in layers.layers if layer.kind != STATE]
    state_page = 0
    if any(layer.kind == STATE for layer in layers.layers) and attention:
        widths = {layer.per_token_bytes for layer in attention}
        if len(widths) != 1:
            return [], "a hybrid whose attention layers differ in size"
        state_page = block * widths.pop()  # padded to the attention page (hybrid page rule)
    for layer in layers.layers:
        if layer.kind == ATTENTION:
            specs.append(
                LayerSpec(
                    kind=FULL,
                    block_tokens=block,
                    page_bytes=layer.per_token_bytes * block,
                    window=0,
                    geometry=layer.geometry,
                )
            )
        elif layer.kind == WINDOWED:
            if sliding_block is None:
                return [], (
                    "the attention backend's kernel block sizes are not extracted: a sliding-window "
                    "layer takes the smallest of them"
                )
            page = layer.per_token_bytes * sliding_block
            specs.append(
                LayerSpec(
                    kind=SLIDING,
                    block_tokens=sliding_block,
                    page_bytes=page,
                    window=layer.window,
                    geometry=layer.geometry,
                )
            )
        elif layer.kind == CHUNK:
            page = layer.per_token_bytes * block
            specs.append(
                LayerSpec(
                    kind=CHUNKED,
                    block_tokens=block,
                    page_bytes=page,
                    window=layer.window,
                    geometry=layer.geometry,
                )
            )
        else:
            page = max(state_page, layer.state_bytes)
            specs.append(
                LayerSpec(
                    kind=MAMBA,
                    block_tokens=block,
                    page_bytes=page,
                    window=0,
                    geometry=layer.geometry,
                )
            )
    return specs, ""


def _largest_context(grouping: Grouping, blocks: int, batch: int, upper: int, pages) -> int:
    """The largest max_model_len at which `batch` requests fit in `blocks` (0: none)."""

    def fits(length: int) -> bool:
        return batch * blocks_per_request(grouping, length, pages) <= blocks

    if upper < 1 or not fits(1):
        return 0
    low, high, best = 1, upper, 1
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


def capacity(
    *,
    model: ModelConfig,
    mechanism: str,
    share: GpuShare,
    heads: HeadCount,
    request: Request,
    rules,  # apron.serving_rules.ServingRules
    vllm: EngineConstraints,
    deployment: Deployment,
    context: int | None,
    weights_unknown: str,
) -> Capacity:
    """vLLM's blocks, concurrency and verdict on one GPU, or unknown with what is missing."""
    from apron.engines.vllm.hybrid_page import hybrid_block
    from apron.mechanisms.per_gpu import _block_tokens

    gpu_memory = deployment.gpu_memory or 0
    fraction, fraction_source = (
        (deployment.memory_fraction, "--memory-fraction")
        if deployment.memory_fraction is not None
        else (rules.memory_fraction, rules.memory_fraction_source)
    )
    unknown: list[str] = []
    notes = [fit_rules.NOT_MODELLED]
    block, block_source = _block_tokens(rules, mechanism == mla_latent.NAME, unknown)
    if deployment.block_size is not None:
        block, block_source = deployment.block_size, "--block-size"
    if share.status != "split":
        unknown.append(
            "the engine refuses this tp" if share.status == "refused" else "per-GPU figures unknown"
        )
    if fraction is None:
        unknown.append(f"memory fraction: {fraction_source}")
    if block is None and not any(u.startswith("block size") for u in unknown):
        unknown.append(f"block size: {block_source}")
    if share.weights_bytes is None:
        unknown.append(
            weights_unknown
            if weights_unknown.startswith("weights")
            else f"weights: {weights_unknown}"
        )
    if context is None:
        unknown.append("max_model_len: no context length (give --context)")
    layers = None
    if share.status == "split":
        if share.kv_bytes_per_token is None or share.state_bytes_per_sequence is None:
            unknown.append("KV or state bytes per GPU unknown: " + "; ".join(share.unknown))
        else:
            layers = layers_of(
                model,
                mechanism,
                heads,
                request,
                share.kv_bytes_per_token,
                share.state_bytes_per_sequence,
            )
            if layers.unknown:
                unknown.append(f"layers: {layers.unknown}")
    if unknown:
        return _unknown_capacity(
            gpu_memory, fraction, fraction_source, block, block_source, unknown, notes
        )
    assert fraction is not None and block is not None and layers is not None
    assert share.weights_bytes is not None and context is not None
    lines: list[str] = []
    mode = mamba_cache_mode(model, deployment.prefix_caching)
    if layers.of(STATE) and mode[0] not in ("none", "align", "all"):
        return _unknown_capacity(
            gpu_memory, fraction, fraction_source, block, block_source, (mode[1],), notes
        )
    if mechanism == hybrid_ssm.NAME and layers.of(STATE) and layers.of(ATTENTION):
        found = hybrid_block(model, share, rules, notes, mode)
        if found[0] is None:
            return _unknown_capacity(
                gpu_memory, fraction, fraction_source, block, block_source, (found[1],), notes
            )
        block, _padded, more = found
        block_source = f"raised by the hybrid page rule from {rules.block_tokens}"
        lines.extend(more)
    specs, why = _specs(layers, block, rules.kernel_min_block)
    if why:
        return _unknown_capacity(
            gpu_memory, fraction, fraction_source, block, block_source, (why,), notes
        )
    hybrid_allocator = True  # on a GPU, without a KV connector or EAGLE with chunked layers
    if any(s.kind == CHUNKED for s in specs):
        notes.append(HMA_CHUNKED)
    try:
        grouping = group_specs(specs, hybrid_allocator)
        local = any(s.kind in (SLIDING, CHUNKED) for s in specs)
        try:
            sched = scheduler(
                vllm,
                gpu_memory=gpu_memory,
                gpu_name=deployment.gpu_name,
                tp=request.tp,
                pp=deployment.pp,
                max_model_len=context,
                max_num_batched_tokens=deployment.max_num_batched_tokens,
                async_scheduling=deployment.async_scheduling,
            )
        except Unknown:
            if local:  # a windowed group's reservation needs the in-flight tokens
                raise
            sched = None  # no windowed group: the in-flight tokens size nothing here
        in_flight = sched.in_flight_tokens if sched is not None else 0
        pages = request_pages(vllm, in_flight, mode[0] or "none")
        requested = math.ceil(gpu_memory * fraction)
        weights = share.weights_bytes
        if deployment.pp > 1:
            grouping, weights = _pipeline(model, layers, specs, grouping, deployment.pp, weights)
            notes.append(PP_WEIGHTS)
        if deployment.kv_cache_memory_bytes is not None:
            available = deployment.kv_cache_memory_bytes
            lines.append(f"KV cache memory = {available:,} B (--kv-cache-memory-bytes)")
        else:
            available = requested - weights
            lines.append(
                f"budget = ceil({gpu_memory:,} B x {fraction:g}) - {weights:,} B "
                f"weights = {available:,} B"
            )
        if local and sched is not None:
            lines.extend(sched.lines)
        plan = kv_cache_plan(grouping, max(available, 0), context, pages)
        if deployment.max_model_len_auto and grouping.groups and not plan.fits_one_request:
            fitted = estimated_max_model_len(grouping, max(available, 0), context, pages)
            if fitted:
                lines.append(
                    f"--max-model-len auto: vLLM fits max_model_len to memory, {context:,} -> "
                    f"{fitted:,} (_auto_fit_max_model_len)"
                )
                context = fitted
                plan = kv_cache_plan(grouping, max(available, 0), context, pages)
        fitted_context = context if context != request.context else None
        verdict = _verdict(
            plan,
            grouping,
            pages,
            requested,
            weights,
            available,
            context,
            deployment,
            request,
            sched.max_num_seqs if sched is not None else None,
        )
        if fitted_context is not None:
            verdict = verdict._replace(context=fitted_context)
    except (NotModelled, Unknown) as err:
        return _unknown_capacity(
            gpu_memory, fraction, fraction_source, block, block_source, (str(err),), notes
        )
    lines.extend(plan.lines)
    state_pages = sum(pages(g.spec, context) for g in grouping.groups if g.spec.kind == MAMBA)
    kv_pages = plan.blocks_per_request - state_pages
    return Capacity(
        gpu_memory_bytes=gpu_memory,
        memory_fraction=fraction,
        memory_fraction_source=fraction_source,
        block_tokens=block,
        block_tokens_source=block_source,
        budget_bytes=available,
        blocks=plan.num_blocks,
        block_bytes=grouping.pool_block_bytes or None,
        kv_tokens=plan.tokens if any(g.spec.kind != MAMBA for g in grouping.groups) else None,
        blocks_per_sequence=plan.blocks_per_request,
        sequence_bytes=plan.needed_bytes,
        sequences=math.floor(plan.max_concurrency)
        if grouping.groups and plan.blocks_per_request
        else None,
        limit="weights" if available <= 0 else "state" if state_pages > kv_pages else "kv",
        unknown=()
        if grouping.groups
        else ("no KV cache or state: memory sets no limit on sequences",),
        arithmetic=tuple(lines),
        notes=tuple(notes),
        max_concurrency=plan.max_concurrency if grouping.groups else None,
        verdict=verdict,
        layout=grouping.layout,
    )


def mamba_cache_mode(model: ModelConfig, prefix_caching: bool | None) -> tuple[str | None, str]:
    """vLLM's mamba_cache_mode and why. `vllm serve` leaves prefix caching off for a hybrid or
    attention-free model (EngineArgs._set_default_chunked_prefill_and_prefix_caching_args:
    is_prefix_caching_supported and not is_hybrid; attention-free models do not support it), so
    the mode stays "none": one state page per sequence. With --enable-prefix-caching,
    MambaModelConfig.verify_and_update_config makes it "all" for a class that supports mamba
    prefix caching, else "align" (vllm/engine/arg_utils.py, vllm/model_executor/models/
    config.py; cited)."""
    if not prefix_caching:
        why = (
            "--enable-prefix-caching not given"
            if prefix_caching is False
            else "vllm serve's default: prefix caching off for a hybrid or attention-free model"
        )
        return "none", f"mamba_cache_mode 'none' ({why})"
    from apron.engines.vllm.hybrid_page import class_mamba_cache_mode

    return class_mamba_cache_mode(model)


PP_WEIGHTS = (
    "pipeline parallel: each stage holds weights / pp; the embedding and the LM head, which sit "
    "on the first and the last stage, are not placed"
)


def _pipeline(model, layers: Layers, specs, grouping: Grouping, pp: int, weights: int):
    """The grouping as the busiest stage sees it (its pool decides the block count: vLLM takes
    the smallest count of all workers), and the weights one stage holds."""
    from apron.mechanisms.base import num_layers

    count, _key = num_layers(model)
    if count is None or count < pp:
        raise Unknown(f"pipeline parallel {pp}: the model has {count} layers")
    stage_of = pipeline_stages(count, pp)
    stages = [stage_of[layer.layer] for layer in layers.layers]
    pools = stage_pools(grouping, specs, stages)
    worst = max(pools)
    per_stage = [stage_of.count(i) for i in range(pp)]
    line = (
        f"pipeline parallel {pp}: {', '.join(map(str, per_stage))} layers per stage "
        f"(get_pp_indices); a block takes {', '.join(f'{p:,}' for p in pools)} B per stage, "
        f"the largest ({worst:,} B) decides the blocks"
    )
    stage_weights = -(-weights // pp)
    return grouping._replace(pool_block_bytes=worst, lines=(*grouping.lines, line)), stage_weights


def _verdict(
    plan, grouping, pages, requested, weights, available, context, deployment, request, max_seqs
) -> Verdict:
    batch = deployment.batch
    budget_notes = ()
    if weights > requested or available <= 0:
        return Verdict(
            fits=False,
            reason=f"the weights alone ({weights:,} B) do not fit in {requested:,} B "
            "(GPU memory x gpu_memory_utilization)",
            weights_fit=False,
            budget_bytes=requested,
            weights_bytes=weights,
            cache_bytes=None,
            largest_context=0,
            largest_batch=0,
            notes=budget_notes,
        )
    if not grouping.groups:
        return Verdict(
            fits=True,
            reason="fits: no KV cache or state",
            weights_fit=True,
            budget_bytes=requested,
            weights_bytes=weights,
            cache_bytes=0,
            largest_context=None,
            largest_batch=None,
            notes=(),
        )
    upper = max(context, request.max_model_len or 0)
    largest_context = _largest_context(grouping, plan.num_blocks, batch, upper, pages)
    largest_batch = math.floor(plan.max_concurrency)
    cache = batch * plan.blocks_per_request * grouping.pool_block_bytes
    notes = (
        [f"vllm serve's default max_num_seqs here is {max_seqs:,}: more run queued"]
        if max_seqs is not None
        else []
    )
    if not plan.fits_one_request:
        return Verdict(
            fits=False,
            reason=f"vLLM refuses to start: one request at max_model_len {context:,} needs "
            f"{plan.needed_bytes:,} B of KV cache, {available:,} B are left "
            f"(its estimate of the largest max_model_len: {largest_context if batch == 1 else _largest_context(grouping, plan.num_blocks, 1, upper, pages):,})",
            weights_fit=True,
            budget_bytes=requested,
            weights_bytes=weights,
            cache_bytes=cache,
            largest_context=largest_context,
            largest_batch=0,
            notes=tuple(notes),
        )
    fits = batch * plan.blocks_per_request <= plan.num_blocks
    reason = (
        f"fits: {batch:,} x {plan.blocks_per_request:,} blocks <= {plan.num_blocks:,}"
        if fits
        else f"does not fit: {batch:,} x {plan.blocks_per_request:,} blocks > {plan.num_blocks:,}"
    )
    return Verdict(
        fits=fits,
        reason=reason,
        weights_fit=True,
        budget_bytes=requested,
        weights_bytes=weights,
        cache_bytes=cache,
        largest_context=largest_context,
        largest_batch=largest_batch,
        notes=tuple(notes),
    )
