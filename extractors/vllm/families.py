"""vLLM's architecture families for the matrix: the rules in words (VLLM_RULES) and the
function that applies them to vLLM's facts (class flags, registry sections, the MLA list)."""

from __future__ import annotations

from apron.extractors.family_cells import (
    FamilyCell,
    empty_cells,
    fact_rows,
    model_type_guess,
)
from apron.extractors.records import EngineFacts

VLLM_RULES = (
    (
        "dense",
        "a text-generation class (`is_text_generation_model`) with `attn_type` decoder "
        "that is in no other family below",
    ),
    (
        "MLA",
        "a text-generation class whose model_type, guessed from the architecture name, is "
        "in `is_deepseek_mla`'s list (vLLM decides by the config's model_type)",
    ),
    (
        "sliding window",
        "no per-architecture rule: vLLM reads `sliding_window` / `layer_types` from each config",
    ),
    ("hybrid attention+SSM", "`is_hybrid` (the class has `IsHybrid` in its MRO)"),
    ("SSM", "`is_attention_free` and `has_inner_state`"),
    ("recurrent", "no class of its own: an attention-free class with inner state is SSM"),
    ("diffusion", "no class flag"),
    ("encoder-decoder", "the registry files the row under `# [Encoder-decoder]`"),
    ("multimodal", "`supports_multimodal`"),
    (
        "pooling",
        "a pooling class (`is_pooling_model`, or no `is_text_generation_model`: vLLM "
        "converts it) with `score_type` bi-encoder, or a row the registry files in "
        "`_EMBEDDING_MODELS` (a generation class vLLM converts)",
    ),
    ("cross-encoder", "`score_type` cross-encoder (`SupportsCrossEncoding` in the MRO)"),
    ("late interaction", "`score_type` late-interaction (`SupportsLateInteraction`)"),
)


EMBEDDING_DICT = "_EMBEDDING_MODELS"


def vllm_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = empty_cells({f: r for f, r in VLLM_RULES if r.startswith("no ")})
    flags = {r.architecture: r for r in fact_rows(facts, "model_class_flags")}
    registry = {r.architecture: r for r in fact_rows(facts, "registry_rows")}
    mla_rows = [r for r in fact_rows(facts, "mla_model_types") if r.scope == "main"]
    mla = {r.model_type: r for r in mla_rows}
    if not flags:
        for cell in cells.values():
            cell.no_rule = cell.no_rule or "model_class_flags not extracted"
        return cells
    for arch, row in flags.items():
        if row.status != "resolved":
            continue
        where = f"{registry[arch].path if arch in registry else row.path} _ModelInfo.from_model_cls"
        placed = []
        if row.is_hybrid:
            placed.append(("hybrid attention+SSM", f"{where} is_hybrid"))
        if row.is_attention_free and row.has_inner_state:
            placed.append(("SSM", f"{where} is_attention_free, has_inner_state"))
        if row.supports_multimodal:
            placed.append(("multimodal", f"{where} supports_multimodal"))
        section = registry[arch].section if arch in registry else ""
        if "encoder-decoder" in section.lower():
            placed.append(("encoder-decoder", f"{registry[arch].path} # [{section}]"))
        pooling = row.is_pooling_model or row.is_text_generation_model is False
        if pooling and row.score_type == "cross-encoder":
            placed.append(("cross-encoder", f"{where} score_type"))
        elif pooling and row.score_type == "late-interaction":
            placed.append(("late interaction", f"{where} score_type"))
        elif pooling:
            placed.append(("pooling", f"{where} is_pooling_model"))
        elif arch in registry and registry[arch].dict_name == EMBEDDING_DICT:
            placed.append(("pooling", f"{registry[arch].path} {EMBEDDING_DICT}"))
            if "text-generation" in registry[arch].also_in and len(placed) == 1:
                placed.append(("dense", f"{registry[arch].path} _TEXT_GENERATION_MODELS"))
        guess = model_type_guess(arch)
        if row.is_text_generation_model and guess in mla:
            placed.append(("MLA", f"{mla[guess].path} {mla[guess].symbol}"))
        for family, trace in placed:
            cells[family].add(arch, trace)
        if (
            not placed
            and row.is_text_generation_model
            and row.attn_type == "decoder"
            and not row.is_attention_free
        ):
            cells["dense"].add(arch, f"{where} is_text_generation_model, attn_type")
    return cells
