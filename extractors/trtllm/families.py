"""TensorRT-LLM's architecture families for the matrix: only sliding window has a rule (the
feature matrix); no per-architecture class is extracted."""

from __future__ import annotations

from apron.extractors.family_cells import FAMILIES, FamilyCell, empty_cells, fact_rows
from apron.extractors.records import EngineFacts

TRTLLM_RULES = (
    ("sliding window", "the feature matrix's Sliding Window Attention cell is Yes"),
    (
        "other families",
        "no per-architecture class is extracted (only the registry and the feature matrix)",
    ),
)


def trtllm_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = empty_cells({f: "no per-architecture class is extracted" for f in FAMILIES})
    cells["sliding window"].no_rule = ""
    for cell in fact_rows(facts, "feature_matrix"):
        if cell.feature.lower().startswith("sliding window") and cell.status.lower() == "yes":
            cells["sliding window"].add(cell.architecture, f"{cell.path} {cell.feature}")
    return cells
