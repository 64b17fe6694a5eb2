"""vLLM's cells of the cross-engine matrix: registered architectures, their task group, the
class flags set on their model class, and a flag where the architecture's name suggests a
model_type that is_deepseek_mla() lists."""

from __future__ import annotations

import re

from apron.extractors.records import EngineFacts
from apron.extractors.report.families import vllm_architecture_flags
from apron.extractors.runner.base import MatrixCell
from apron.extractors.vllm.records import MlaModelType, RegistryRow


def model_type_guess(architecture: str) -> str:
    """`DeepseekV4ForCausalLM` -> `deepseek_v4`: a guess from the name, labelled as such."""
    stem = re.sub(r"(For[A-Z]\w*|Model|LMHeadModel)$", "", architecture)
    stem = stem.replace("MoE", "Moe")
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+", stem)
    return "_".join(w.lower() for w in words)


def main_mla_model_types(facts: EngineFacts) -> set[str]:
    """The model types is_deepseek_mla() lists for the main model (not EAGLE inner models)."""
    return {
        r.model_type
        for r in facts.records("mla_model_types")
        if isinstance(r, MlaModelType) and r.scope == "main"
    }


def matrix_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    mla = main_mla_model_types(facts)
    class_flags = vllm_architecture_flags(facts)
    cells = {}
    for row in facts.records("registry_rows"):
        assert isinstance(row, RegistryRow)
        detail = row.task_group + (f" ({row.section})" if row.section else "")
        if row.also_in:
            detail += "; also " + ", ".join(row.also_in)
        guess = model_type_guess(row.architecture)
        flags = class_flags.get(row.architecture, ())
        if guess in mla:
            flags = (*flags, f"MLA if model_type is {guess}")
        cells[row.architecture] = MatrixCell(
            "registered", detail, f"{row.path} {row.dict_name}", flags
        )
    return cells
