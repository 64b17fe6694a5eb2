"""vLLM's KV-cache dtype literals (kv_dtype_literals): (snippet, expected) tables, shapes the reader
does not turn into data, and a commit without them."""

from __future__ import annotations

import pytest

from apron.extractors.snapshot import MemorySnapshot
from apron.extractors.vllm import kv_dtype_rules

PATH = "vllm/config/model.py"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('X = {"gemma2": "why", "glm4": "why" " not"}\n', [("gemma2", "why"), ("glm4", "why not")]),
        ("X: dict[str, str] = {'a': 'b'}\n", [("a", "b")]),
        ("X = {}\n", []),
    ],
)
def test_dict_literal_pairs(text, expected):
    rows, warnings = kv_dtype_rules.dict_literal(text, PATH, "float16_not_supported", "X")
    assert [(r.key, r.value, r.status) for r in rows] == [(k, v, "read") for k, v in expected]
    assert not warnings


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("X = dict(a='b')\n", "not a dict display"),
        ('X = {"a": B}\n', "not a pair of strings"),
        ("X = {**Y}\n", "not a pair of strings"),
    ],
)
def test_dict_literal_of_another_shape_is_unknown_with_a_warning(text, shape):
    rows, warnings = kv_dtype_rules.dict_literal(text, PATH, "float16_not_supported", "X")
    assert [r.status for r in rows] == ["unknown"] and [r.value for r in rows] == [""]
    assert len(warnings) == 1 and shape in warnings[0].message and warnings[0].path == PATH


def test_dict_literal_absent_is_none():
    assert kv_dtype_rules.dict_literal("Y = {}\n", PATH, "x", "X") is None


NORMALIZE = """
class C:
    def _normalize_quantization_config(self, config):
        quant_cfg = {}
        if producer == "modelopt":
            if algo is not None:
                if algo.upper() in {"FP8", "FP8_PB_WO"}:
                    quant_cfg["quant_method"] = "modelopt"
                elif algo.upper() == "NVFP4":
                    quant_cfg["quant_method"] = "modelopt_fp4"
                elif algo.startswith("W4"):
                    quant_cfg["quant_method"] = "w4"
                else:
                    raise ValueError(algo)
"""


def test_quant_methods_per_algorithm_and_an_unreadable_test():
    rows, warnings = kv_dtype_rules.quant_methods(NORMALIZE, "c.py")
    assert [(r.key, r.value, r.status) for r in rows] == [
        ("FP8", "modelopt", "read"),
        ("FP8_PB_WO", "modelopt", "read"),
        ("NVFP4", "modelopt_fp4", "read"),
        ('algo.startswith("W4")', "w4", "unknown"),
    ]
    assert len(warnings) == 1 and "algo.startswith" in warnings[0].message


def test_a_commit_without_the_literals_warns_for_each():
    snapshot = MemorySnapshot({"vllm/other.py": "x = 1\n"}, engine="vllm", commit="1" * 40)
    out = kv_dtype_rules.kv_dtype_literals(snapshot, {})
    assert out.records == ()
    assert [w.subject for w in out.warnings] == [
        "_FLOAT16_NOT_SUPPORTED_MODELS",
        "MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP",
        "_normalize_quantization_config",
    ]
    assert all(w.code == "absent" for w in out.warnings)
