"""Compute a plan: apron's own prediction, each engine's view at its pin, and engine support."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from apron import bounds, parallel
from apron import context as context_rules
from apron.checks import refuse_impossible
from apron.config import ModelConfig, load_config
from apron.constraints import (
    ENGINE_TITLES,
    Citation,
    ConstraintSet,
    EngineConstraints,
    load_constraints,
)
from apron.deployment import Deployment
from apron.engines import ENGINE_RULES
from apron.engines import llamacpp as llamacpp_rules
from apron.engines import vllm as vllm_rules
from apron.engines.base import EngineDecision
from apron.errors import ApronInputError
from apron.kv_dtype import KvDtypeChoice, resolve_kv_dtype_auto
from apron.mechanisms import full_attention, mla_latent, no_kv_cache, sliding_window
from apron.mechanisms.base import is_mla_shaped
from apron.results import (
    PREDICTION,
    Capacity,
    DtypeWeights,
    EngineStamp,
    EngineSupport,
    EngineView,
    GpuShare,
    HeadCount,
    MechanismResult,
    Plan,
    Request,
    Weights,
)
from apron.select import Selection, compute, select
from apron.support import support
from apron.terminal import shown

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


def ssm_cache_dtype(model: ModelConfig, vllm: EngineConstraints | None) -> tuple[str, str]:
    """--mamba-ssm-cache-dtype as vLLM resolves it for this architecture when left 'auto':
    (dtype or "" for the model dtype, where it came from)."""
    if vllm is None or model.architecture is None:
        return "", ""
    for row in vllm.rows("mamba_ssm_dtype_defaults"):
        if row.architecture != model.architecture:
            continue
        where = f"vLLM {row.symbol}"
        obj = row.config_object
        field_name = row.reads
        value = model.top(field_name) if obj == "hf_config" else model.get(field_name)
        if isinstance(value, str) and value:
            return value, f"the config's {field_name} = {value} ({where} reads {obj})"
        default = row.default
        if default:
            return default, f"{where}: {field_name} absent, default {default}"
        return "", f"{where}: {field_name} absent, so auto (the model dtype)"
    return "", ""


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
    ssm_dtype, ssm_source = ssm_cache_dtype(model, vllm)
    return Request(
        context,
        source,
        kv_dtype,
        KV_DTYPES[kv_dtype],
        batch,
        maximum.tokens,
        maximum.how,
        warnings,
        ssm_dtype,
        ssm_source,
    )


def _encoder_decoder_section(model: ModelConfig, vllm: EngineConstraints | None) -> str:
    architecture = model.architecture
    if vllm is None or architecture is None:
        return ""
    for row in vllm.rows("registry_rows"):
        if row.architecture == architecture and "encoder-decoder" in str(row.section).lower():
            return f"vLLM's registry files {architecture} under [Encoder-decoder]"
    return ""


def _encoder_only(model: ModelConfig, vllm: EngineConstraints | None) -> str:
    """Why vLLM runs this architecture with encoder-only attention, or "": its class flags and
    its ModelConfig.attn_type rule, both extracted, decide (apron/engines/vllm.attention_kind)."""
    if vllm is None or model.architecture is None:
        return ""
    kind = vllm_rules.attention_kind(model, vllm)
    return kind.why if kind is not None and kind.value == "encoder_only" else ""


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
            f"{shown(model.architecture)} is not in {title}'s registry at this commit: it could "
            "load only through a generic fallback (e.g. a Transformers backend), which "
            "apron does not model"
        )
    tp = serving.tp if serving is not None else request.tp
    flags = serving.deployment.llamacpp if serving is not None else None
    pp = serving.deployment.pp if serving is not None else 1
    own = _llamacpp_view(
        model, request, tp, engine_id, constraints, decision, registered, notes, cites, flags, pp
    )
    if own is not None:
        return own
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
        else compute(selection, model, heads, request)
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
        latent = mla_latent.compute(model, heads, request)
        if latent.kv_bytes_per_token and figures.kv_bytes_per_token:
            notes.append(
                f"MLA-shaped config allocated as full attention: "
                f"{figures.kv_bytes_per_token / latent.kv_bytes_per_token:.1f}x the MLA "
                f"latent figure ({latent.kv_bytes_per_token:,} B/token)"
            )
    if figures.unknown:
        notes.extend(f"unknown: {u}" for u in figures.unknown)
    gpu, fits, serving_cites = (
        _serving_figures(
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
        gpu,
        fits,
        per_sequence * request.batch if per_sequence is not None else None,
    )


def _llamacpp_view(
    model: ModelConfig,
    request: Request,
    tp: int,
    engine_id: str,
    constraints: EngineConstraints,
    decision: EngineDecision,
    registered: bool | None,
    notes: list[str],
    cites: list,
    flags=None,  # apron.deployment.LlamaCppFlags
    flags_pp: int = 1,
) -> EngineView | None:
    """llama.cpp's column from its own extracted sizing rules (apron.engines.llamacpp), or None
    when those rules are not in its generated module (then the generic path says why)."""
    if engine_id != llamacpp_rules.ENGINE or model.architecture is None:
        return None
    found = llamacpp_rules.plan_figures(model, constraints, request, flags)
    if found is None:
        return None
    figures, extra, extra_cites, total, split = found
    unknown = [f"unknown: {u}" for u in figures.unknown]
    pp = flags_pp
    if tp > 1 or pp > 1:  # no per-GPU rule: the column says so and does not vote on refusing tp
        unknown.append("unknown: llama.cpp splits layers across GPUs (--split-mode), not modelled")
    known = not figures.unknown
    gpu = (
        None
        if tp > 1 or pp > 1
        else GpuShare(
            tp,
            "split" if known else "unknown",
            None,
            "",
            figures.kv_bytes_per_token,
            figures.kv_bytes_at_context,
            figures.state_bytes_per_sequence,
            None,
            (),
            (),
            tuple(figures.unknown),
            figures.arithmetic,
        )
    )
    return EngineView(
        engine_id,
        ENGINE_TITLES.get(engine_id, engine_id),
        constraints.commit,
        "constraints used",
        registered,
        decision.flags,
        figures.mechanism if known else None,
        figures.kv_bytes_per_token,
        figures.kv_bytes_at_context,
        None,
        figures.state_bytes_per_sequence,
        False,
        tuple(
            dict.fromkeys(
                [
                    *notes,
                    *unknown,
                    *extra,
                    "weights: a GGUF's depend on its quantization (apron gguf FILE reads them)",
                ]
            )
        ),
        tuple(dict.fromkeys([*cites, *extra_cites])),
        gpu,
        None,
        total if tp == 1 and pp == 1 else None,
        split,
    )


class Serving(NamedTuple):
    """What the per-GPU and capacity figures need beyond the request."""

    tp: int
    gpu_memory: int | None
    memory_fraction: float | None
    weights: Weights
    deployment: Deployment = Deployment()


def _serving_figures(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints,
    selection: Selection,
    heads: HeadCount,
    figures: MechanismResult,
    serving: Serving,
    window_aware: bool | None = None,
) -> tuple[GpuShare, Capacity | None, tuple[Citation, ...]]:
    """The engine's per-GPU share at --tp and, with --gpu-memory, what fits (and the serving
    rules it cites)."""
    mla = figures.mechanism == mla_latent.NAME  # the MLA KV-head rule holds at tp 1 too
    if serving.tp == 1 and serving.gpu_memory is None and not mla:  # no serving rule is needed
        return parallel.whole_model_share(heads, figures, serving.weights.total_bytes), None, ()
    from apron import per_gpu
    from apron.serving_rules import serving_rules

    rules = serving_rules(constraints, engine_id)
    share = per_gpu.gpu_share(
        model, request, serving.tp, rules, selection, heads, figures, serving.weights.total_bytes
    )
    used = rules.citations if serving.tp > 1 or serving.gpu_memory is not None or mla else ()
    if serving.gpu_memory is None:
        return share, None, used
    fraction_lines: tuple[str, ...] = ()
    if engine_id == "sglang" and serving.memory_fraction is None:
        from apron import sglang_fraction

        fraction, source, fraction_lines, cites = sglang_fraction.fraction_for(
            constraints, model, figures.mechanism == mla_latent.NAME, serving.gpu_memory, serving.tp
        )
        rules = rules._replace(memory_fraction=fraction, memory_fraction_source=source)
        used = tuple(dict.fromkeys((*used, *cites)))
    fits = _engine_capacity(
        model, request, engine_id, constraints, figures, share, heads, rules, serving, window_aware
    )
    if fraction_lines:
        fits = fits._replace(arithmetic=(*fraction_lines, *fits.arithmetic))
    return share, fits, used


def _engine_capacity(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints,
    figures: MechanismResult,
    share: GpuShare,
    heads: HeadCount,
    rules,
    serving: Serving,
    window_aware: bool | None,
) -> Capacity:
    """What fits on one GPU, by the engine's own pool arithmetic (vLLM's KV cache groups,
    SGLang's pool configurators); the generic block fit for an engine without its own."""
    from apron import per_gpu

    deployment = serving.deployment._replace(
        gpu_memory=serving.gpu_memory,
        memory_fraction=serving.memory_fraction,
        batch=request.batch,
    )
    split = per_gpu.heads_per_gpu(model, heads, share.tp, rules)
    shared = dict(
        model=model,
        mechanism=figures.mechanism,
        share=share,
        heads=split,
        request=request._replace(tp=share.tp),
        rules=rules,
        deployment=deployment,
        context=request.context,
        weights_unknown=serving.weights.unknown,
    )
    if engine_id == "vllm":
        from apron import vllm_capacity

        return vllm_capacity.capacity(vllm=constraints, **shared)
    if engine_id == "sglang":
        from apron import sglang_capacity

        return sglang_capacity.capacity(sglang=constraints, window_aware=window_aware, **shared)
    return per_gpu.engine_capacity(
        model,
        figures.mechanism,
        share,
        rules,
        serving.gpu_memory,
        serving.memory_fraction,
        request.context,
        serving.weights.unknown,
    )


