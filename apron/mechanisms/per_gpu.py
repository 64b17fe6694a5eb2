"""One engine's per-GPU share at --tp and what fits in --gpu-memory, from its extracted serving
rules (apron.serving_rules) and the mechanism figures; a rule the engine lacks gives `unknown`."""

from __future__ import annotations

from typing import Any

from apron import capacity as fit_rules
from apron import parallel
from apron.config import ModelConfig
from apron.layers import layout
from apron.mechanisms import full_attention, hybrid_ssm, mla_latent, recurrent
from apron.mechanisms.select import Selection, compute
from apron.results import Capacity, GpuShare, HeadCount, MechanismResult, Request

# an engine's package (apron.engines.<engine>, the protocol apron.engines.base.EngineRules); not
# imported here: apron/engines/ sits above this module
EngineRules = Any

SPLITTABLE = (full_attention.NAME, hybrid_ssm.NAME, recurrent.NAME, "sliding_window")
HYBRID_PAGE_UNKNOWN = "hybrid page size: the engine's page-size unification rule is not extracted"


def _unknown(tp: int, reasons: tuple[str, ...], weights: int | None, lines=()) -> GpuShare:
    return GpuShare(
        status="unknown",
        kv_heads_per_gpu=None,
        kv_heads_how="",
        kv_bytes_per_token=None,
        kv_bytes_at_context=None,
        state_bytes_per_sequence=None,
        weights_bytes=weights,
        refused=(),
        valid_tp=(),
        unknown=reasons,
        arithmetic=lines,
    )


def _reasons(rules, field: str) -> tuple[str, ...]:
    return tuple(u for u in rules.unknown if u.startswith(field)) or (f"{field}: not extracted",)


# The dimensions apron.state_shapes divides by tp, per MambaStateShapeCalculator method; the
# engine's extracted ssm_tp_splits must name the same ones, or the per-GPU state is unknown.
STATE_SPLITS = {
    "mamba1": frozenset({"intermediate_size"}),
    "mamba2": frozenset({"conv_dim", "num_heads"}),
    "gated_delta_net": frozenset({"conv_dim", "num_v_heads"}),
    "short_conv": frozenset({"intermediate_size"}),
    "linear_attention": frozenset({"num_heads"}),
}


def _refusals(
    model: ModelConfig, rules, config, tp: int, checks: dict, engine: EngineRules
) -> tuple[str, ...]:
    """The engine's extracted tp checks, and the refusals it reads by hand (its tp_refusals)."""
    from apron import serving_rules as sr

    return (*sr.tp_check(rules, config, tp, **checks), *engine.tp_refusals(model, tp))


def _valid_tp(
    model: ModelConfig, rules, config, checks: dict, engine: EngineRules
) -> tuple[int, ...]:
    return tuple(t for t in range(1, 65) if not _refusals(model, rules, config, t, checks, engine))


def _state_split_mismatch(rules, calculator: str | None) -> str:
    """Why the engine's extracted state split does not back apron's per-GPU state ("" if it does)."""
    if calculator is None:
        return "state per GPU: no state rule for this model type, so how it splits is unknown"
    extracted = frozenset(
        d.split(".", 1)[1] for d in rules.ssm_split_dims if d.split(".", 1)[0] == calculator
    )
    if not extracted:
        return (
            f"state per GPU: the engine's split of {calculator} is not among its extracted "
            "ssm_tp_splits"
        )
    if extracted != STATE_SPLITS.get(calculator):
        return (
            f"state per GPU: the engine divides {calculator} along "
            f"{', '.join(sorted(extracted))}; apron's reading divides "
            f"{', '.join(sorted(STATE_SPLITS.get(calculator, ())))}"
        )
    return ""


def _weights(weights_total: int | None, tp: int) -> tuple[int | None, list[str]]:
    if weights_total is None:
        return None, []
    weights, line = parallel.weights_per_gpu(weights_total, tp)
    return weights, [line, parallel.REPLICATED_TENSORS_NOTE] if tp > 1 else [line]


