"""TensorRT-LLM's cells of the cross-engine matrix: registered via @register_auto_model;
documented constraints (footnotes) make a cell `registered*`; the feature matrix's Sliding
Window Attention column becomes a flag."""

from __future__ import annotations

from apron.extractors.engine_api import MatrixCell
from apron.extractors.records import EngineFacts
from apron.extractors.trtllm.records import (
    TrtllmFeatureCell,
    TrtllmRegisteredArchitecture,
    TrtllmSupportedModel,
)


def matrix_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    notes: dict[str, list[str]] = {}
    swa: dict[str, str] = {}
    for cell in facts.records("feature_matrix"):
        assert isinstance(cell, TrtllmFeatureCell)
        if cell.feature.lower().startswith("sliding window"):
            swa[cell.architecture] = cell.status
        for note in (*cell.notes, *cell.row_notes):
            if note not in notes.setdefault(cell.architecture, []):
                notes[cell.architecture].append(note)
    for row in facts.records("supported_models"):
        assert isinstance(row, TrtllmSupportedModel)
        for note in row.architecture_notes:
            if note not in notes.setdefault(row.architecture, []):
                notes[row.architecture].append(note)
    cells = {}
    for row in facts.records("registry_rows"):
        assert isinstance(row, TrtllmRegisteredArchitecture)
        constraint = notes.get(row.architecture, [])
        flags = (f"SWA {swa[row.architecture]}",) if row.architecture in swa else ()
        detail = row.class_name + (": " + " / ".join(constraint) if constraint else "")
        cells[row.architecture] = MatrixCell(
            "registered*" if constraint else "registered",
            detail,
            f"{row.path} @register_auto_model",
            flags,
        )
    return cells
