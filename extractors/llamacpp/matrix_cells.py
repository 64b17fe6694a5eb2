"""llama.cpp's cells of the cross-engine matrix: the HF -> GGUF join, text rows (the language
model) first, with the class-set flags llama.cpp gives the architecture."""

from __future__ import annotations

from apron.extractors.engine_api import MatrixCell
from apron.extractors.llamacpp.records import HfArchitecture
from apron.extractors.records import EngineFacts

CLASS_FLAGS = {
    "llm_arch_is_hybrid": "hybrid",
    "llm_arch_is_recurrent": "recurrent",
    "llm_arch_is_diffusion": "diffusion",
}


def matrix_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    cells: dict[str, MatrixCell] = {}
    rows = [r for r in facts.records("hf_architectures") if isinstance(r, HfArchitecture)]
    for row in sorted(rows, key=lambda r: r.model_type != "text"):
        if row.architecture in cells:
            continue
        if row.resolution != "resolved":
            cells[row.architecture] = MatrixCell(
                "converter registered", f"unresolved: {row.resolution}", f"{row.path} {row.symbol}"
            )
            continue
        flags = tuple(CLASS_FLAGS[p] for p in row.properties if p in CLASS_FLAGS)
        cells[row.architecture] = MatrixCell(
            "converts",
            f"GGUF {row.gguf_arch} ({row.model_type})",
            f"{row.path} {row.symbol}",
            flags,
        )
    return cells
