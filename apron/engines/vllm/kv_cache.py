"""vLLM's KV cache plan for per-layer specs, as arithmetic: the groups get_kv_cache_groups forms,
the blocks get_kv_cache_config_from_groups fits in a budget, the blocks one request at
max_model_len takes (get_max_concurrency_for_kv_cache_config) and the startup check
(_check_enough_kv_cache_memory, with its estimated maximum model length).

Cited from vllm/v1/core/kv_cache_utils.py at the vLLM pin; the per-request page counts of each
spec (full, sliding-window, chunked-local, Mamba) come from the extracted sizing rules
(apron.sizing_rules), passed in as `RequestPages`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apron.record import Record

FULL, SLIDING, CHUNKED, MAMBA = "full", "sliding", "chunked", "mamba"
LOCAL = (SLIDING, CHUNKED)
SOURCE = "vllm/v1/core/kv_cache_utils.py"


class LayerSpec(Record):
    """One layer's KV cache spec as vLLM builds it (per GPU).

    kind: FULL (full attention, MLA and the indexer included), SLIDING, CHUNKED or MAMBA.
    page_bytes: one block of this layer (attention: block_tokens x bytes per token).
    window: the sliding window or attention chunk, in tokens (0 otherwise).
    geometry: what else tells two specs apart (KV heads, head sizes, dtype bytes; "mla")."""

    kind: str
    block_tokens: int
    page_bytes: int
    window: int = 0
    geometry: tuple = ()

    def scaled(self, ratio: int) -> LayerSpec:
        """The spec with `ratio` times the block (unify_kv_cache_spec_page_size)."""
        return self._replace(
            block_tokens=self.block_tokens * ratio, page_bytes=self.page_bytes * ratio
        )


class Group(Record):
    """One KV cache group: `layers` layers sharing one spec (padding layers counted in `layers`
    when vLLM pads the last group of a kind: they take pool memory too)."""

    spec: LayerSpec
    layers: int
    real_layers: int
    members: tuple[int, ...] = ()  # the positions of its layers in the spec list


# (spec, max_model_len) -> pages one request takes in that spec's group
RequestPages = Callable[[LayerSpec, int], int]


class NotModelled(Exception):
    """A spec combination vLLM's grouping handles in a branch apron does not model."""


class Grouping(Record):
    """How vLLM lays out the KV cache: `layout` is "uniform" (one spec for every layer),
    "uniform_type" (one group, pages of different sizes summed: UniformTypeKVCacheSpecs) or
    "groups" (the hybrid allocator's groups of equal size, pages unified)."""

    layout: str
    groups: tuple[Group, ...]
    pool_block_bytes: int  # bytes one block id takes across the pool
    lines: tuple[str, ...]


def _promote(specs: Sequence[LayerSpec]) -> list[LayerSpec]:
    """_promote_local_kv_cache_specs: with the hybrid allocator disabled, sliding-window and
    chunked-local layers are allocated as full attention when a full-attention layer exists."""
    kinds = {s.kind for s in specs}
    if FULL not in kinds or not kinds & set(LOCAL):
        return list(specs)
    full_blocks = {s.block_tokens for s in specs if s.kind == FULL}
    block = next(iter(full_blocks)) if len(full_blocks) == 1 else None
    promoted = []
    for spec in specs:
        if spec.kind in LOCAL:
            target = block or spec.block_tokens
            per_token = spec.page_bytes // spec.block_tokens
            # FullAttentionSpec keeps the window (sliding_window / attention_chunk_size), so a
            # promoted layer is not the same spec as a plain full-attention one
            spec = LayerSpec(
                kind=FULL,
                block_tokens=target,
                page_bytes=per_token * target,
                window=spec.window,
                geometry=spec.geometry,
            )
        promoted.append(spec)
    return promoted


def _uniform_type(specs: Sequence[LayerSpec]) -> bool:
    """UniformTypeKVCacheSpecs.is_uniform_type: one block size and one kind (every full-attention
    spec is one kind whatever its window; local ones need the same window)."""
    kinds = {(s.kind, 0 if s.kind == FULL else s.window) for s in specs}
    return len({s.block_tokens for s in specs}) == 1 and len(kinds) == 1


