"""vLLM's hybrid page-size rule applied: a hybrid model's attention block raised so one
attention page holds a state page (Platform._align_hybrid_block_size, the extracted
hybrid_page_rules), the mamba_cache_mode its class flags give under prefix caching, and the
state pages per sequence that mode keeps."""

from __future__ import annotations

import math

from apron.config import ModelConfig
from apron.layers import ATTENTION_KINDS, STATE_KINDS, layout
from apron.results import GpuShare

# With prefix caching on (CacheConfig.enable_prefix_caching defaults to True; `vllm serve` turns
# it off for a hybrid unless --enable-prefix-caching, see apron.engines.vllm.capacity.mamba_cache_mode), for a
# model with mamba state MambaModelConfig.verify_and_update_config (vllm/model_executor/models/
# config.py) sets mamba_cache_mode "all" when the class supports mamba prefix caching, else
# "align", and MambaSpec.max_memory_usage_bytes (vllm/v1/kv_cache_interface.py) counts 2 state
# pages per sequence under "align". Restated by hand; the class flag is extracted.
ALIGN_STATE_PAGES = 2


def class_mamba_cache_mode(model: ModelConfig) -> tuple[str | None, str]:
    """vLLM's default mamba_cache_mode for this architecture, and why (None: unknown)."""
    vllm = model.constraints.get("vllm")
    arch = model.architecture
    flags = {r.architecture: r for r in vllm.rows("model_class_flags")} if vllm else {}
    row = flags.get(arch or "")
    if row is None or row.supports_mamba_prefix_caching is None:
        return None, f"vLLM's mamba_cache_mode for {arch} is unknown (no class flags for it)"
    if row.supports_mamba_prefix_caching:
        return "all", (
            f"prefix caching sets mamba_cache_mode 'all' for {arch} (it supports mamba prefix "
            "caching)"
        )
    return "align", (
        f"mamba_cache_mode 'align' (prefix caching; {arch} does not support mamba prefix caching)"
    )


def mamba_chunk_size(model: ModelConfig) -> tuple[int | None, str]:
    """vLLM's ModelConfig.get_mamba_chunk_size: mamba_chunk_size, else chunk_size, else 2,048
    (Mamba1 has no chunk) (vllm/config/model.py; cited, not extracted). None: a value that is
    not a positive integer."""
    for key in ("mamba_chunk_size", "chunk_size"):
        if model.get(key) is None:
            continue
        value = model.integer(key)
        if value is None or value <= 0:
            return None, f"{key} is not a positive integer"
        return value, f"({key})"
    return 2048, "(no mamba_chunk_size or chunk_size: vLLM's 2,048)"


def hybrid_block(
    model: ModelConfig,
    share: GpuShare,
    rules,
    notes: list[str],
    mode: tuple[str | None, str] | None = None,
):
    """(attention block tokens, state bytes per sequence padded to the page, lines) under the
    engine's hybrid page-size rule, or (None, why, ()). `mode` is vLLM's mamba_cache_mode and
    why (default: class_mamba_cache_mode's); "none" and "align" align the block alike, "align" keeps
    two state pages per sequence, "none" one."""
    mode, mode_how = mode if mode is not None else class_mamba_cache_mode(model)
    page = rules.hybrid_page_rule_all if mode == "all" else rules.hybrid_page_rule
    if page is None:
        return None, "hybrid page size: the engine's page-size unification rule is not extracted"
    if page.shape != ("chunk_align_ceil" if mode == "all" else "align_ceil"):
        return None, f"hybrid page size: rule shape {page.shape!r} is not implemented"
    if page.kernel_min_block is None:
        return None, (
            f"hybrid page size: the attention backend's kernel block sizes "
            f"({page.kernel_sizes_from}) are not extracted: the attention block is aligned to "
            f"max(the smallest of them, block_size) ({page.formula})"
        )
    structure = layout(model)
    if structure is None or structure.unknown:
        return None, "hybrid page size: the per-layer layout is unknown"
    if mode not in ("align", "none", "all"):
        return None, f"hybrid page size: {mode_how}"
    pages = ALIGN_STATE_PAGES if mode == "align" else 1
    attention = sum(1 for k in structure.kinds if k in ATTENTION_KINDS)
    states = sum(1 for k in structure.kinds if k in STATE_KINDS)
    if not attention or not states or share.kv_bytes_per_token is None:
        return None, "hybrid page size: needs attention and state layers with known figures"
    if share.kv_bytes_per_token % attention or (share.state_bytes_per_sequence or 0) % states:
        return None, "hybrid page size: attention or state layers of different sizes"
    per_token_layer = share.kv_bytes_per_token // attention
    state_page = (share.state_bytes_per_sequence or 0) // states
    align = max(page.kernel_min_block, rules.block_tokens)
    if mode == "all":
        base, base_how = mamba_chunk_size(model)
        if base is None:
            return None, f"hybrid page size: {base_how}"
        chunk = math.lcm(base, align)
        tokens_per_state = -(-state_page // per_token_layer)
        block = chunk * -(-tokens_per_state // chunk)
        how = (
            f"hybrid block = {chunk} x ceil(ceil({state_page:,} B state page / "
            f"{per_token_layer:,} B per token per layer) / {chunk}) = {block} tokens, the chunk "
            f"lcm({base} {base_how}, {align}) ({page.formula})"
        )
        per_sequence = "1 state page per state layer per block of the request"
    else:
        block = align * -(-state_page // (align * per_token_layer))
        how = (
            f"hybrid block = {align} x ceil({state_page:,} B state page / ({align} x "
            f"{per_token_layer:,} B per token per layer)) = {block} tokens ({page.formula})"
        )
        per_sequence = f"{pages} state page{'s' if pages > 1 else ''} per state layer per sequence"
    if page.raises_only:
        block = max(block, rules.block_tokens)
    attn_page = block * per_token_layer
    one = max(attn_page, state_page) if page.pads_mamba_page else state_page
    padded = pages * states * one
    lines = (
        how,
        f"{mode_how}: {per_sequence}",
        f"state per {'block of a request' if mode == 'all' else 'sequence'} = {pages} x "
        f"{states} state layers x {one:,} B page (padded to the attention page) = {padded:,} B",
    )
    notes.append(
        "vLLM groups the layers of each kind into KV cache groups of equal size; padding "
        "layers it adds when the counts do not divide are not modelled"
    )
    return block, padded, lines