SAMPLE_PREFIX = "sample:"
GIVE_WEIGHTS = "give --params N or --weights-bytes N"


def sample_weights(model: ModelConfig) -> Weights | None:
    """The published checkpoint's weight bytes a sample carries (apron/samples/weights.json)."""
    if not model.source.startswith(SAMPLE_PREFIX):
        return None
    import json

    from apron.config import SAMPLES_DIR

    found = json.loads((SAMPLES_DIR / "weights.json").read_text(encoding="utf-8"))
    entry = found.get(model.source.removeprefix(SAMPLE_PREFIX))
    if entry is None:
        return None
    return Weights(int(entry["total_size"]), (), f"the sample's {entry['source']}", "", ())


def checkpoint_weights(model: ModelConfig, model_dir: Path | None) -> Weights:
    """The checkpoint's weight bytes from the model directory (apron.weights), or unknown."""
    if model_dir is None:
        found = sample_weights(model)
        if found is not None:
            return found
        return Weights(
            None,
            (),
            "",
            f"{model.source} is not a model directory: {GIVE_WEIGHTS} (no safetensors to read)",
            (),
        )
    from apron import weights as weight_files

    found = weight_files.checkpoint_weights(model_dir)
    if found is None:
        from apron.hf_cache import hub_safetensors_headers

        headers = hub_safetensors_headers(model_dir)  # only for a model read from the Hub
        if headers:
            found = weight_files.from_headers_json(headers, "the Hub")
    if found is None:
        return Weights(None, (), "", weight_files.weights_unknown_reason(model_dir), ())
    return Weights(
        found.total_bytes,
        tuple(DtypeWeights(d.dtype, d.bytes, d.tensors) for d in found.by_dtype),
        found.source,
        "",
        tuple(found.notes),
    )