def _unify_pages(specs: Sequence[LayerSpec]) -> list[LayerSpec]:
    """unify_kv_cache_spec_page_size: smaller attention pages take a larger block (an integer
    ratio of the largest page), Mamba pages are padded to it."""
    largest = max(s.page_bytes for s in specs)
    unified = []
    for spec in specs:
        if spec.page_bytes == largest:
            unified.append(spec)
        elif spec.kind == MAMBA:
            unified.append(spec._replace(page_bytes=largest))
        elif largest % spec.page_bytes == 0:
            unified.append(spec.scaled(largest // spec.page_bytes))
        else:
            raise NotModelled(
                f"a page of {spec.page_bytes:,} B does not divide the largest page "
                f"({largest:,} B): vLLM pads it only for backends that index by block stride, "
                "or falls back to full allocation for MLA with sliding windows"
            )
    return unified


def group_specs(specs: Sequence[LayerSpec], hybrid_allocator: bool = True) -> Grouping:
    """get_kv_cache_groups + the pool layout of get_kv_cache_config_from_groups."""
    if not specs:
        return Grouping("none", (), 0, ("no layer keeps a KV cache or state: no groups",))
    lines: list[str] = []
    if not hybrid_allocator:
        promoted = _promote(specs)
        if promoted != list(specs):
            lines.append(
                "hybrid KV cache manager disabled: windowed / chunked layers are allocated as "
                "full attention (_promote_local_kv_cache_specs)"
            )
        specs = promoted
    if len(set(specs)) == 1:
        spec = specs[0]
        lines.append(
            f"every layer has the same spec: one group of {len(specs)} layers, "
            f"page {spec.page_bytes:,} B ({spec.block_tokens} tokens)"
        )
        group = Group(spec, len(specs), len(specs), tuple(range(len(specs))))
        return Grouping("uniform", (group,), spec.page_bytes * len(specs), tuple(lines))
    if _uniform_type(specs):
        total = sum(s.page_bytes for s in specs)
        lines.append(
            f"one kind, pages of different sizes: one group of {len(specs)} layers, a block "
            f"takes the sum of their pages = {total:,} B (UniformTypeKVCacheSpecs)"
        )
        # the group's pages per request are those of its largest-page layer kind: one kind here
        group = Group(
            specs[0]._replace(page_bytes=total), len(specs), len(specs), tuple(range(len(specs)))
        )
        return Grouping("uniform_type", (group,), total, tuple(lines))
    unified = _unify_pages(specs)
    if unified != list(specs):
        lines.append(
            f"pages unified to {max(s.page_bytes for s in unified):,} B "
            "(unify_kv_cache_spec_page_size: larger blocks, Mamba pages padded)"
        )
    positions: dict[LayerSpec, list[int]] = {}
    for position, spec in enumerate(unified):
        positions.setdefault(spec, []).append(position)
    same = {spec: len(found) for spec, found in positions.items()}
    smallest, largest = min(same.values()), max(same.values())
    size = largest if largest < smallest * 1.5 else smallest
    groups: list[Group] = []
    for spec, count in same.items():
        number = -(-count // size)
        for index in range(number):
            members = tuple(positions[spec][index::number])
            groups.append(Group(spec, size, len(members), members))
    page = unified[0].page_bytes
    padding = sum(g.layers - g.real_layers for g in groups)
    kinds = ", ".join(
        f"{count} {spec.kind}" + (f" (window {spec.window:,})" if spec.window else "")
        for spec, count in same.items()
    )
    lines.append(
        f"layers by spec: {kinds}; group size {size} "
        f"({'the largest count, under 1.5x the smallest' if size == largest else 'the smallest count'}): "
        f"{len(groups)} groups" + (f", {padding} padding layers" if padding else "")
    )
    return Grouping("groups", tuple(groups), page * size, tuple(lines))


class KvCachePlan(Record):
    """vLLM's numbers for one budget and one max_model_len (per GPU)."""

    grouping: Grouping
    num_blocks: int
    blocks_per_request: int
    max_concurrency: float  # num_blocks / blocks_per_request, as vLLM logs it
    tokens: int  # vLLM's "GPU KV cache size": int(max_concurrency x max_model_len)
    needed_bytes: int  # one request at max_model_len (the startup check)
    fits_one_request: bool
    lines: tuple[str, ...]


def blocks_per_request(grouping: Grouping, max_model_len: int, pages: RequestPages) -> int:
    """Sum over groups of the pages one request at max_model_len takes in each."""
    return sum(pages(g.spec, max_model_len) for g in grouping.groups)


def needed_bytes(grouping: Grouping, max_model_len: int, pages: RequestPages) -> int:
    """_max_memory_usage_bytes_from_groups: one request at max_model_len, pool layout included."""
    if not grouping.groups:
        return 0
    return grouping.pool_block_bytes * blocks_per_request(grouping, max_model_len, pages)


def kv_cache_plan(
    grouping: Grouping, available: int, max_model_len: int, pages: RequestPages
) -> KvCachePlan:
    """Blocks in `available` bytes, blocks per request at max_model_len, concurrency, check."""
    lines = list(grouping.lines)
    if not grouping.groups:
        return KvCachePlan(
            grouping=grouping,
            num_blocks=1,
            blocks_per_request=0,
            max_concurrency=0.0,
            tokens=0,
            needed_bytes=0,
            fits_one_request=True,
            lines=tuple(lines),
        )
    blocks = max(available // grouping.pool_block_bytes, 0)
    per_group = [pages(g.spec, max_model_len) for g in grouping.groups]
    per_request = sum(per_group)
    concurrency = blocks / per_request if per_request else 0.0
    needed = grouping.pool_block_bytes * per_request
    lines.append(
        f"a block takes {grouping.pool_block_bytes:,} B of the pool; blocks = "
        f"floor({available:,} / {grouping.pool_block_bytes:,}) = {blocks:,}"
    )
    lines.append(
        f"one request at max_model_len {max_model_len:,}: "
        + " + ".join(f"{p:,}" for p in per_group)
        + f" = {per_request:,} blocks ({needed:,} B); max concurrency = {blocks:,} / "
        f"{per_request:,} = {concurrency:.2f}"
    )
    return KvCachePlan(
        grouping=grouping,
        num_blocks=blocks,
        blocks_per_request=per_request,
        max_concurrency=concurrency,
        tokens=int(concurrency * max_model_len),
        needed_bytes=needed,
        fits_one_request=needed <= available,
        lines=tuple(lines),
    )


def estimated_max_model_len(
    grouping: Grouping, available: int, upper: int, pages: RequestPages, batch: int = 1
) -> int:
    """_estimate_max_model_len_from_groups: the largest length (binary search over 1..upper) at
    which `batch` requests fit; 0 when not even one token does."""

    def fits(length: int) -> bool:
        return batch * needed_bytes(grouping, length, pages) <= available

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


def stage_pools(grouping: Grouping, specs: Sequence[LayerSpec], stages: Sequence[int]) -> list[int]:
    """The bytes one block id takes on each pipeline stage (`stages[i]` is the stage of
    specs[i]): vLLM groups the whole model's layers, then projects each group onto a worker's
    layers (_project_kv_cache_groups_to_worker) and sizes that worker's pool from them."""
    count = max(stages) + 1 if stages else 0
    pools = []
    for stage in range(count):
        on_stage = [[m for m in g.members if stages[m] == stage] for g in grouping.groups]
        if grouping.layout == "uniform_type":
            pools.append(sum(specs[m].page_bytes for m in on_stage[0]))
        elif grouping.layout == "uniform":
            pools.append(grouping.groups[0].spec.page_bytes * len(on_stage[0]))
        else:
            page = grouping.groups[0].spec.page_bytes
            pools.append(page * max(len(members) for members in on_stage))
    return pools


def pipeline_stages(num_layers: int, pp: int) -> list[int]:
    """vLLM's get_pp_indices (vllm/distributed/utils.py, cited): num_layers // pp per stage, the
    remainder one each to the stages before the last, from the second-to-last back; the stage of
    each layer, in order."""
    sizes = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        sizes[-i] += 1
    return [stage for stage, size in enumerate(sizes) for _ in range(size)]
