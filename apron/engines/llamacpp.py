"""llama.cpp's extracted classes applied to a config: converter support and the architecture
class flags (recurrent, hybrid, diffusion, ...), plus its sliding-window rule.

Reads generated/llamacpp facts `hf_architectures` (HF architecture -> GGUF architecture and the
class-set predicates that return true for it) and `sliding_window` by field name. llama.cpp's KV
sizing beyond these classes is not extracted, so this view carries flags, not byte figures."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.constraints import EngineConstraints
from apron.engines.base import EngineDecision
from apron.llamacpp_hf import hf_header
from apron.llamacpp_memory import figures as llamacpp_figures
from apron.results import MechanismResult, Request
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
            ENGINE,
            None,
            None,
            (),
            ("no hf_architectures fact in generated/llamacpp",),
            (),
            computes_figures=False,
        )
    rows = matches(model, llamacpp)
    text_rows = [r for r in rows if r.model_type == "text"] or rows
    if not text_rows:
        return EngineDecision(
            ENGINE,
            None,
            None,
            (),
            (
                f"the llama.cpp converter registers no {shown(repr(model.architecture))}: it cannot convert this "
                "checkpoint to GGUF at this commit",
            ),
            (),
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
        ENGINE, None, None, flags, tuple(notes), tuple(cites), computes_figures=False
    )


# apron's KV dtype names -> llama.cpp cache types (ggml type_traits names); fp8 has none
CACHE_TYPE_OF = {"bf16": "GGML_TYPE_BF16", "fp16": "GGML_TYPE_F16", "fp32": "GGML_TYPE_F32"}


def plan_figures(
    model: ModelConfig, llamacpp: EngineConstraints, request: Request
) -> tuple[MechanismResult, tuple[str, ...], tuple] | None:
    """The llama.cpp column's figures for an HF config: its hparams through the converter's
    extracted HF -> GGUF mapping, sized by llama.cpp's extracted rules with n_ctx = --context
    and n_seq_max = --batch. None when the rules are not in generated/llamacpp."""
    if not llamacpp.has("converter_hparams") or not llamacpp.has("memory_rules"):
        return None
    rows = matches(model, llamacpp)
    row = next((r for r in rows if r.model_type == "text" and r.gguf_arch), None)
    if row is None:
        return None
    title = "llama.cpp"
    cache = CACHE_TYPE_OF.get(request.kv_dtype)
    header, unread, cites = hf_header(model, llamacpp, row)
    unknown: list[str] = []
    if cache is None:
        unknown.append(f"llama.cpp has no {request.kv_dtype} KV cache type")
    got = llamacpp_figures(
        header,
        llamacpp,
        n_ctx=request.context,
        n_seq_max=max(1, request.batch),
        type_k=cache or "GGML_TYPE_F16",
        type_v=cache or "GGML_TYPE_F16",
    )
    notes = [
        f"{title} figures: n_ctx = --context, n_seq_max = --batch "
        "(llama.cpp splits n_ctx across the sequences); per sequence below = total / n_seq_max",
        *got.notes,
        *(f"llama.cpp: {a}" for a in got.arithmetic),
    ]
    if request.context is not None:  # context_length only sizes a context left at 0
        unread = [u for u in unread if u[0] != "context_length"]
    if unread:  # the converter computes a sizing key: apron would size a different file
        names = [text for _, text in unread]
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        unknown.append(f"the converter computes {', '.join(names[:3])}{more}")
    elif got.unknown:
        unknown.extend(got.unknown)
    n = max(1, request.batch)
    kv = None if unknown or got.kv_bytes is None else got.kv_bytes // n
    state = None if unknown or got.state_bytes is None else got.state_bytes // n
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
    return result, tuple(notes), (*cites, *got.citations)