def _mla_share(
    model: ModelConfig,
    tp: int,
    rules,  # apron.serving_rules.ServingRules
    heads: HeadCount,
    figures: MechanismResult,
    weights_total: int | None,
    engine: EngineRules,
) -> GpuShare:
    """An MLA model's share: the latent is one KV head, replicated on every GPU (the engine's
    extracted mla_kv_heads_per_gpu rule; vLLM ModelConfig.get_num_kv_heads returns 1 for MLA at
    every tp), so each GPU holds the whole latent cache; a tp the engine refuses is refused."""
    from apron import serving_rules as sr

    weights, lines = _weights(weights_total, tp)
    if tp > 1:
        config = model.raw if model.text_key is None else model.text
        checks = {"total_kv_heads": heads.count, "is_mla": True}
        refused = _refusals(model, rules, config, tp, checks, engine)
        if refused:
            valid = _valid_tp(model, rules, config, checks, engine)
            return GpuShare(
                status="refused",
                kv_heads_per_gpu=None,
                kv_heads_how="",
                kv_bytes_per_token=None,
                kv_bytes_at_context=None,
                state_bytes_per_sequence=None,
                weights_bytes=weights,
                refused=refused,
                valid_tp=valid,
                unknown=(),
                arithmetic=(),
            )
    if not rules.mla_latent_replicated:
        if tp == 1:
            whole = parallel.whole_model_share(heads, figures, weights_total)
            return whole._replace(kv_heads_per_gpu=None, kv_heads_how="")
        return _unknown(tp, _reasons(rules, "mla_latent_replicated"), weights)
    per_gpu = sr.kv_heads_per_gpu(rules, heads.count or 0, tp, True)
    how = f"MLA latent: the engine's MLA KV-head rule gives {per_gpu} per GPU at every tp"
    if tp == 1:
        pass
    elif figures.kv_bytes_per_token is None:
        lines.append("MLA latent: replicated on every GPU; its bytes per token are unknown")
    else:
        lines.append(
            "MLA latent: replicated on every GPU (the engine's MLA KV-head rule gives 1 per GPU), "
            f"so each GPU holds the whole {figures.kv_bytes_per_token:,} B/token"
        )
    return GpuShare(
        status="split",
        kv_heads_per_gpu=per_gpu,
        kv_heads_how=how,
        kv_bytes_per_token=figures.kv_bytes_per_token,
        kv_bytes_at_context=figures.kv_bytes_at_context,
        state_bytes_per_sequence=figures.state_bytes_per_sequence,
        weights_bytes=weights,
        refused=(),
        valid_tp=(),
        unknown=figures.unknown,
        arithmetic=tuple(lines),
    )


