"""SGLang's cells of the cross-engine matrix: registered architectures, flagged MLA (maybe
conditional) or explicit MHA from the ModelConfig attention chain."""

from __future__ import annotations

from apron.extractors.records import EngineFacts
from apron.extractors.report.families import sglang_architecture_flags
from apron.extractors.runner.base import MatrixCell
from apron.extractors.sglang.records import (
    SglangExplicitMha,
    SglangMlaArchitecture,
    SglangRegistryRow,
)


def matrix_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    mla = {
        r.architecture: r
        for r in facts.records("mla_architectures")
        if isinstance(r, SglangMlaArchitecture)
    }
    mha = {
        r.architecture
        for r in facts.records("explicit_mha_architectures")
        if isinstance(r, SglangExplicitMha)
    }
    set_flags = sglang_architecture_flags(facts)
    cells = {}
    for row in facts.records("registry_rows"):
        assert isinstance(row, SglangRegistryRow)
        flags = []
        if row.architecture in mla:
            flags.append("MLA if condition holds" if mla[row.architecture].conditional else "MLA")
        if row.architecture in mha:
            flags.append("MHA (explicit)")
        flags.extend(set_flags.get(row.architecture, ()))
        cells[row.architecture] = MatrixCell(
            "registered", row.module, f"{row.path} EntryClass", tuple(flags)
        )
    return cells
