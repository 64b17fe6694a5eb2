"""The public Python API: only the names `apron` exports, used the way a caller would."""

from __future__ import annotations

import doctest
import shutil
from pathlib import Path

import pytest

import apron
from apron import (
    ConstraintsError,
    ConstraintSet,
    EngineConstraints,
    Plan,
    load_constraints,
    load_sample,
    plan,
)

GENERATED = Path(__file__).resolve().parent.parent / "generated"


def test_public_names_are_exactly_the_documented_ones():
    assert set(apron.__all__) == {
        "KV_DTYPES",
        "ApronInputError",
        "ConstraintSet",
        "ConstraintsError",
        "EngineConstraints",
        "ModelConfig",
        "Plan",
        "load_config",
        "load_constraints",
        "load_sample",
        "plan",
        "sample_names",
    }
    for name in apron.__all__:
        assert getattr(apron, name) is not None
    assert load_constraints.__doc__ and plan.__doc__ and apron.__doc__


def test_the_module_docstring_example_runs():
    failures, tried = doctest.testmod(apron, verbose=False)
    assert (failures, tried) == (0, 3)


def test_load_constraints_of_a_directory_gives_typed_engines():
    constraints = load_constraints(GENERATED)
    assert isinstance(constraints, ConstraintSet)
    llamacpp = constraints.get("llamacpp")
    assert isinstance(llamacpp, EngineConstraints)
    assert len(llamacpp.commit) == 40
    assert "LLM_ARCH_MAMBA" in {r.arch for r in llamacpp.rows("class_set_members")}


def test_plan_with_explicit_constraints_is_a_typed_prediction_citing_the_commits():
    constraints = load_constraints(GENERATED)
    result = plan(load_sample("llama-3.1-8b"), context=8192, constraints=constraints)
    assert isinstance(result, Plan)
    assert result.label == "prediction"
    assert result.prediction.kv_bytes_at_context == 32 * 8 * 128 * 2 * 2 * 8192
    stamps = {s.engine: s.commit for s in result.constraints}
    assert stamps["vllm"] == constraints.get("vllm").commit


def test_load_constraints_names_a_broken_module(tmp_path):
    broken = tmp_path / "generated"
    shutil.copytree(GENERATED, broken)
    init = broken / "llamacpp" / "__init__.py"
    init.write_text(init.read_text().replace("COMMIT = ", "COMMIT = 7 or "), encoding="utf-8")
    with pytest.raises(ConstraintsError, match="llamacpp"):
        load_constraints(broken)
