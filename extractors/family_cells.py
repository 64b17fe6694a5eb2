"""The families of the matrix and one engine's cell in a family: the vocabulary each engine's
own `families.py` fills (its rules and the function that applies them, named on its EngineSpec)
and `report/families.py` renders. Imports no engine."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from apron.extractors.records import EngineFacts

FAMILIES = (
    "dense",
    "MLA",
    "sliding window",
    "hybrid attention+SSM",
    "SSM",
    "recurrent",
    "diffusion",
    "encoder-decoder",
    "multimodal",
    "pooling",
    "cross-encoder",
    "late interaction",
)


@dataclass
class FamilyCell:
    """The architectures one engine puts in one family, with where the rule reads them."""

    members: set[str] = field(default_factory=set)
    traces: set[str] = field(default_factory=set)
    no_rule: str = ""  # why the engine's facts cannot place architectures in this family
    conditional: set[str] = field(default_factory=set)  # members only under an extra condition

    def add(self, architecture: str, trace: str, *, conditional: bool = False) -> None:
        self.members.add(architecture)
        self.traces.add(trace)
        if conditional:
            self.conditional.add(architecture)


def fact_rows(facts: EngineFacts, fact: str) -> tuple:
    """The records of one fact; none when the extraction does not have it."""
    try:
        return facts.fact(fact).records
    except KeyError:
        return ()


def empty_cells(no_rule: Mapping[str, str]) -> dict[str, FamilyCell]:
    """One empty cell per family, with the reason where the engine has no rule for it."""
    return {family: FamilyCell(no_rule=no_rule.get(family, "")) for family in FAMILIES}


def model_type_guess(architecture: str) -> str:
    """`DeepseekV4ForCausalLM` -> `deepseek_v4`: a guess from the name, labelled as such."""
    stem = re.sub(r"(For[A-Z]\w*|Model|LMHeadModel)$", "", architecture)
    stem = stem.replace("MoE", "Moe")
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+", stem)
    return "_".join(w.lower() for w in words)
