"""An engine's serving rules for a capacity planner, read from its generated rows: the KV block
size, the memory fraction, how tensor parallelism splits KV heads and recurrent state, what tp
must divide, and the hybrid page-size rule. Each field is None (or empty) when the engine's rows
lack it, with the reason in `unknown`: no figure comes from a rule the engine lacks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apron.constraints import Citation, EngineConstraints
from apron.expressions import PYTHON, Unknown, evaluate, infix
from apron.record import Record

SERVING_DEFAULTS = "serving_defaults"
TP_RULES = "tp_rules"
SSM_TP_SPLITS = "ssm_tp_splits"
HYBRID_PAGE_RULES = "hybrid_page_rules"
ATTENTION_BACKENDS = "attention_backends"
SPLIT_REPLICATE = "split_replicate"
SPLIT = "split"


class HybridPage(Record):
    """The engine's rule for a hybrid model's attention block size (default cache mode).

    shape "align_ceil": block = align * ceil(mamba_page / (align * attn_page_per_token)),
    where align = max(min(kernel block sizes of the attention backend), block size) when
    `alignment_floor_is_block_size`; the block is only raised (`raises_only`), and the mamba
    page is padded to the attention page (`pads_mamba_page`).
    shape "chunk_align_ceil" (mamba_cache_mode "all"): chunk = lcm(the mamba chunk size,
    align), block = chunk * ceil(ceil(mamba_page / attn_page_per_token) / chunk)."""

    shape: str
    alignment: str  # the engine's code for the alignment
    alignment_floor_is_block_size: bool
    kernel_sizes_from: str
    # the smallest kernel block size of the first backend of the default (non-MLA) CUDA list;
    # None when not extracted
    kernel_min_block: int | None
    raises_only: bool
    pads_mamba_page: bool
    formula: str
    other_modes: tuple[str, ...]  # the other branches, "condition: shape"


class BackendBlock(Record):
    """One CUDA attention backend of the engine's priority lists and the block size it gives.
    The engine picks, at startup, the first listed backend that supports the GPU and config."""

    use_mla: bool
    branch: str  # the conditions of the list, in the engine's words
    default_branch: bool  # the list for GPUs no condition singles out
    rank: int
    backend: str
    block_tokens: int | None
    reason: str  # why block_tokens is None; "" otherwise


class ServingRules(Record):
    """What one engine's source says a planner needs; None / () = not extracted (see unknown)."""

    engine: str
    block_tokens: int | None
    block_tokens_source: str
    memory_fraction: float | None
    memory_fraction_source: str
    kv_heads_split: str | None
    mla_latent_replicated: bool | None
    tp_must_divide: tuple[str, ...]  # config keys tp must divide
    ssm_split_dims: tuple[str, ...]  # "calculator.dividend", e.g. "mamba2.num_heads"
    hybrid_page_rule: HybridPage | None
    citations: tuple[Citation, ...]
    unknown: tuple[str, ...]
    # "divides_or_divided": tp is a multiple of the KV heads when at least their number, else
    # divides them; None when the engine's rows have no such rule
    kv_heads_tp_rule: str | None = None
    backend_blocks: tuple[BackendBlock, ...] = ()
    # the smallest kernel block size of the first backend of the default non-MLA list: the block
    # a sliding-window layer takes (vLLM Attention.get_kv_cache_spec); None when not extracted
    kernel_min_block: int | None = None
    # the rule under mamba_cache_mode "all" (prefix caching on a class that supports it)
    hybrid_page_rule_all: HybridPage | None = None


def _where(row: Any) -> str:
    return f"{row.path}::{row.symbol}"


def _default(engine: EngineConstraints, role: str, cites: list[Citation], unknown: list[str]):
    """(value text, source words) of the serving default with `role`; value "" when unknown."""
    rows = [r for r in engine.rows(SERVING_DEFAULTS) if r.role == role]
    if not rows:
        why = (
            f"{engine.engine} has no {SERVING_DEFAULTS} rows"
            if not engine.has(SERVING_DEFAULTS)
            else f"{engine.engine} extracted no {role} default"
        )
        unknown.append(f"{role}: {why}")
        return "", why
    row = rows[0]
    cites.append(engine.cite(row))
    if row.kind in ("literal", "cuda"):
        on = " on CUDA" if row.kind == "cuda" else ""
        extra = f" ({row.reason})" if row.reason else ""
        return row.value, f"{row.setting} = {row.value}{on}{extra}, {_where(row)}"
    by = f" by {row.computed_by}" if row.computed_by else ""
    why = f"{row.setting} is {row.kind}{by}: {row.reason}, {_where(row)}"
    unknown.append(f"{role}: {why}")
    return "", why


