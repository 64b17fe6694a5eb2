"""Compute a plan: apron's own prediction, each engine's view at its pin, and engine support."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron.config import ModelConfig, load_config
from apron.constraints import ENGINE_TITLES, ConstraintSet, EngineConstraints, load_constraints
from apron.engines import ENGINE_RULES
from apron.engines import vllm as vllm_rules
from apron.engines.base import EngineDecision
from apron.errors import ApronInputError
from apron.mechanisms import mla_latent, no_kv_cache
from apron.mechanisms.base import is_mla_shaped
from apron.results import (
    PREDICTION,
    EngineStamp,
    EngineSupport,
    EngineView,
    HeadCount,
    MechanismResult,
    Plan,
    Request,
)
from apron.select import compute, select
from apron.support import support

KV_DTYPES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
CONTEXT_KEYS = ("max_position_embeddings",)


def make_request(model: ModelConfig, context: int | None, kv_dtype: str, batch: int) -> Request:
    """Validate the options; a context of None means the config's own maximum (when it has one)."""
    if kv_dtype not in KV_DTYPES:
        raise ApronInputError(f"unknown KV dtype {kv_dtype!r}; use one of {', '.join(KV_DTYPES)}")
    if context is not None and context <= 0:
        raise ApronInputError(f"context must be a positive number of tokens, got {context}")
    if batch <= 0:
        raise ApronInputError(f"batch must be at least 1, got {batch}")
    source = "--context"
    if context is None:
        context = model.integer("max_position_embeddings")
        key = model.key_of("max_position_embeddings")
        source = (
            f"the config's {key}"
            if context is not None
            else "none: no --context and no max_position_embeddings in the config"
        )
    return Request(context, source, kv_dtype, KV_DTYPES[kv_dtype], batch)


def _encoder_decoder_section(model: ModelConfig, vllm: EngineConstraints | None) -> str:
    if vllm is None or model.architecture is None:
        return ""
    for row in vllm.rows("registry_rows"):
        if row.architecture == model.architecture and "encoder-decoder" in str(row.section).lower():
            return f"vLLM's registry files {model.architecture} under [Encoder-decoder]"
    return ""


def _figures_differ(a: MechanismResult, b: MechanismResult) -> bool:
    return (
        a.mechanism,
        a.kv_bytes_per_token,
        a.kv_bytes_at_context,
        a.state_bytes_per_sequence,
    ) != (b.mechanism, b.kv_bytes_per_token, b.kv_bytes_at_context, b.state_bytes_per_sequence)


def _view(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints | None,
    decision: EngineDecision | None,
    apron_heads: HeadCount,
    flags: frozenset[str],
    enc_dec: str,
    prediction: MechanismResult,
    support_entry: EngineSupport,
) -> EngineView:
    title = ENGINE_TITLES.get(engine_id, engine_id)
    if constraints is None or decision is None:
        return EngineView(
            engine_id,
            title,
            None,
            "constraints absent",
            None,
            (),
            None,
            None,
            None,
            None,
            None,
            False,
            (
                f"no generated/{engine_id}/ module: apron has none of {title}'s rules, "
                "so it cannot say what it would allocate",
            ),
            (),
        )
    notes = list(decision.notes)
    cites = list(decision.citations)
    registered = (
        support_entry.status == "registered"
        if support_entry.status in ("registered", "not registered")
        else None
    )
    if registered is False:
        notes.append(
            f"{model.architecture} is not in {title}'s registry at this commit: it could "
            "load only through a generic fallback (e.g. a Transformers backend), which "
            "apron does not model"
        )
    if not decision.computes_figures:
        return EngineView(
            engine_id,
            title,
            constraints.commit,
            "constraints used",
            registered,
            decision.flags,
            None,
            None,
            None,
            None,
            None,
            False,
            (
                *notes,
                f"byte figures: {title}'s KV sizing rules are not among the extracted constraints",
            ),
            tuple(cites),
        )
    heads = decision.kv_heads or apron_heads
    if decision.own_flags:
        flags = frozenset(decision.flags)
    mla = decision.mla.is_mla if decision.mla is not None else None
    if decision.mla is not None:
        notes.insert(
            0, f"MLA: {'yes' if mla else 'no' if mla is False else 'unknown'}: {decision.mla.why}"
        )
        cites.extend(decision.mla.citations)
    cites.extend(heads.citations)
    selection = select(
        model, mla=bool(mla), heads=heads, flags=flags, encoder_decoder_section=enc_dec
    )
    figures = (
        no_kv_cache.compute(decision.no_kv_cache)
        if decision.no_kv_cache
        else compute(selection, model, heads, request)
    )
    if decision.no_kv_cache:
        notes.insert(0, decision.no_kv_cache)
    if mla is None and is_mla_shaped(model) and not decision.no_kv_cache:
        notes.append(
            f"whether {title} treats this config as MLA is unknown; shown as full attention"
        )
    if mla is False and is_mla_shaped(model) and figures.mechanism != mla_latent.NAME:
        latent = mla_latent.compute(model, heads, request)
        if latent.kv_bytes_per_token and figures.kv_bytes_per_token:
            notes.append(
                f"MLA-shaped config allocated as full attention: "
                f"{figures.kv_bytes_per_token / latent.kv_bytes_per_token:.1f}x the MLA "
                f"latent figure ({latent.kv_bytes_per_token:,} B/token)"
            )
    if figures.unknown:
        notes.extend(f"unknown: {u}" for u in figures.unknown)
    return EngineView(
        engine_id,
        title,
        constraints.commit,
        "constraints used",
        registered,
        decision.flags,
        figures.mechanism,
        figures.kv_bytes_per_token,
        figures.kv_bytes_at_context,
        figures.naive_kv_bytes_at_context,
        figures.state_bytes_per_sequence,
        _figures_differ(figures, prediction),
        tuple(dict.fromkeys(notes)),
        tuple(dict.fromkeys(cites)),
    )


