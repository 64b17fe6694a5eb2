"""SGLang's architecture families for the matrix: the rules in words and the function that
applies them (model_config.py's architecture sets, the MLA chain, the registry)."""

from __future__ import annotations

from apron.extractors.family_cells import FamilyCell, empty_cells, fact_rows
from apron.extractors.records import EngineFacts

SGLANG_RULES = (
    (
        "dense",
        "registered (EntryClass) and in none of the name sets below (hybrids, which SGLang "
        "decides by config class, can be among them)",
    ),
    ("MLA", "an MLA branch of the attention-arch chain (`mla_architectures`)"),
    (
        "sliding window",
        "`is_hybrid_swa_model` (a window-aware pool); other windowed "
        "architectures are allocated at full context",
    ),
    (
        "hybrid attention+SSM",
        "decided by config class (`hybrid_arch.py`), not by architecture name",
    ),
    ("SSM", "decided by config class (`hybrid_arch.py`), not by architecture name"),
    ("recurrent", "no set"),
    ("diffusion", "no set in model_config.py"),
    ("encoder-decoder", "`is_encoder_decoder_model`"),
    ("multimodal", "`is_multimodal_model`"),
    ("pooling", "listed as not generating in `is_generation_model`"),
    ("cross-encoder", "`is_cross_encoding_pooler_model`"),
    ("late interaction", "no set"),
)
SGLANG_SETS = {
    "is_hybrid_swa_model": "sliding window",
    "is_encoder_decoder_model": "encoder-decoder",
    "is_multimodal_model": "multimodal",
    "is_cross_encoding_pooler_model": "cross-encoder",
}


def sglang_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = empty_cells(
        {f: r for f, r in SGLANG_RULES if r.startswith(("no ", "decided by config class"))}
    )
    registered = {r.architecture for r in fact_rows(facts, "registry_rows")}
    sets = fact_rows(facts, "architecture_sets")
    if not sets:
        for family in SGLANG_SETS.values():
            cells[family].no_rule = "architecture_sets not extracted at this commit"
        cells["pooling"].no_rule = "architecture_sets not extracted at this commit"
    placed: set[str] = set()
    for row in sets:
        family = SGLANG_SETS.get(row.set_name)
        if row.set_name == "is_generation_model" and row.member_returns is False:
            family = "pooling"
        if family is None or row.architecture == "*":
            continue
        conditional = getattr(row, "condition", None) is not None
        cells[family].add(row.architecture, f"{row.path} {row.symbol}", conditional=conditional)
        placed.add(row.architecture)
    cells["pooling"].members -= cells["cross-encoder"].members  # a cross-encoder also pools
    for row in fact_rows(facts, "mla_architectures"):
        cells["MLA"].add(row.architecture, f"{row.path} {row.symbol}", conditional=row.conditional)
        placed.add(row.architecture)
    if sets:
        path = next((r.path for r in fact_rows(facts, "registry_rows")), "")
        for arch in registered - placed:
            cells["dense"].add(arch, f"{path} EntryClass" if path else "EntryClass")
    else:
        cells["dense"].no_rule = "architecture_sets not extracted: dense is not separable"
    return cells