def _tp(engine: EngineConstraints, cites: list[Citation], unknown: list[str]):
    rows = {r.rule: r for r in engine.rows(TP_RULES)}
    split = rows.get("kv_heads_per_gpu")
    kv_heads_split = None
    if split is None:
        unknown.append(f"kv_heads_split: {engine.engine} has no kv_heads_per_gpu rule")
    elif split.shape in (SPLIT_REPLICATE, SPLIT):
        kv_heads_split = split.shape
        cites.append(engine.cite(split))
    else:
        unknown.append(f"kv_heads_split: {split.shape} rule {split.code}, {_where(split)}")
    mla = rows.get("mla_kv_heads_per_gpu")
    mla_replicated = None
    if mla is None:
        unknown.append(f"mla_latent_replicated: {engine.engine} has no mla_kv_heads_per_gpu rule")
    elif mla.shape == "replicated" or (mla.shape == "constant" and mla.constant == 1):
        mla_replicated = True
        cites.append(engine.cite(mla))
    else:
        unknown.append(f"mla_latent_replicated: {mla.shape} rule {mla.code}, {_where(mla)}")
    divide = [r for r in rows.values() if r.rule.endswith("_divisible") and r.shape == "divides"]
    if not any(r.rule == "attention_heads_divisible" for r in divide):
        unknown.append(f"tp_must_divide: {engine.engine} has no attention_heads_divisible rule")
    cites.extend(engine.cite(r) for r in divide)
    must_divide = tuple(sorted({k for r in divide for k in r.keys}))
    kv_rule = rows.get("kv_heads_divisible")
    kv_tp_rule = None
    if kv_rule is not None and kv_rule.shape == "divides_or_divided":
        kv_tp_rule = kv_rule.shape
        cites.append(engine.cite(kv_rule))
    return kv_heads_split, mla_replicated, must_divide, kv_tp_rule


def _ssm(engine: EngineConstraints, cites: list[Citation], unknown: list[str]):
    rows = engine.rows(SSM_TP_SPLITS)
    if not rows:
        unknown.append(f"ssm_split_dims: {engine.engine} has no {SSM_TP_SPLITS} rows")
        return ()
    cites.extend(dict.fromkeys(engine.cite(r) for r in rows))
    return tuple(sorted(f"{r.calculator}.{r.dividend}" for r in rows))


def _kernel_base(size: str) -> int:
    return int(size.removeprefix("MultipleOf(").removesuffix(")"))


def _backends(engine: EngineConstraints) -> tuple[BackendBlock, ...]:
    return tuple(
        BackendBlock(
            use_mla=r.use_mla,
            branch=r.branch,
            default_branch=r.default_branch,
            rank=r.rank,
            backend=r.backend,
            block_tokens=r.preferred_block,
            reason=r.reason,
        )
        for r in engine.rows(ATTENTION_BACKENDS)
    )


def _kernel_min_block(engine: EngineConstraints) -> int | None:
    """The smallest kernel block size of the first backend of the default non-MLA list."""
    for row in engine.rows(ATTENTION_BACKENDS):
        if not row.use_mla and row.default_branch and row.rank == 0 and row.kernel_block_sizes:
            return min(_kernel_base(size) for size in row.kernel_block_sizes)
    return None


DEFAULT_MODE = "none"  # a mamba_cache_mode other than "all": vllm serve's, prefix caching off


def _runs_for(condition: Any, mode: str) -> bool:
    """Whether a hybrid page branch runs for mamba_cache_mode `mode` (False when its condition
    reads anything else)."""
    if condition == ():
        return True
    try:
        return bool(evaluate(condition, {"mamba_cache_mode": mode}, None, PYTHON))
    except Unknown:
        return False


def _hybrid(
    engine: EngineConstraints,
    cites: list[Citation],
    unknown: list[str],
    mode: str | None = None,
):
    """The hybrid page rule of the default cache mode, or of mamba_cache_mode `mode`: the first
    row whose condition holds for it (the default: a mode other than "all"; "none" and "align"
    take the same branch)."""
    rows = engine.rows(HYBRID_PAGE_RULES)
    chosen = [r for r in rows if _runs_for(r.when, DEFAULT_MODE if mode is None else mode)]
    if not chosen:
        if mode is None:
            unknown.append(f"hybrid_page_rule: {engine.engine} has no {HYBRID_PAGE_RULES} rows")
        return None
    row = chosen[0]
    cites.append(engine.cite(row))
    others = tuple(f"{infix(r.when)}: {r.shape}" for r in rows if r is not row)
    return HybridPage(
        shape=row.shape,
        alignment=row.alignment,
        alignment_floor_is_block_size=row.alignment_floor_is_block_size,
        kernel_sizes_from=row.kernel_sizes_from,
        kernel_min_block=_kernel_min_block(engine),
        raises_only=row.raises_only,
        pads_mamba_page=row.pads_mamba_page,
        formula=row.formula,
        other_modes=others,
    )