def plan(
    config: ModelConfig | str | Path | Mapping[str, Any],
    *,
    context: int | None = None,
    kv_dtype: str = "bf16",
    batch: int = 1,
    constraints: ConstraintSet | None = None,
) -> Plan:
    """A labelled prediction for one config, citing the engine commits whose rules it used."""
    model = config if isinstance(config, ModelConfig) else load_config(config)
    request = make_request(model, context, kv_dtype, batch)
    cs = constraints if constraints is not None else load_constraints()
    vllm = cs.get("vllm")
    apron_heads, _ = vllm_rules.resolve_kv_heads(model, vllm)
    decisions: dict[str, EngineDecision] = {}
    for engine_id, engine in cs.engines.items():
        rules = ENGINE_RULES.get(engine_id)
        if engine is not None and rules is not None:
            try:
                decisions[engine_id] = rules.decide(model, engine)
            except Exception as err:  # generated rows of a shape this apron does not know
                decisions[engine_id] = EngineDecision(
                    engine_id,
                    None,
                    None,
                    (),
                    (f"could not interpret generated/{engine_id} ({type(err).__name__}: {err})",),
                    (),
                    computes_figures=False,
                )
    flags = frozenset(f for d in decisions.values() for f in d.flags)
    mla_votes = [d.mla for d in decisions.values() if d.mla is not None]
    apron_mla = any(m.is_mla for m in mla_votes)
    enc_dec = _encoder_decoder_section(model, vllm)
    selection = select(
        model, mla=apron_mla, heads=apron_heads, flags=flags, encoder_decoder_section=enc_dec
    )
    prediction = compute(selection, model, apron_heads, request)
    notes: list[str] = []
    if model.text_key:
        notes.append(f"geometry read from the {model.text_key} sub-config")
    if apron_mla:
        notes.append(
            "MLA because "
            + "; ".join(f"{ENGINE_TITLES[m.engine]}: {m.why}" for m in mla_votes if m.is_mla)
        )
    elif is_mla_shaped(model):
        notes.append(
            "MLA-shaped (kv_lora_rank) but no engine's extracted rule lists it as MLA: "
            "engines allocate full attention"
        )
    if request.context is None and prediction.kv_bytes_at_context != 0:
        notes.append("no context length: figures per token only (give --context)")
    if not any(c is not None for c in cs.engines.values()):
        notes.append(
            "no generated engine constraints at all: every engine-derived value is unknown"
        )

    supported = support(model, cs)
    views = tuple(
        _view(
            model,
            request,
            engine_id,
            cs.get(engine_id),
            decisions.get(engine_id),
            apron_heads,
            flags,
            enc_dec,
            prediction,
            entry,
        )
        for engine_id, entry in zip(cs.engines, supported, strict=True)
    )
    batch_kv = (
        prediction.kv_bytes_at_context * request.batch
        if prediction.kv_bytes_at_context is not None
        else None
    )
    batch_state = (
        prediction.state_bytes_per_sequence * request.batch
        if prediction.state_bytes_per_sequence is not None
        else None
    )
    total = batch_kv + batch_state if batch_kv is not None and batch_state is not None else None
    stamps = tuple(
        EngineStamp(
            engine_id,
            ENGINE_TITLES.get(engine_id, engine_id),
            engine.commit if engine else None,
            engine.commit_date if engine else None,
            engine is not None,
        )
        for engine_id, engine in cs.engines.items()
    )
    return Plan(
        PREDICTION,
        model.source,
        model.architecture,
        model.model_type,
        model.text_model_type,
        model.text_key,
        request,
        apron_heads,
        prediction,
        batch_kv,
        batch_state,
        total,
        views,
        supported,
        stamps,
        tuple(notes),
    )