def gpu_share(
    model: ModelConfig,
    request: Request,
    tp: int,
    rules,  # apron.serving_rules.ServingRules
    selection: Selection,
    heads: HeadCount,
    figures: MechanismResult,
    weights_total: int | None,
    *,
    engine: EngineRules,
) -> GpuShare:
    """The engine's figures for one GPU: weights / tp, KV heads by its rule, state by its split;
    `engine` (its package, apron.engines.<engine>) adds the tp refusals it reads by hand."""
    if figures.mechanism == mla_latent.NAME:
        return _mla_share(model, tp, rules, heads, figures, weights_total, engine)
    if tp == 1:
        return parallel.whole_model_share(heads, figures, weights_total)
    weights, lines = _weights(weights_total, tp)
    from apron import serving_rules as sr

    config = model.raw if model.text_key is None else model.text
    checks = {"total_kv_heads": heads.count, "is_mla": False}
    refused = _refusals(model, rules, config, tp, checks, engine)
    if refused:
        valid = _valid_tp(model, rules, config, checks, engine)
        return GpuShare(
            status="refused",
            kv_heads_per_gpu=None,
            kv_heads_how="",
            kv_bytes_per_token=None,
            kv_bytes_at_context=None,
            state_bytes_per_sequence=None,
            weights_bytes=weights,
            refused=refused,
            valid_tp=valid,
            unknown=(),
            arithmetic=(),
        )
    if figures.kv_bytes_per_token == 0 and figures.state_bytes_per_sequence == 0:
        lines.append(f"no KV cache and no state ({figures.mechanism}): nothing to split")
        share, how = None, ""
        if heads.count is not None and rules.kv_heads_split is not None:
            share = sr.kv_heads_per_gpu(rules, heads.count, tp, False)
            how = f"{heads.count} KV heads at tp {tp} (the layers keep no cache): {share}"
        return GpuShare(
            status="split",
            kv_heads_per_gpu=share,
            kv_heads_how=how,
            kv_bytes_per_token=0,
            kv_bytes_at_context=0,
            state_bytes_per_sequence=0,
            weights_bytes=weights,
            refused=(),
            valid_tp=(),
            unknown=(),
            arithmetic=tuple(lines),
        )
    if figures.mechanism not in SPLITTABLE:
        return _unknown(
            tp, (f"per-GPU split of a {figures.mechanism} cache is not implemented",), weights
        )
    if figures.kv_bytes_per_token and rules.kv_heads_split is None:
        return _unknown(tp, _reasons(rules, "kv_heads_split"), weights)
    mismatch = ""
    if figures.state_bytes_per_sequence:
        from apron.state_shapes import rule_for

        rule = rule_for(model)
        mismatch = _state_split_mismatch(rules, rule.calculator if rule else None)
        refused = engine.state_tp_refusal(model, rule, tp)
        if refused:
            valid = tuple(
                t
                for t in sr.valid_tp_sizes(config, rules, **checks)
                if not engine.state_tp_refusal(model, rule, t)
            )
            return GpuShare(
                status="refused",
                kv_heads_per_gpu=None,
                kv_heads_how="",
                kv_bytes_per_token=None,
                kv_bytes_at_context=None,
                state_bytes_per_sequence=None,
                weights_bytes=weights,
                refused=(refused,),
                valid_tp=valid,
                unknown=(),
                arithmetic=(),
            )
    split = heads_per_gpu(model, heads, tp, rules)
    shared = compute(selection, model, split, request._replace(tp=tp))
    lines.extend(shared.arithmetic)
    if heads.count is not None and heads.count < tp and rules.kv_heads_split == sr.SPLIT_REPLICATE:
        lines.append(
            f"{heads.count} KV heads < tp {tp}: each GPU holds one replica of a KV head "
            f"({tp // max(heads.count, 1)} GPUs share each head)"
        )
    if mismatch:  # the KV heads split by their own rule; only the state's share is unknown
        return GpuShare(
            status="unknown",
            kv_heads_per_gpu=split.count,
            kv_heads_how=split.how,
            kv_bytes_per_token=shared.kv_bytes_per_token,
            kv_bytes_at_context=shared.kv_bytes_at_context,
            state_bytes_per_sequence=None,
            weights_bytes=weights,
            refused=(),
            valid_tp=(),
            unknown=(mismatch,),
            arithmetic=tuple(lines),
        )
    return GpuShare(
        status="split",
        kv_heads_per_gpu=split.count,
        kv_heads_how=split.how,
        kv_bytes_per_token=shared.kv_bytes_per_token,
        kv_bytes_at_context=shared.kv_bytes_at_context,
        state_bytes_per_sequence=shared.state_bytes_per_sequence,
        weights_bytes=weights,
        refused=(),
        valid_tp=(),
        unknown=shared.unknown,
        arithmetic=tuple(lines),
    )


def heads_per_gpu(model: ModelConfig, heads: HeadCount, tp: int, rules) -> HeadCount:
    """The KV heads one GPU holds under the engine's extracted split rule (each layer kind its
    own heads where windowed and full layers differ)."""
    from apron import serving_rules as sr

    if tp == 1:
        return heads
    rule_text = (
        f"max(1, heads // {tp})" if rules.kv_heads_split == sr.SPLIT_REPLICATE else f"heads // {tp}"
    )
    per_gpu = lambda total: sr.kv_heads_per_gpu(rules, total, tp, False) or 0  # noqa: E731
    split = parallel.split_heads(heads, tp, per_gpu, rule_text)
    by_kind = _kind_heads(model, heads)
    if by_kind and heads.count is not None:
        # layers of each kind split their own heads; the count stays the config's (what vLLM's
        # ModelConfig.get_num_kv_heads answers)
        kinds_split = parallel.split_heads(
            heads._replace(per_layer=by_kind), tp, per_gpu, rule_text
        )
        split = kinds_split._replace(count=split.count, how=f"{split.how}; {kinds_split.how}")
    return split


