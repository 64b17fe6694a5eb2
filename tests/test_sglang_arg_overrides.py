"""SGLang's per-architecture overrides of the pool settings (extractors/sglang/arg_overrides.py)
and the pool ratios' ServerArgs defaults, read from the miniature overrides.py and server_args.py."""

from __future__ import annotations

from apron.extractors.sglang.arg_overrides import arg_overrides
from apron.extractors.sglang.serving_defaults import pool_ratio_defaults
from tests.sglang_serving_miniatures import OVERRIDES, OVERRIDES_PATH, serving_files

SERVER_ARGS_PATH = "python/sglang/srt/server_args.py"


def _rows(text: str):
    rows, warnings = arg_overrides(text, OVERRIDES_PATH)
    return [
        (r.setting, r.value, r.architectures, r.predicate, r.guards, r.applies_by_default)
        for r in rows
    ], warnings


def test_each_override_names_its_architectures_its_tests_and_whether_defaults_get_it():
    rows, warnings = _rows(OVERRIDES)
    assert warnings == []
    assert rows == [
        (
            "swa_full_tokens_ratio",
            "0.25",
            ("TinySwa", "TinySwaMtp"),
            "",
            ("server_args.swa_full_tokens_ratio == ServerArgs.swa_full_tokens_ratio",),
            True,
        ),
        (
            "page_size",
            "64",
            ("TinySwa", "TinySwaMtp"),
            "",
            ("server_args.enable_hierarchical_cache",),
            False,
        ),
        ("disable_hybrid_swa_memory", "True", (), 'lambda arch: "TinyGemma" in arch', (), True),
    ]


def test_a_value_that_is_not_a_literal_is_a_row_with_a_warning():
    text = '@_register_for("A")\ndef f(s, h):\n    size = 256\n    return {"page_size": size}\n'
    rows, warnings = _rows(text)
    assert rows == [("page_size", "", ("A",), "", (), True)]
    assert [w.code for w in warnings] == ["override_not_literal"]


def test_the_constant_table_and_undecorated_functions():
    text = (
        'MODEL_OVERRIDES = {"A": {"page_size": 16, "dtype": "x"}}\n'
        'def helper(s):\n    return {"page_size": 8}\n'
    )
    rows, _ = _rows(text)
    assert rows == [("page_size", "16", ("A",), "", (), True)]


def test_the_pool_ratio_defaults_are_literal_rows_and_an_absent_one_none():
    text = serving_files("")[SERVER_ARGS_PATH]
    rows = pool_ratio_defaults(text, SERVER_ARGS_PATH)
    assert [(r.setting, r.role, r.kind, r.value) for r in rows] == [
        ("swa_full_tokens_ratio", "swa_full_tokens_ratio", "literal", "0.8")
    ]
