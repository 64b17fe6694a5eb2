"""llama.cpp's architecture families for the matrix: the rules in words and the function that
applies them (class predicates, sliding-window types, the converter's mmproj registrations)."""

from __future__ import annotations

from apron.extractors.family_cells import FamilyCell, empty_cells, fact_rows
from apron.extractors.records import EngineFacts

LLAMACPP_RULES = (
    (
        "dense",
        "a converted text architecture with no class predicate below and no sliding-window type",
    ),
    ("MLA", "no MLA fact is extracted for llama.cpp"),
    (
        "sliding window",
        "its GGUF architecture's hparams loader assigns a LLAMA_SWA_TYPE other "
        "than none (`sliding_window` fact)",
    ),
    ("hybrid attention+SSM", "`llm_arch_is_hybrid`"),
    ("SSM", "no class of its own: SSM architectures are in `llm_arch_is_recurrent` (recurrent)"),
    ("recurrent", "`llm_arch_is_recurrent`"),
    ("diffusion", "`llm_arch_is_diffusion`"),
    ("encoder-decoder", "no encoder-decoder fact is extracted for llama.cpp"),
    ("multimodal", "the converter also registers the architecture for an mmproj file"),
    ("pooling", "no pooling fact is extracted for llama.cpp"),
    ("cross-encoder", "no pooling fact is extracted for llama.cpp"),
    ("late interaction", "no pooling fact is extracted for llama.cpp"),
)
LLAMACPP_CLASSES = {
    "llm_arch_is_hybrid": "hybrid attention+SSM",
    "llm_arch_is_recurrent": "recurrent",
    "llm_arch_is_diffusion": "diffusion",
}


def llamacpp_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = empty_cells({f: r for f, r in LLAMACPP_RULES if r.startswith("no ")})
    windowed = {
        r.gguf_name: r
        for r in fact_rows(facts, "sliding_window")
        if any(t != "none" for t in r.swa_types)
    }
    members = {(r.predicate, r.gguf_name): r for r in fact_rows(facts, "class_set_members")}
    text: dict[str, object] = {}
    for row in fact_rows(facts, "hf_architectures"):
        if row.resolution != "resolved":
            continue
        if row.model_type == "mmproj":
            cells["multimodal"].add(row.architecture, f"{row.path} {row.symbol}")
        elif row.model_type == "text":
            text[row.architecture] = row
    for arch, row in text.items():
        placed = False
        for predicate in row.properties:
            family = LLAMACPP_CLASSES.get(predicate)
            if family is None:
                continue
            member = members.get((predicate, row.gguf_arch))
            trace = f"{member.path} {member.symbol}" if member else predicate
            cells[family].add(arch, trace)
            placed = True
        if row.gguf_arch in windowed:
            rule = windowed[row.gguf_arch]
            cells["sliding window"].add(arch, f"{rule.path} {rule.symbol}")
            placed = True
        if not placed:
            cells["dense"].add(arch, f"{row.path} {row.symbol}")
    return cells
