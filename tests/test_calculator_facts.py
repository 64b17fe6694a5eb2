"""Each engine names the facts apron evaluates for its figures (`EngineSpec.calculator_facts`): a
bump lists their changes first and whole. Every fact apron/ names in its code is either one of
them or a fact apron reads only to say which engines register a model."""

from __future__ import annotations

import re

import pytest

from apron.extractors.engines import ENGINES
from tests.conftest import REPO_ROOT

# facts apron reads for support, names and classes, not for a figure (each a large kind a bump
# may cut)
SUPPORT_ONLY = {
    "vllm": {"registry_rows", "model_class_flags"},
    "sglang": {"registry_rows"},
    "llamacpp": {"arch_names", "hf_architectures"},
    "trtllm": {"registry_rows", "supported_models", "feature_matrix"},  # no figure is extracted
}


def named_in_apron() -> set[str]:
    names: set[str] = set()
    for path in (REPO_ROOT / "apron").rglob("*.py"):
        names |= set(re.findall(r'"([a-z][a-z0-9_]+)"', path.read_text(encoding="utf-8")))
    return names


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_fact_apron_evaluates_is_a_calculator_fact(engine):
    spec = ENGINES[engine]
    facts = {kind.name for kind in spec.fact_kinds}
    read = facts & named_in_apron()
    assert read - set(spec.calculator_facts) <= SUPPORT_ONLY[engine], sorted(
        read - set(spec.calculator_facts) - SUPPORT_ONLY[engine]
    )
    assert not set(spec.calculator_facts) & SUPPORT_ONLY[engine]
    assert set(spec.calculator_facts) <= facts  # each names one of the engine's facts
