"""llama.cpp's column for an HF config: converter support and the architecture class flags
(recurrent, hybrid, diffusion, ...) from `hf_architectures` and `class_set_members`, the
sliding-window rule in words from `sliding_window`, and the byte figures of the GGUF the
converter would write (apron/engines/llamacpp/hf.py) sized by llama.cpp's own rules
(apron/engines/llamacpp/memory.py), at llama.cpp's own default context when none is given."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.constraints import ENGINE_TITLES, EngineConstraints
from apron.deployment import LlamaCppFlags
from apron.engines import base
from apron.engines.base import ContextDefault, EngineDecision
from apron.engines.llamacpp.hf import hf_header
from apron.engines.llamacpp.memory import Unknown, cache_type
from apron.engines.llamacpp.memory import figures as llamacpp_figures
from apron.errors import ApronInputError
from apron.expressions import Unread
from apron.results import EngineView, GpuShare, LlamaCppContext, MechanismResult, Request
from apron.terminal import shown

ENGINE = "llamacpp"
HF, SWA = "hf_architectures", "sliding_window"

# predicate -> the flag apron's mechanism selection understands
FLAG_OF = {
    "llm_arch_is_recurrent": "recurrent",
    "llm_arch_is_hybrid": "hybrid",
    "llm_arch_is_diffusion": "diffusion",
}


def matches(model: ModelConfig, llamacpp: EngineConstraints) -> list:
    arch = model.architecture
    rows = [r for r in llamacpp.rows(HF) if r.architecture == arch]
    return sorted(rows, key=lambda r: r.model_type != "text")


def decide(model: ModelConfig, llamacpp: EngineConstraints) -> EngineDecision:
    if not llamacpp.has(HF):
        return EngineDecision(
            engine=ENGINE,
            kv_heads=None,
            mla=None,
            flags=(),
            notes=("no hf_architectures fact in generated/llamacpp",),
            citations=(),
            computes_figures=False,
        )
    rows = matches(model, llamacpp)
    text_rows = [r for r in rows if r.model_type == "text"] or rows
    if not text_rows:
        return EngineDecision(
            engine=ENGINE,
            kv_heads=None,
            mla=None,
            flags=(),
            notes=(
                f"the llama.cpp converter registers no {shown(repr(model.architecture))}: it cannot convert this "
                "checkpoint to GGUF at this commit",
            ),
            citations=(),
            computes_figures=False,
        )
    row = text_rows[0]
    gguf = row.gguf_arch or "?"
    properties = tuple(row.properties or ())
    flags = tuple(FLAG_OF[p] for p in properties if p in FLAG_OF)
    notes = [
        f"converts {shown(model.architecture)} to GGUF architecture {shown(repr(gguf))} "
        f"({row.llm_arch or 'no LLM_ARCH_* match'})"
    ]
    resolution = row.resolution
    if resolution and resolution != "resolved":
        notes.append(f"join incomplete: {resolution}")
    if flags:
        notes.append(
            "llama.cpp classes it as "
            + " and ".join(flags)
            + " ("
            + ", ".join(p for p in properties if p in FLAG_OF)
            + ")"
        )
    others = [p for p in properties if p not in FLAG_OF]
    if others:
        notes.append("other class predicates true: " + ", ".join(others))
    cites = [llamacpp.cite(row)]
    llm_arch = row.llm_arch
    for rule in llamacpp.rows(SWA):
        if llm_arch and rule.arch == llm_arch:
            swa = ", ".join(rule.swa_types or ()) or "none"
            bits = [f"sliding window: type {swa}, pattern {rule.pattern}"]
            if rule.period_default is not None:
                bits.append(f"period {rule.period_default}")
            if rule.conditional:
                bits.append("conditional: " + "; ".join(rule.conditions or ()))
            notes.append(", ".join(bits))
            cites.append(llamacpp.cite(rule))
    return EngineDecision(
        engine=ENGINE,
        kv_heads=None,
        mla=None,
        flags=flags,
        notes=tuple(notes),
        citations=tuple(cites),
        computes_figures=False,
    )


# apron's KV dtype names -> llama.cpp cache types (ggml type_traits names); fp8 has none
CACHE_TYPE_OF = {"bf16": "GGML_TYPE_BF16", "fp16": "GGML_TYPE_F16", "fp32": "GGML_TYPE_F32"}


def plan_figures(
    model: ModelConfig,
    llamacpp: EngineConstraints,
    request: Request,
    flags: LlamaCppFlags | None = None,
) -> tuple[MechanismResult, tuple[str, ...], tuple, int | None, LlamaCppContext | None] | None:
    """The llama.cpp column's figures for an HF config: its hparams through the converter's
    extracted HF -> GGUF mapping, sized by llama.cpp's extracted rules for --batch sequences of
    --context tokens each: llama.cpp splits n_ctx across n_seq_max sequences, so that is
    n_ctx = batch x context, n_seq_max = batch. The result's at-context figure is one sequence's
    share; the batch total and the split come beside it. None when the rules are not in
    generated/llamacpp."""
    if not llamacpp.has("converter_hparams") or not llamacpp.has("memory_rules"):
        return None
    rows = matches(model, llamacpp)
    row = next((r for r in rows if r.model_type == "text" and r.gguf_arch), None)
    if row is None:
        return None
    title = "llama.cpp"
    flags = flags or LlamaCppFlags()
    cache = CACHE_TYPE_OF.get(request.kv_dtype)
    header, unread, cites, considered = hf_header(model, llamacpp, row)
    unknown: list[str] = []
    if cache is None and not (flags.type_k and flags.type_v):
        unknown.append(f"llama.cpp has no {request.kv_dtype} KV cache type")
    try:
        type_k = cache_type(llamacpp, flags.type_k) if flags.type_k else cache
        type_v = cache_type(llamacpp, flags.type_v) if flags.type_v else cache
    except Unknown as err:
        raise ApronInputError(str(err)) from None
    if flags.type_v and flags.flash_attn == "off" and type_v not in CACHE_TYPE_OF.values():
        raise ApronInputError(
            f"-ctv {flags.type_v} with -fa off: llama.cpp refuses it (V cache quantization "
            "requires flash_attn, src/llama-context.cpp)"
        )
    n = max(1, request.batch)
    # batch sequences of context tokens each: n_ctx = context x batch. One sequence at
    # llama.cpp's own default context is its n_ctx 0 (the context_length the converter writes)
    own_default = request.context_source != "--context"
    if request.context is None or (own_default and n == 1):
        n_ctx = None
    else:
        n_ctx = request.context * n
    got = llamacpp_figures(
        header,
        llamacpp,
        n_ctx=n_ctx,
        n_seq_max=n,
        type_k=type_k or "GGML_TYPE_F16",
        type_v=type_v or "GGML_TYPE_F16",
        settings=flags.overrides(),
        # a required key no extracted write targets: the converter may write it in code not
        # extracted (a helper method), so it is taken as written, its value unknown wherever a
        # figure needs it; one an extracted write skips for this config is absent (refused)
        assume_written=lambda key: key not in considered,
    )
    given = "--context" if not own_default else "llama.cpp's default context"
    context_note = (
        f"n_ctx = {given} x --batch ({request.context:,} x {n:,})"
        if n_ctx is not None
        else "n_ctx = llama.cpp's default 0: the context_length the converter writes"
        + (f" ({got.n_ctx:,} after padding)" if got.n_ctx else "")
    )
    split = None
    unified = bool(flags.kv_unified)
    if n_ctx is not None:
        how = (
            f"one unified buffer of {n_ctx:,} cells shared by the {n:,} sequences"
            if unified
            else f"{request.context:,} each"
        )
        split = LlamaCppContext(
            n_ctx=n_ctx,
            n_seq_max=n,
            n_ctx_seq=n_ctx if unified else n_ctx // n,
            kv_unified=unified,
            words=(
                f"llama.cpp splits n_ctx across sequences: {n:,} x {request.context:,} tokens "
                f"is -c {n_ctx} -np {n}" + (" -kvu" if unified else "") + f" ({how})"
            ),
        )
    elif got.n_ctx:  # one sequence at llama.cpp's default -c 0
        split = LlamaCppContext(
            n_ctx=got.n_ctx,
            n_seq_max=1,
            n_ctx_seq=got.n_ctx,
            kv_unified=unified,
            words=(
                f"llama.cpp's default -c 0 -np 1: one sequence of the context_length the "
                f"converter writes ({got.n_ctx:,} cells after padding)"
            ),
        )
    notes = [
        f"{title} figures: {context_note}, n_seq_max = --batch (llama.cpp splits n_ctx across "
        "the sequences); one sequence below = total / n_seq_max",
        *got.notes,
        *(f"llama.cpp: {a}" for a in got.arithmetic),
    ]
    if n_ctx is not None:  # context_length only sizes a context left at 0
        unread = [u for u in unread if u[0] != "context_length"]
    stops = [text for suffix, text in unread if not suffix]  # the converter's KeyError
    if stops:
        unknown.append(f"the converter stops: {'; '.join(stops)}")
    elif got.refused:  # an assert that fires, a tensor llama.cpp sizes with a dimension 0
        unknown.append(f"llama.cpp refuses the GGUF the converter writes: {got.refused}")
    elif got.unknown:  # what apron does not reproduce, where llama.cpp's loader uses it
        unknown.extend(got.unknown)
    notes.extend(
        f"the converter computes {text}: apron does not reproduce it (unknown only where "
        "llama.cpp uses it)"
        for suffix, text in unread
        if suffix
    )
    kv = None if unknown or got.kv_bytes is None else got.kv_bytes // n
    state = None if unknown or got.state_bytes is None else got.state_bytes // n
    total = (
        None
        if unknown or got.kv_bytes is None or got.state_bytes is None
        else got.kv_bytes + got.state_bytes
    )
    # every attention layer of a plain or hybrid cache holds all n_ctx_seq cells: bytes per cell
    per_token = None
    if kv is not None and got.memory_class in ("llama_kv_cache", "llama_memory_hybrid"):
        cells = got.kv_cells.get("base")
        per_token = got.kv_bytes // (cells * n) if cells else None
    result = MechanismResult(
        mechanism=got.memory_class or "none",
        title=f"llama.cpp {got.memory_class or 'no memory'}",
        kv_bytes_per_token=per_token,
        kv_bytes_at_context=kv,
        naive_kv_bytes_at_context=None,
        naive_ratio=None,
        state_bytes_per_sequence=state,
        unknown=tuple(unknown),
        missing=(),
        arithmetic=got.arithmetic,
        notes=tuple(notes),
    )
    return result, tuple(notes), (*cites, *got.citations), total, split


def default_context(model: ModelConfig, llamacpp: EngineConstraints) -> ContextDefault | None:
    """llama.cpp's context when none is given: n_ctx 0 (common_params) is the GGUF's
    context_length, here the one the converter writes for this config (llama_context pads it
    to 256 cells); None when the converter's writes are not extracted."""
    if not llamacpp.has("converter_hparams") or model.architecture is None:
        return None
    row = next(
        (r for r in matches(model, llamacpp) if r.model_type == "text" and r.gguf_arch), None
    )
    if row is None:
        return None
    header, _, cites, _ = hf_header(model, llamacpp, row)
    value = header.metadata.get(f"{row.gguf_arch}.context_length")
    if isinstance(value, Unread):
        return ContextDefault(
            None, f"llama.cpp's n_ctx 0 is the GGUF's context_length: {value.reason}", tuple(cites)
        )
    if not isinstance(value, int) or isinstance(value, bool):
        return ContextDefault(
            None,
            "llama.cpp's n_ctx 0 is the GGUF's context_length, which the converter does not write here",
            tuple(cites),
        )
    how = f"llama.cpp's n_ctx 0: the context_length {value:,} the converter writes"
    return ContextDefault(value, how, tuple(cites))


