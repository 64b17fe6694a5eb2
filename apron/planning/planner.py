"""Compute a plan: apron's own prediction, each engine's view at its pin, and engine support."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron import bounds, parallel
from apron import context as context_rules
from apron.checks import refuse_impossible
from apron.config import ModelConfig, load_config
from apron.constraints import (
    ENGINE_TITLES,
    ConstraintSet,
    EngineConstraints,
    load_constraints,
)
from apron.deployment import Deployment
from apron.engines import vllm as vllm_rules
from apron.engines.base import Column, EngineDecision
from apron.engines.kv_head_scan import resolve_kv_heads
from apron.errors import ApronInputError
from apron.kv_dtype import KvDtypeChoice
from apron.mechanisms import full_attention, mla_latent, no_kv_cache, sliding_window
from apron.mechanisms.base import is_mla_shaped
from apron.mechanisms.select import Selection, compute, select
from apron.planning.engine_registry import ENGINE_RULES, REFERENCE_ENGINE, resolve_kv_dtype_auto
from apron.planning.serving import Serving, serving_figures
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
from apron.support import support
from apron.terminal import shown
from apron.weights_figure import checkpoint_dir, checkpoint_weights, given_weights

KV_DTYPES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
AUTO_KV_DTYPE = "auto"  # each engine resolves it from the checkpoint (apron.kv_dtype)
# vLLM's --kv-cache-dtype spellings (vllm/config/cache.py CacheDType) -> KV_DTYPES names: both
# fp8 formats store 1 byte per element, the only property apron's figures use
ENGINE_KV_DTYPE_NAMES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_inc": "fp8",
}
AUTO_PLACEHOLDER = "bf16"  # computes state figures when no engine resolves auto; KV blanked
CONTEXT_KEYS = ("max_position_embeddings",)


def canonical_kv_dtype(kv_dtype: str) -> str:
    """A KV_DTYPES name or auto, from apron's or vLLM's spelling (bfloat16, fp8_e4m3, ...)."""
    name = ENGINE_KV_DTYPE_NAMES.get(kv_dtype, kv_dtype)
    if name not in KV_DTYPES and name != AUTO_KV_DTYPE:
        raise ApronInputError(
            f"unknown KV dtype {shown(repr(kv_dtype))}; use one of {', '.join(KV_DTYPES)}, {AUTO_KV_DTYPE} "
            f"(or vLLM's {', '.join(ENGINE_KV_DTYPE_NAMES)})"
        )
    return name


def make_request(
    model: ModelConfig,
    context: int | None,
    kv_dtype: str,
    batch: int,
    vllm: EngineConstraints | None = None,
) -> Request:
    """Validate the options; a context of None means vLLM's derived maximum (when it has one)."""
    kv_dtype = canonical_kv_dtype(kv_dtype)
    if kv_dtype not in KV_DTYPES:  # auto is resolved per engine before a request is made
        raise ApronInputError(f"KV dtype {shown(repr(kv_dtype))} needs an engine to resolve it")
    if context is not None:
        context = bounds.checked(context, bounds.CONTEXT, "--context")
    batch = bounds.checked(batch, bounds.BATCH, "--batch")
    maximum, warnings = context_rules.check(model, context)
    source = "--context"
    if context is None:
        context = maximum.default
        source = (
            f"default: the model's maximum as vLLM derives it, {maximum.default_how}"
            if context is not None
            else f"none: no --context and {maximum.how}"
        )
    ssm_dtype, ssm_source = vllm_rules.ssm_cache_dtype(model, vllm)
    return Request(
        context=context,
        context_source=source,
        kv_dtype=kv_dtype,
        kv_dtype_bytes=KV_DTYPES[kv_dtype],
        batch=batch,
        max_model_len=maximum.tokens,
        max_model_len_source=maximum.how,
        context_warnings=warnings,
        ssm_dtype=ssm_dtype,
        ssm_dtype_source=ssm_source,
    )


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
    enc_only: str,
    prediction: MechanismResult,
    support_entry: EngineSupport,
    serving: Serving | None = None,
) -> EngineView:
    title = ENGINE_TITLES.get(engine_id, engine_id)
    if constraints is None or decision is None:
        return EngineView(
            engine=engine_id,
            title=title,
            commit=None,
            status="constraints absent",
            registered=None,
            flags=(),
            mechanism=None,
            kv_bytes_per_token=None,
            kv_bytes_at_context=None,
            naive_kv_bytes_at_context=None,
            state_bytes_per_sequence=None,
            differs_from_prediction=False,
            notes=(
                f"no generated/{engine_id}/ module: apron has none of {title}'s rules, "
                "so it cannot say what it would allocate",
            ),
            citations=(),
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
            f"{shown(model.architecture)} is not in {title}'s registry at this commit: it could "
            "load only through a generic fallback (e.g. a Transformers backend), which "
            "apron does not model"
        )
    own = ENGINE_RULES[engine_id].own_view(
        Column(
            model=model,
            request=request,
            constraints=constraints,
            decision=decision,
            registered=registered,
            notes=tuple(notes),
            citations=tuple(cites),
            deployment=serving.deployment if serving is not None else Deployment(),
        )
    )
    if own is not None:
        return own
    if not decision.computes_figures:
        return EngineView(
            engine=engine_id,
            title=title,
            commit=constraints.commit,
            status="constraints used",
            registered=registered,
            flags=decision.flags,
            mechanism=None,
            kv_bytes_per_token=None,
            kv_bytes_at_context=None,
            naive_kv_bytes_at_context=None,
            state_bytes_per_sequence=None,
            differs_from_prediction=False,
            notes=(
                *notes,
                f"byte figures: {title}'s KV sizing rules are not among the extracted constraints",
            ),
            citations=tuple(cites),
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
    if enc_only and decision.encoder_only_kv:
        notes.append(f"{decision.encoder_only_kv} (vLLM: {enc_only})")
        enc_only = ""
    selection = select(
        model,
        mla=bool(mla),
        heads=heads,
        flags=flags,
        encoder_decoder_section=enc_dec,
        encoder_only=enc_only,
    )
    full_context = (
        not decision.no_kv_cache
        and decision.window_aware is False
        and selection.mechanism is sliding_window
    )
    if full_context:
        selection = Selection(full_attention, decision.window_why)
    figures = (
        no_kv_cache.compute(decision.no_kv_cache)
        if decision.no_kv_cache
        else compute(selection, model, heads, whole_model(request))
    )
    if full_context:
        notes.append(_full_context_note(decision.window_why, figures, request))
    if decision.no_kv_cache:
        notes.insert(0, decision.no_kv_cache)
    if mla is None and is_mla_shaped(model) and not decision.no_kv_cache:
        notes.append(
            f"whether {title} treats this config as MLA is unknown; shown as full attention"
        )
    if mla is False and is_mla_shaped(model) and figures.mechanism != mla_latent.NAME:
        latent = mla_latent.compute(model, heads, whole_model(request))
        if latent.kv_bytes_per_token and figures.kv_bytes_per_token:
            notes.append(
                f"MLA-shaped config allocated as full attention: "
                f"{figures.kv_bytes_per_token / latent.kv_bytes_per_token:.1f}x the MLA "
                f"latent figure ({latent.kv_bytes_per_token:,} B/token)"
            )
    if figures.unknown:
        notes.extend(f"unknown: {u}" for u in figures.unknown)
    gpu, fits, serving_cites = (
        serving_figures(
            model,
            request,
            engine_id,
            constraints,
            selection,
            heads,
            figures,
            serving,
            decision.window_aware,
        )
        if serving is not None
        else (None, None, ())
    )
    cites.extend(serving_cites)
    share = gpu if gpu is not None and gpu.status == "split" else None
    per_sequence = (
        share.kv_bytes_at_context + share.state_bytes_per_sequence
        if share is not None
        and share.kv_bytes_at_context is not None
        and share.state_bytes_per_sequence is not None
        else None
    )
    return EngineView(
        engine=engine_id,
        title=title,
        commit=constraints.commit,
        status="constraints used",
        registered=registered,
        flags=decision.flags,
        mechanism=figures.mechanism,
        kv_bytes_per_token=figures.kv_bytes_per_token,
        kv_bytes_at_context=figures.kv_bytes_at_context,
        naive_kv_bytes_at_context=figures.naive_kv_bytes_at_context,
        state_bytes_per_sequence=figures.state_bytes_per_sequence,
        differs_from_prediction=_figures_differ(figures, prediction),
        notes=tuple(dict.fromkeys(notes)),
        citations=tuple(dict.fromkeys(cites)),
        gpu=gpu,
        capacity=fits,
        bytes_for_batch=per_sequence * request.batch if per_sequence is not None else None,
    )


def engine_request(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints | None,
    context: int | None,
) -> Request:
    """The request one engine's column is computed for: with no --context, the engine's own
    default context where its package has one (EngineRules.default_context; else the shared one)."""
    rules = ENGINE_RULES.get(engine_id)
    if context is not None or rules is None or constraints is None:
        return request
    found = rules.default_context(model, constraints)
    if found is None:
        return request
    title = ENGINE_TITLES.get(engine_id, engine_id)
    source = f"default: {found.how}" if found.tokens is not None else f"unknown: {found.how}"
    if found.tokens is None:
        source = f"{title}'s default context is {source}"
    return request._replace(context=found.tokens, context_source=source)


def _with_context(view: EngineView, shared: Request, own: Request) -> EngineView:
    """The view with the context its figures are at, and a note when it is the engine's own."""
    if own.context == shared.context:
        return view._replace(context=own.context, context_source=own.context_source)
    shown = f"{own.context:,} tokens" if own.context is not None else "unknown"
    note = f"context {shown}: {view.title}'s own {own.context_source}"
    return view._replace(
        context=own.context, context_source=own.context_source, notes=(note, *view.notes)
    )


def _full_context_note(why: str, figures: MechanismResult, request: Request) -> str:
    if figures.kv_bytes_per_token is None:
        return why
    text = f"{why}: {figures.kv_bytes_per_token:,} B/token"
    if figures.kv_bytes_at_context is not None and request.context is not None:
        text += f", {figures.kv_bytes_at_context:,} B at {request.context:,} tokens"
    return text


def auto_kv_dtypes(
    model: ModelConfig,
    cs: ConstraintSet,
    decisions: Mapping[str, EngineDecision],
    model_dir: Path | None,
) -> dict[str, KvDtypeChoice]:
    """What `--kv-dtype auto` resolves to in each engine (apron.kv_dtype), by engine id."""
    choices: dict[str, KvDtypeChoice] = {}
    for engine_id in cs.engines:
        decision = decisions.get(engine_id)
        mla = bool(decision is not None and decision.mla is not None and decision.mla.is_mla)
        rules, engine = ENGINE_RULES.get(engine_id), cs.get(engine_id)
        pooling = bool(rules is not None and engine is not None and rules.pooling(model, engine))
        choices[engine_id] = resolve_kv_dtype_auto(
            model.raw, model_dir, engine_id, rules=cs.get(engine_id), mla=mla, pooling=pooling
        )
    return choices


def _auto_request(
    request: Request, choices: Mapping[str, KvDtypeChoice], engine_id: str | None
) -> Request:
    """The request with `auto` resolved for one engine (None: apron's own prediction, which
    follows vLLM, else the first engine that resolves it); kv_dtype_bytes 0 when unknown."""
    if engine_id is None:
        known = [(e, c) for e, c in choices.items() if c.dtype is not None]
        known.sort(key=lambda item: item[0] != REFERENCE_ENGINE)
        if not known:
            reasons = "; ".join(
                f"{ENGINE_TITLES.get(e, e)}: {c.reason}" for e, c in choices.items()
            )
            return request._replace(
                kv_dtype=AUTO_KV_DTYPE, kv_dtype_bytes=0, kv_dtype_source=f"unknown: {reasons}"
            )
        engine_id, choice = known[0]
    else:
        choice = choices[engine_id]
        if choice.dtype is None:
            return request._replace(
                kv_dtype=AUTO_KV_DTYPE, kv_dtype_bytes=0, kv_dtype_source=choice.reason
            )
    assert choice.dtype is not None
    return request._replace(
        kv_dtype=choice.dtype,
        kv_dtype_bytes=KV_DTYPES[choice.dtype],
        kv_dtype_source=f"{ENGINE_TITLES.get(engine_id, engine_id)} {choice.reason}",
    )


def whole_model(request: Request) -> Request:
    """The request the whole model's figures are computed for (tp 1); per-GPU shares at
    request.tp come from the capacity step (apron.planning.serving)."""
    return request._replace(tp=1)


def _placeholder(request: Request) -> Request:
    if request.kv_dtype_bytes:
        return request
    return request._replace(kv_dtype=AUTO_PLACEHOLDER, kv_dtype_bytes=KV_DTYPES[AUTO_PLACEHOLDER])


def _blank_kv_prediction(result: MechanismResult, why: str) -> MechanismResult:
    if not result.kv_bytes_per_token:
        return result
    return result._replace(
        kv_bytes_per_token=None,
        kv_bytes_at_context=None,
        naive_kv_bytes_at_context=None,
        naive_ratio=None,
        unknown=(*result.unknown, why),
        arithmetic=(),
    )


def _blank_kv_view(view: EngineView, why: str) -> EngineView:
    if not view.kv_bytes_per_token:
        return view
    gpu = view.gpu
    if gpu is not None and gpu.status == "split":
        gpu = gpu._replace(
            status="unknown",
            kv_bytes_per_token=None,
            kv_bytes_at_context=None,
            unknown=(*gpu.unknown, f"KV dtype {why}"),
        )
    capacity = view.capacity
    if capacity is not None:
        capacity = capacity._replace(
            budget_bytes=None,
            blocks=None,
            block_bytes=None,
            kv_tokens=None,
            blocks_per_sequence=None,
            sequence_bytes=None,
            sequences=None,
            limit="",
            unknown=(*capacity.unknown, f"KV dtype {why}"),
            arithmetic=(),
        )
    return view._replace(
        kv_bytes_per_token=None,
        kv_bytes_at_context=None,
        naive_kv_bytes_at_context=None,
        notes=(*view.notes, f"unknown: KV dtype {why}"),
        gpu=gpu,
        capacity=capacity,
    )


def _auto_view(view: EngineView, choice: KvDtypeChoice | None) -> EngineView:
    if choice is None or view.status != "constraints used":
        return view
    if choice.dtype is None:
        return _blank_kv_view(view, choice.reason)
    return view._replace(notes=(f"KV dtype {choice.dtype}: {choice.reason}", *view.notes))


def _runtime_kv_view(
    view: EngineView,
    model: ModelConfig,
    cs: ConstraintSet,
    request: Request,
    choices: Mapping[str, KvDtypeChoice],
) -> EngineView:
    """The view with its KV figures unknown when the engine's cell at this KV dtype depends on
    what it decides on the GPU at run time (EngineRules.kv_dtype_unknown)."""
    rules = ENGINE_RULES.get(view.engine)
    engine = cs.get(view.engine)
    if rules is None or engine is None or view.status != "constraints used":
        return view
    choice = choices.get(view.engine)
    kv_dtype = choice.dtype if choice is not None else request.kv_dtype
    why = rules.kv_dtype_unknown(model, engine, kv_dtype) if kv_dtype else ""
    return _blank_kv_view(view, why) if why else view


def plan(
    config: ModelConfig | str | Path | Mapping[str, Any],
    *,
    context: int | None = None,
    kv_dtype: str = "bf16",
    batch: int = 1,
    constraints: ConstraintSet | None = None,
    tp: int = 1,
    gpu_memory: int | None = None,
    memory_fraction: float | None = None,
    model_dir: str | Path | None = None,
    weights_bytes: int | None = None,
    params: int | None = None,
    weights_dtype: str | None = None,
    deployment: Deployment | None = None,
) -> Plan:
    """A labelled prediction for one config, citing the engine commits whose rules it used.

    tp: tensor-parallel size (engine figures become one GPU's share); gpu_memory: bytes per GPU
    (adds what fits per engine); memory_fraction: overrides every engine's default fraction;
    model_dir: where the checkpoint's safetensors are (default: the config's directory);
    weights_bytes, or params with weights_dtype (PARAM_DTYPE_BITS): the weights figure without
    a checkpoint (it replaces what model_dir holds); deployment: the GPU's name and the engine
    settings beyond these (apron.deployment.Deployment).
    kv_dtype "auto" is resolved per engine from the checkpoint (its quantization config, or
    hf_quant_config.json in model_dir, default the directory of the config.json read)."""
    cs = constraints if constraints is not None else load_constraints()
    model = (
        config.bound(cs) if isinstance(config, ModelConfig) else load_config(config, constraints=cs)
    )
    refuse_impossible(model)
    vllm = cs.get(REFERENCE_ENGINE)
    kv_dtype = canonical_kv_dtype(kv_dtype)
    auto = kv_dtype == AUTO_KV_DTYPE
    request = make_request(model, context, AUTO_PLACEHOLDER if auto else kv_dtype, batch, vllm)
    request = request._replace(tp=bounds.checked(tp, bounds.TP, "--tp"))  # the one --tp
    if gpu_memory is not None:
        gpu_memory = bounds.checked(gpu_memory, bounds.BYTES, "--gpu-memory")
    if memory_fraction is not None and not (
        isinstance(memory_fraction, int | float)
        and not isinstance(memory_fraction, bool)
        and 0 < memory_fraction <= 1
    ):
        raise ApronInputError(
            f"--memory-fraction {shown(memory_fraction)}: must be more than 0 and at most 1 "
            "(vLLM's gpu_memory_utilization: Field(gt=0, le=1))"
        )
    directory = checkpoint_dir(model, model_dir)
    weights = given_weights(
        weights_bytes, params, weights_dtype, model.model_dtype()
    ) or checkpoint_weights(model, directory)
    serving = Serving(
        gpu_memory=gpu_memory,
        memory_fraction=memory_fraction,
        weights=weights,
        deployment=deployment or Deployment(),
    )
    apron_heads, _ = resolve_kv_heads(model, vllm)
    decisions: dict[str, EngineDecision] = {}
    for engine_id, engine in cs.engines.items():
        rules = ENGINE_RULES.get(engine_id)
        if engine is not None and rules is not None:
            try:
                decisions[engine_id] = rules.decide(model, engine)
            except Exception as err:  # generated rows of a shape this apron does not know
                decisions[engine_id] = EngineDecision(
                    engine=engine_id,
                    kv_heads=None,
                    mla=None,
                    flags=(),
                    notes=(
                        f"could not interpret generated/{engine_id} ({type(err).__name__}: {err})",
                    ),
                    citations=(),
                    computes_figures=False,
                )
    choices = auto_kv_dtypes(model, cs, decisions, directory) if auto else {}
    if auto:
        request = _auto_request(request, choices, None)
    flags = frozenset(f for d in decisions.values() for f in d.flags)
    mla_votes = [d.mla for d in decisions.values() if d.mla is not None]
    apron_mla = any(m.is_mla for m in mla_votes)
    enc_dec = vllm_rules.encoder_decoder_section(model, vllm)
    enc_only = vllm_rules.encoder_only_why(model, vllm)
    selection = select(
        model,
        mla=apron_mla,
        heads=apron_heads,
        flags=flags,
        encoder_decoder_section=enc_dec,
        encoder_only=enc_only,
    )
    prediction = compute(selection, model, apron_heads, whole_model(_placeholder(request)))
    if auto and not request.kv_dtype_bytes:
        prediction = _blank_kv_prediction(prediction, f"KV dtype {request.kv_dtype_source}")
    notes: list[str] = [model.reading, *request.context_warnings]
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
    requests = {
        engine_id: engine_request(model, request, engine_id, cs.get(engine_id), context)
        for engine_id in cs.engines
    }
    views = tuple(
        _view(
            model,
            _placeholder(_auto_request(requests[engine_id], choices, engine_id))
            if auto
            else requests[engine_id],
            engine_id,
            cs.get(engine_id),
            decisions.get(engine_id),
            apron_heads,
            flags,
            enc_dec,
            enc_only,
            prediction,
            entry,
            serving,
        )
        for engine_id, entry in zip(cs.engines, supported, strict=True)
    )
    views = tuple(_with_context(view, request, requests[view.engine]) for view in views)
    if auto:
        views = tuple(_auto_view(view, choices.get(view.engine)) for view in views)
    views = tuple(_runtime_kv_view(view, model, cs, request, choices) for view in views)
    refusal = parallel.tp_refusal(
        request.tp, [(v.title, v.gpu) for v in views if v.gpu is not None]
    )
    if refusal:
        raise ApronInputError(refusal)
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
            engine=engine_id,
            title=ENGINE_TITLES.get(engine_id, engine_id),
            commit=engine.commit if engine else None,
            commit_date=engine.commit_date if engine else None,
            present=engine is not None,
        )
        for engine_id, engine in cs.engines.items()
    )
    return Plan(
        label=PREDICTION,
        source=model.source,
        architecture=model.architecture,
        model_type=model.model_type,
        text_model_type=model.text_model_type,
        text_config_key=model.text_key,
        request=request,  # what was asked, --tp too; `prediction` stays the whole model's
        kv_heads=apron_heads,
        prediction=prediction,
        kv_bytes_for_batch=batch_kv,
        state_bytes_for_batch=batch_state,
        total_bytes_for_batch=total,
        engines=views,
        support=supported,
        constraints=stamps,
        notes=tuple(notes),
        gpu_memory_bytes=gpu_memory,
        weights=weights,
        pp=serving.deployment.pp,
    )
