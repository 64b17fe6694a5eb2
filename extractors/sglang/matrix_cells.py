"""SGLang's cells of the cross-engine matrix: registered architectures, flagged MLA (maybe
conditional) or explicit MHA from the ModelConfig attention chain."""

from __future__ import annotations

from apron.extractors.engine_api import MatrixCell
from apron.extractors.records import EngineFacts
from apron.extractors.sglang.records import (
    SglangExplicitMha,
    SglangMlaArchitecture,
    SglangRegistryRow,
)


def sglang_architecture_flags(facts: EngineFacts) -> dict[str, tuple[str, ...]]:
    """Per architecture, the model_config.py sets that name it."""
    found: dict[str, list[str]] = {}
    for row in facts.records("architecture_sets"):
        if row.architecture == "*":
            continue
        word = row.set_name if row.member_returns else f"not {row.set_name}"
        found.setdefault(row.architecture, []).append(word)
    return {a: tuple(sorted(set(w))) for a, w in found.items()}


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


def mla_verdicts(facts: EngineFacts) -> dict[str, str]:
    """architecture -> SGLang's MLA answer in words: SGLang decides MLA by architecture name
    (model_config.py's MLA list, conditional or not, and its explicit MHA list)."""
    says = {
        r.architecture: "MLA" + (" (conditional)" if r.conditional else "")
        for r in facts.records("mla_architectures")
    }
    for row in facts.records("explicit_mha_architectures"):
        says.setdefault(row.architecture, "MHA (explicit)")
    return says
