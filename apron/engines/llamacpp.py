"""llama.cpp's extracted classes applied to a config: converter support and the architecture
class flags (recurrent, hybrid, diffusion, ...), plus its sliding-window rule.

Reads generated/llamacpp facts `hf_architectures` (HF architecture -> GGUF architecture and the
class-set predicates that return true for it) and `sliding_window` by field name. llama.cpp's KV
sizing beyond these classes is not extracted, so this view carries flags, not byte figures."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.constraints import EngineConstraints
from apron.engines.base import EngineDecision

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
                f"the llama.cpp converter registers no {model.architecture!r}: it cannot convert this "
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
        f"converts {model.architecture} to GGUF architecture {gguf!r} "
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