# the planner's protocol (apron.engines.base.EngineRules)
memory_fraction = base.no_memory_fraction
fit_capacity = base.block_capacity
pooling = base.not_pooling
tp_refusals = base.no_tp_refusals
state_tp_refusal = base.no_state_tp_refusal
kv_dtype_unknown = base.kv_dtype_known


def own_view(column: base.Column) -> EngineView | None:
    """llama.cpp's column from its own extracted sizing rules (apron.engines.llamacpp), or None
    when those rules are not in its generated module (then the generic path says why)."""
    model, request, constraints, decision = (
        column.model,
        column.request,
        column.constraints,
        column.decision,
    )
    notes, cites, registered = column.notes, column.citations, column.registered
    tp = request.tp
    engine_id = ENGINE
    if model.architecture is None:
        return None
    found = plan_figures(model, constraints, request, column.deployment.llamacpp)
    if found is None:
        return None
    figures, extra, extra_cites, total, split = found
    unknown = [f"unknown: {u}" for u in figures.unknown]
    pp = column.deployment.pp
    if tp > 1 or pp > 1:  # no per-GPU rule: the column says so and does not vote on refusing tp
        unknown.append("unknown: llama.cpp splits layers across GPUs (--split-mode), not modelled")
    known = not figures.unknown
    gpu = (
        None
        if tp > 1 or pp > 1
        else GpuShare(
            status="split" if known else "unknown",
            kv_heads_per_gpu=None,
            kv_heads_how="",
            kv_bytes_per_token=figures.kv_bytes_per_token,
            kv_bytes_at_context=figures.kv_bytes_at_context,
            state_bytes_per_sequence=figures.state_bytes_per_sequence,
            weights_bytes=None,
            refused=(),
            valid_tp=(),
            unknown=tuple(figures.unknown),
            arithmetic=figures.arithmetic,
        )
    )
    return EngineView(
        engine=engine_id,
        title=ENGINE_TITLES.get(engine_id, engine_id),
        commit=constraints.commit,
        status="constraints used",
        registered=registered,
        flags=decision.flags,
        mechanism=figures.mechanism if known else None,
        kv_bytes_per_token=figures.kv_bytes_per_token,
        kv_bytes_at_context=figures.kv_bytes_at_context,
        naive_kv_bytes_at_context=None,
        state_bytes_per_sequence=figures.state_bytes_per_sequence,
        differs_from_prediction=False,
        notes=tuple(
            dict.fromkeys(
                [
                    *notes,
                    *unknown,
                    *extra,
                    "weights: a GGUF's depend on its quantization (apron gguf FILE reads them)",
                ]
            )
        ),
        citations=tuple(dict.fromkeys([*cites, *extra_cites])),
        gpu=gpu,
        capacity=None,
        bytes_for_batch=total if tp == 1 and pp == 1 else None,
        llamacpp_context=split,
    )


auto_kv_dtype = base.no_auto_kv_dtype