def _kind_heads(model: ModelConfig, heads: HeadCount) -> tuple[int, ...]:
    """Per-layer KV heads when windowed and full layers have their own geometry (apron.layers
    kind_geometry), for a config whose heads are one count; () otherwise."""
    from apron.layers import kind_geometry, kind_heads

    geometry = kind_geometry(model)
    structure = layout(model)
    if heads.per_layer or not isinstance(geometry, dict) or structure is None:
        return ()
    if structure.unknown:
        return ()
    return kind_heads(geometry, structure.kinds)


def _block_tokens(rules, is_mla: bool, unknown: list[str]) -> tuple[int | None, str]:
    """The block the engine allocates in: the block size its first default attention backend
    picks where the engine's backend lists are extracted, else its block-size default."""
    from apron.serving_rules import first_backend_block

    first = first_backend_block(rules, is_mla) if rules.backend_blocks else None
    if first is None:
        return rules.block_tokens, rules.block_tokens_source
    branch = f"{'MLA' if is_mla else 'attention'} backends on GPUs no condition singles out"
    if first.block_tokens is None:
        unknown.append(f"block size: {first.backend}, first of the {branch}: {first.reason}")
        return None, first.reason
    return first.block_tokens, (
        f"{first.backend}, first of the {branch}, picks {first.block_tokens} "
        f"({first.branch}); default {rules.block_tokens_source}"
    )


def engine_capacity(
    model: ModelConfig,
    mechanism: str,
    share: GpuShare,
    rules,  # apron.serving_rules.ServingRules
    gpu_memory: int,
    fraction_override: float | None,
    context: int | None,
    weights_unknown: str,
) -> Capacity:
    """What fits on one GPU for one engine, or unknown with the rule or figure that is missing."""
    if fraction_override is not None:
        fraction, fraction_source = fraction_override, "--memory-fraction"
    else:
        fraction, fraction_source = rules.memory_fraction, rules.memory_fraction_source
    unknown: list[str] = []
    block, block_source = _block_tokens(rules, mechanism == mla_latent.NAME, unknown)
    notes = [fit_rules.NOT_MODELLED]
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
    if share.status == "split" and (
        share.kv_bytes_per_token is None or share.state_bytes_per_sequence is None
    ):
        unknown.append("KV or state bytes per GPU unknown: " + "; ".join(share.unknown))
    if mechanism not in (full_attention.NAME, mla_latent.NAME, hybrid_ssm.NAME, recurrent.NAME):
        unknown.append(
            f"capacity of a {mechanism} cache: the engine's per-group block accounting for it "
            "is not modelled"
        )
    lines: list[str] = []
    state = share.state_bytes_per_sequence or 0
    if not unknown and mechanism == hybrid_ssm.NAME and share.kv_bytes_per_token and state:
        # a hybrid's attention block follows the engine's page-size unification rule, which
        # only an engine's own fit applies (vLLM's: apron.engines.vllm.hybrid_page)
        unknown.append(HYBRID_PAGE_UNKNOWN)
    if mechanism == recurrent.NAME:
        notes.append(
            "attention-free: the engine still allocates one state page per sequence per layer; "
            "the figure is the state tensors"
        )
    if unknown:
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
            unknown=tuple(unknown),
            arithmetic=tuple(lines),
            notes=tuple(notes),
        )
    assert fraction is not None and block is not None and share.weights_bytes is not None
    found_fit = fit_rules.fit(
        gpu_memory=gpu_memory,
        fraction=fraction,
        weights_per_gpu=share.weights_bytes,
        kv_bytes_per_token=share.kv_bytes_per_token or 0,
        state_bytes_per_sequence=state,
        block_tokens=block,
        context=context,
    )
    return Capacity(
        gpu_memory_bytes=gpu_memory,
        memory_fraction=fraction,
        memory_fraction_source=fraction_source,
        block_tokens=block,
        block_tokens_source=block_source,
        budget_bytes=found_fit.budget_bytes,
        blocks=found_fit.blocks,
        block_bytes=found_fit.block_bytes,
        kv_tokens=found_fit.kv_tokens,
        blocks_per_sequence=found_fit.blocks_per_sequence,
        sequence_bytes=found_fit.sequence_bytes,
        sequences=found_fit.sequences,
        limit=found_fit.limit,
        unknown=found_fit.unknown,
        arithmetic=(*lines, *found_fit.arithmetic),
        notes=tuple(notes),
    )
