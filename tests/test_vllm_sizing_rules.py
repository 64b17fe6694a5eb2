"""vLLM's KV cache sizing methods read as code paths (extractors/vllm/sizing_rules.py): the tests
and the value of each return, and of each default get_batch_defaults assigns, as expressions of the one rule language."""

from __future__ import annotations

import pytest

from apron.extractors.vllm.sizing_rules import INTERFACE_PATH, sizing_paths
from tests.vllm_serving_miniatures import (
    SIZING_ARGS,
    SIZING_ARGS_PATH,
    SIZING_CONFIG,
    SIZING_CONFIG_PATH,
    SIZING_INTERFACE,
)

WINDOW = ("SlidingWindowSpec", "max_admission_blocks_per_request")


def _paths(text: str, path: str, *methods: tuple[str, str]):
    rows, warnings = sizing_paths(text, path, methods)
    return [(r.symbol, r.effect, r.target, r.conditions, r.value) for r in rows], warnings


def test_a_local_is_substituted_into_the_returned_expression():
    rows, warnings = _paths(SIZING_INTERFACE, INTERFACE_PATH, WINDOW)
    assert warnings == []
    assert rows == [
        (
            "SlidingWindowSpec.max_admission_blocks_per_request",
            "return",
            "",
            (),
            (
                "+",
                (
                    "call",
                    "cdiv",
                    (
                        "call",
                        "min",
                        ("+", ("-", "self.sliding_window", 1), "max_in_flight_tokens"),
                        "max_model_len",
                    ),
                    "self.block_size",
                ),
                1,
            ),
        )
    ]


def test_a_local_reassigned_under_an_if_becomes_a_choice():
    rows, _ = _paths(
        SIZING_INTERFACE, INTERFACE_PATH, ("FullAttentionSpec", "max_memory_usage_bytes")
    )
    ((_symbol, _effect, _target, conditions, value),) = rows
    assert conditions == ()
    length = "vllm_config.model_config.max_model_len"
    dcp = "vllm_config.parallel_config.decode_context_parallel_size"
    tokens = ("?:", (">", dcp, 1), ("call", "cdiv", length, dcp), length)
    assert value == ("*", ("call", "cdiv", tokens, "self.block_size"), "self.page_size_bytes")


def test_if_elif_else_gives_one_path_per_clause_with_the_earlier_tests_negated():
    rows, _ = _paths(SIZING_INTERFACE, INTERFACE_PATH, ("MambaSpec", "max_memory_usage_bytes"))
    mode = "vllm_config.cache_config.mamba_cache_mode"
    is_all, is_align = ("==", mode, ("str", "all")), ("==", mode, ("str", "align"))
    assert [r[3] for r in rows] == [
        (is_all,),
        (("not", is_all), is_align),
        (("not", is_all), ("not", is_align)),
    ]
    assert rows[2][4] == "self.page_size_bytes"


def test_nested_returns_keep_their_enclosing_tests_in_source_order():
    rows, _ = _paths(SIZING_CONFIG, SIZING_CONFIG_PATH, ("VllmConfig", "max_concurrent_batches"))
    pp = "self.parallel_config.pipeline_parallel_size"
    assert [(r[3], r[4]) for r in rows] == [
        (("self.scheduler_config.async_scheduling", ("<=", pp, 1)), 2),
        ((), pp),
    ]


def test_defaults_are_assigned_per_dictionary_key_and_a_try_leaves_its_names_free():
    rows, warnings = _paths(SIZING_ARGS, SIZING_ARGS_PATH, ("EngineArgs", "get_batch_defaults"))
    assert warnings == []
    key = "tokens[UsageContext.OPENAI_API_SERVER]"
    big = (">=", "device_memory", ("*", 70, "GiB_bytes"))
    assert [r[1:] for r in rows] == [
        ("assign", key, (big,), 8192),
        ("assign", key, (("not", big),), 2048),
        ("assign", key, (("call", "current_platform.is_cpu"),), ("*", 2048, "world_size")),
        ("return", "", (), ()),
    ]


def test_an_absent_method_is_a_warning_not_a_row():
    rows, warnings = _paths(SIZING_INTERFACE, INTERFACE_PATH, ("ChunkedLocalAttentionSpec", "x"))
    assert rows == []
    assert [w.code for w in warnings] == ["absent"]


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        ("        for x in y:\n            return x\n", "a statement of type for_statement"),
        ("        self.x = 1\n        return 1\n", "an assignment of this shape"),
        (
            "        if a:\n            n = 1\n        return n\n",
            "n, bound on some branches only, is read",
        ),
    ],
)
def test_code_of_another_shape_is_an_unknown_row_naming_it(body, shape):
    text = "class SlidingWindowSpec:\n    def max_admission_blocks_per_request(self, a):\n" + body
    rows, warnings = sizing_paths(text, INTERFACE_PATH, (WINDOW,))
    assert [r.status for r in rows] == ["unknown"]
    assert shape in rows[0].reason
    assert [w.code for w in warnings] == ["unreadable_sizing"]