# bits per parameter of the --weights-dtype names: a parameter count times this is the weights
PARAM_DTYPE_BITS = {
    "fp32": 32,
    "float32": 32,
    "bf16": 16,
    "bfloat16": 16,
    "fp16": 16,
    "float16": 16,
    "fp8": 8,
    "int8": 8,
    "fp4": 4,
    "int4": 4,
}


def given_weights(
    weights_bytes: int | None,
    params: int | None,
    weights_dtype: str | None,
    config_dtype: str | None = None,
) -> Weights | None:
    """The weights figure given instead of a checkpoint: --weights-bytes, or --params times the
    bytes of --weights-dtype (default: the config's torch_dtype / dtype); None when neither is
    given."""
    if weights_bytes is not None and params is not None:
        raise ApronInputError("give --weights-bytes or --params, not both")
    if weights_dtype is not None and params is None:
        raise ApronInputError("--weights-dtype goes with --params (the parameter count)")
    if weights_bytes is not None:
        weights_bytes = bounds.checked(weights_bytes, bounds.BYTES, "--weights-bytes")
        return Weights(weights_bytes, (), "--weights-bytes", "", ())
    if params is None:
        return None
    params = bounds.checked(params, bounds.PARAMS, "--params")
    from_config = weights_dtype is None and config_dtype in PARAM_DTYPE_BITS
    if from_config:
        weights_dtype = config_dtype
    if weights_dtype is None or weights_dtype not in PARAM_DTYPE_BITS:
        given = "none" if weights_dtype is None else shown(repr(weights_dtype))
        raise ApronInputError(
            f"--params needs --weights-dtype (got {given}; the config's torch_dtype is "
            f"{config_dtype or 'absent'}): one of {', '.join(PARAM_DTYPE_BITS)}"
        )
    bits = PARAM_DTYPE_BITS[weights_dtype]
    total = bounds.checked(-(-params * bits // 8), bounds.BYTES, f"--params x {weights_dtype}")
    source = f"the config's {weights_dtype}" if from_config else weights_dtype
    return Weights(
        total,
        (),
        f"--params {params:,} x {bits} bits ({source})",
        "",
        (f"weights = ceil({params:,} parameters x {bits} / 8) = {total:,} B",),
    )


def engine_request(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints | None,
    context: int | None,
) -> Request:
    """The request one engine's column is computed for: with no --context, the engine's own
    default context where its rules module has a `default_context` hook (else the shared one)."""
    rules = ENGINE_RULES.get(engine_id)
    hook = getattr(rules, "default_context", None)
    if context is not None or hook is None or constraints is None:
        return request
    found = hook(model, constraints)
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


def _checkpoint_dir(model: ModelConfig, model_dir: str | Path | None) -> Path | None:
    """The directory holding the checkpoint: given, else the one of the config.json read."""
    if model_dir is not None:
        return Path(model_dir)
    path = Path(model.source)
    return path.parent if path.is_file() else None


def _vllm_pooling(model: ModelConfig, vllm: EngineConstraints | None) -> bool:
    row = vllm_rules.class_flags(model, vllm) if vllm is not None else None
    return bool(
        row is not None
        and row.status == "resolved"
        and (row.is_pooling_model is True or row.is_text_generation_model is False)
    )


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
        pooling = engine_id == "vllm" and _vllm_pooling(model, cs.get("vllm"))
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
        known.sort(key=lambda item: item[0] != "vllm")
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
    what it decides on the GPU at run time (the engine module's `kv_dtype_unknown` hook)."""
    hook = getattr(ENGINE_RULES.get(view.engine), "kv_dtype_unknown", None)
    engine = cs.get(view.engine)
    if hook is None or engine is None or view.status != "constraints used":
        return view
    choice = choices.get(view.engine)
    kv_dtype = choice.dtype if choice is not None else request.kv_dtype
    why = hook(model, engine, kv_dtype) if kv_dtype else ""
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
    vllm = cs.get("vllm")
    kv_dtype = canonical_kv_dtype(kv_dtype)
    auto = kv_dtype == AUTO_KV_DTYPE
    request = make_request(model, context, AUTO_PLACEHOLDER if auto else kv_dtype, batch, vllm)
    tp = bounds.checked(tp, bounds.TP, "--tp")
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
    directory = _checkpoint_dir(model, model_dir)
    weights = given_weights(
        weights_bytes, params, weights_dtype, model.model_dtype()
    ) or checkpoint_weights(model, directory)
    serving = Serving(tp, gpu_memory, memory_fraction, weights, deployment or Deployment())
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
    choices = auto_kv_dtypes(model, cs, decisions, directory) if auto else {}
    if auto:
        request = _auto_request(request, choices, None)
    flags = frozenset(f for d in decisions.values() for f in d.flags)
    mla_votes = [d.mla for d in decisions.values() if d.mla is not None]
    apron_mla = any(m.is_mla for m in mla_votes)
    enc_dec = _encoder_decoder_section(model, vllm)
    enc_only = _encoder_only(model, vllm)
    selection = select(
        model,
        mla=apron_mla,
        heads=apron_heads,
        flags=flags,
        encoder_decoder_section=enc_dec,
        encoder_only=enc_only,
    )
    prediction = compute(selection, model, apron_heads, _placeholder(request))
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
    refusal = parallel.tp_refusal(tp, [(v.title, v.gpu) for v in views if v.gpu is not None])
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
        request._replace(tp=tp),  # what was asked; `prediction` stays the whole model's
        apron_heads,
        prediction,
        batch_kv,
        batch_state,
        total,
        views,
        supported,
        stamps,
        tuple(notes),
        tp,
        gpu_memory,
        weights,
        pp=serving.deployment.pp,
    )