def serving_rules(engine: EngineConstraints | None, engine_id: str) -> ServingRules:
    """The serving rules of one engine from its generated rows (all unknown when it has none)."""
    if engine is None:
        why = f"{engine_id} has no generated constraints"
        return ServingRules(
            engine=engine_id,
            block_tokens=None,
            block_tokens_source=why,
            memory_fraction=None,
            memory_fraction_source=why,
            kv_heads_split=None,
            mla_latent_replicated=None,
            tp_must_divide=(),
            ssm_split_dims=(),
            hybrid_page_rule=None,
            citations=(),
            unknown=(why,),
        )
    cites: list[Citation] = []
    unknown: list[str] = []
    block, block_source = _default(engine, "block_tokens", cites, unknown)
    fraction, fraction_source = _default(engine, "memory_fraction", cites, unknown)
    kv_split, mla, must_divide, kv_tp_rule = _tp(engine, cites, unknown)
    ssm = _ssm(engine, cites, unknown)
    hybrid = _hybrid(engine, cites, unknown)
    cites.extend(
        engine.cite(r) for r in engine.rows(ATTENTION_BACKENDS) if r.default_branch and r.rank == 0
    )
    return ServingRules(
        engine=engine_id,
        block_tokens=int(block) if block else None,
        block_tokens_source=block_source,
        memory_fraction=float(fraction) if fraction else None,
        memory_fraction_source=fraction_source,
        kv_heads_split=kv_split,
        mla_latent_replicated=mla,
        tp_must_divide=must_divide,
        ssm_split_dims=ssm,
        hybrid_page_rule=hybrid,
        citations=tuple(dict.fromkeys(cites)),
        unknown=tuple(unknown),
        kv_heads_tp_rule=kv_tp_rule,
        backend_blocks=_backends(engine),
        kernel_min_block=_kernel_min_block(engine),
        hybrid_page_rule_all=_hybrid(engine, [], [], "all"),
    )


def first_backend_block(rules: ServingRules, use_mla: bool) -> BackendBlock | None:
    """The first backend of the default CUDA list for this attention kind (None when the
    engine's rows have no such list): what the engine prefers on GPUs no condition singles out."""
    return next(
        (b for b in rules.backend_blocks if b.use_mla == use_mla and b.default_branch),
        None,
    )


def kv_heads_per_gpu(rules: ServingRules, total_kv_heads: int, tp: int, is_mla: bool) -> int | None:
    """KV heads one GPU holds under the engine's rule; None when the rule is not extracted."""
    if tp < 1 or total_kv_heads < 0:
        raise ValueError(f"tp must be >= 1 and heads >= 0, not tp={tp}, heads={total_kv_heads}")
    if is_mla:
        return 1 if rules.mla_latent_replicated else None
    if rules.kv_heads_split == SPLIT_REPLICATE:
        return max(1, total_kv_heads // tp)
    if rules.kv_heads_split == SPLIT:
        return total_kv_heads // tp
    return None


def divisors(value: int, up_to: int | None = None) -> tuple[int, ...]:
    """The positive divisors of `value` (at most `up_to`), ascending."""
    limit = value if up_to is None else min(value, up_to)
    return tuple(d for d in range(1, limit + 1) if value % d == 0)


def _int(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    if value is None and isinstance(config.get("text_config"), Mapping):
        value = config["text_config"].get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def tp_check(
    rules: ServingRules,
    config: Mapping[str, Any],
    tp: int,
    *,
    total_kv_heads: int | None = None,
    is_mla: bool = False,
) -> tuple[str, ...]:
    """Why the engine refuses `tp` for this config (empty = accepted by the extracted checks);
    each refusal names the tp sizes that work. `total_kv_heads` (the engine's count, after its
    alias scan) adds the KV-head check where the engine has one; MLA models skip it."""
    if tp < 1:
        raise ValueError(f"tp must be >= 1, not {tp}")
    errors = []
    for key in rules.tp_must_divide:
        value = _int(config, key)
        if value is None:
            continue
        if value % tp:
            works = ", ".join(map(str, divisors(value)))
            errors.append(
                f"{rules.engine}: {key} = {value} is not divisible by tp {tp}; "
                f"tp sizes that divide it: {works}"
            )
    kv = total_kv_heads
    if rules.kv_heads_tp_rule == "divides_or_divided" and not is_mla and kv and kv > 0:
        if (tp >= kv and tp % kv) or (tp < kv and kv % tp):
            errors.append(
                f"{rules.engine}: {kv} KV heads and tp {tp}: tp must divide the KV heads or be "
                f"a multiple of them; tp sizes that work: {', '.join(map(str, divisors(kv)))} "
                f"or a multiple of {kv}"
            )
    return tuple(errors)


def valid_tp_sizes(
    config: Mapping[str, Any],
    rules: ServingRules,
    up_to: int = 64,
    *,
    total_kv_heads: int | None = None,
    is_mla: bool = False,
) -> tuple[int, ...]:
    """The tp sizes up to `up_to` that pass every extracted check."""
    return tuple(
        tp
        for tp in range(1, up_to + 1)
        if not tp_check(rules, config, tp, total_kv_heads=total_kv_heads, is_mla=is_mla)
    )
