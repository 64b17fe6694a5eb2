"""What the report makes of each engine's facts: its matrix cells, its architecture families,
how it decides MLA, why an architecture left its registry and which are drafts. One explicit
dict, one entry per engine; the functions live in the engine's own modules (matrix_cells.py,
families.py, registry_notices.py), which import nothing of the report."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apron.extractors.engine_api import MatrixCells
from apron.extractors.llamacpp import families as llamacpp_families
from apron.extractors.llamacpp import matrix_cells as llamacpp_cells
from apron.extractors.records import EngineFacts
from apron.extractors.sglang import families as sglang_families
from apron.extractors.sglang import matrix_cells as sglang_cells
from apron.extractors.trtllm import families as trtllm_families
from apron.extractors.trtllm import matrix_cells as trtllm_cells
from apron.extractors.vllm import families as vllm_families
from apron.extractors.vllm import matrix_cells as vllm_cells
from apron.extractors.vllm.registry_notices import draft_architectures as vllm_draft_architectures
from apron.extractors.vllm.registry_notices import removal_notes as vllm_removal_notes


@dataclass(frozen=True, kw_only=True)
class EngineReport:
    """The report's hooks for one engine; each left out means the engine says nothing there."""

    matrix_cells: MatrixCells | None = None  # None: any fact with an `architecture` field
    # architecture -> why it left the registry, from the engine's own facts (e.g. vLLM's list of
    # previously supported architectures); a bump shows it beside each removed row
    removal_notes: Callable[[EngineFacts], Mapping[str, str]] | None = None
    # the matrix's architecture families (extractors/family_cells.py): facts -> family -> cell,
    # and the rules in words, (family, rule) pairs; None: no family rules
    families: Callable[[EngineFacts], Mapping[str, Any]] | None = None
    family_rules: tuple[tuple[str, str], ...] = ()
    # how the engine decides MLA, for the matrix's disagreements (extractors/report/reviewer.py):
    # by "architecture" or by "model_type", and facts -> {that key: its answer in words, e.g.
    # "MLA", "MLA (conditional)", "MHA (explicit)"}; None: the engine says nothing about MLA
    mla_decided_by: str | None = None
    mla_verdicts: Callable[[EngineFacts], Mapping[str, str]] | None = None
    # facts -> the registered architectures that are drafts or speculative heads (an MTP module,
    # an EAGLE head), counted apart from the models people serve; None: the engine says none
    draft_architectures: Callable[[EngineFacts], set[str]] | None = None

    def __post_init__(self) -> None:
        if (self.mla_decided_by is None) != (self.mla_verdicts is None) or (
            self.mla_decided_by not in (None, "architecture", "model_type")
        ):
            raise ValueError(
                "mla_decided_by ('architecture' or 'model_type') and mla_verdicts are given "
                "together"
            )


NO_REPORT = EngineReport()

ENGINE_REPORTS: dict[str, EngineReport] = {
    "vllm": EngineReport(
        matrix_cells=vllm_cells.matrix_cells,
        mla_decided_by="model_type",
        mla_verdicts=vllm_cells.mla_verdicts,
        families=vllm_families.vllm_families,
        family_rules=vllm_families.VLLM_RULES,
        removal_notes=vllm_removal_notes,
        draft_architectures=vllm_draft_architectures,
    ),
    "sglang": EngineReport(
        matrix_cells=sglang_cells.matrix_cells,
        mla_decided_by="architecture",
        mla_verdicts=sglang_cells.mla_verdicts,
        families=sglang_families.sglang_families,
        family_rules=sglang_families.SGLANG_RULES,
    ),
    "llamacpp": EngineReport(
        matrix_cells=llamacpp_cells.matrix_cells,
        families=llamacpp_families.llamacpp_families,
        family_rules=llamacpp_families.LLAMACPP_RULES,
    ),
    "trtllm": EngineReport(
        matrix_cells=trtllm_cells.matrix_cells,
        families=trtllm_families.trtllm_families,
        family_rules=trtllm_families.TRTLLM_RULES,
    ),
}


def engine_report(engine_id: str) -> EngineReport:
    """The report's hooks for `engine_id`; an engine without an entry has none."""
    return ENGINE_REPORTS.get(engine_id, NO_REPORT)
