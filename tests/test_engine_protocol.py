"""apron's engines behind one protocol: every registered engine package implements each member
of apron.engines.base.EngineRules, and the planner names no engine in a branch."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from apron.engines import base
from apron.planning.engine_registry import ENGINE_RULES, REFERENCE_ENGINE

PLANNER = Path(__file__).resolve().parent.parent / "apron" / "planning" / "planner.py"
MEMBERS = (
    "decide",
    "default_context",
    "own_view",
    "memory_fraction",
    "fit_capacity",
    "pooling",
    "kv_dtype_unknown",
    "tp_refusals",
    "state_tp_refusal",
    "auto_kv_dtype",
)


def test_the_protocol_lists_the_members_the_planner_calls():
    declared = {
        name
        for name, value in vars(base.EngineRules).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }
    assert declared == set(MEMBERS)


def test_every_engine_package_implements_every_member():
    assert sorted(ENGINE_RULES) == ["llamacpp", "sglang", "trtllm", "vllm"]
    for engine_id, rules in ENGINE_RULES.items():
        assert rules.ENGINE == engine_id
        assert rules.__name__ == f"apron.engines.{engine_id}"
        assert rules.__file__.endswith(f"engines/{engine_id}/__init__.py")
        for member in MEMBERS:
            assert callable(getattr(rules, member, None)), f"{engine_id} lacks {member}"


def test_shared_defaults_are_assigned_where_an_engine_has_none_of_its_own():
    assert ENGINE_RULES["trtllm"].fit_capacity is base.block_capacity
    assert ENGINE_RULES["vllm"].own_view is base.no_own_view
    assert ENGINE_RULES["llamacpp"].own_view is not base.no_own_view
    assert ENGINE_RULES["sglang"].memory_fraction is not base.no_memory_fraction
    assert ENGINE_RULES["vllm"].fit_capacity is not base.block_capacity
    assert REFERENCE_ENGINE == "vllm"
    assert ENGINE_RULES["sglang"].tp_refusals is base.no_tp_refusals
    assert ENGINE_RULES["vllm"].state_tp_refusal is not base.no_state_tp_refusal


def test_the_shared_share_asks_the_engine_for_its_tp_refusals():
    per_gpu = (PLANNER.parent.parent / "mechanisms" / "per_gpu.py").read_text(encoding="utf-8")
    assert 'c.engine == "vllm"' not in per_gpu and "MambaMixer2" not in per_gpu
    assert "engine.tp_refusals(" in per_gpu and "engine.state_tp_refusal(" in per_gpu


def test_the_planner_names_no_engine_in_a_branch():
    text = PLANNER.read_text(encoding="utf-8")
    engine_names = "|".join(ENGINE_RULES)
    branches = re.findall(
        rf"engine(?:_id)? [!=]= |[!=]= \"(?:{engine_names})\"|in \(\"(?:{engine_names})\"", text
    )
    assert branches == []
    assert "_rules.ENGINE" not in text
