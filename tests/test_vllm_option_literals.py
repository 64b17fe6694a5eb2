"""vLLM's command-line literals apron takes the same flags for (extractors/vllm/option_literals.py):
CacheDType's members and the length parser's suffixes and auto spellings, from the miniatures."""

from __future__ import annotations

from apron.extractors.vllm.option_literals import (
    ARGPARSE_PATH,
    CACHE_PATH,
    length_parser,
    literal_members,
)
from tests.vllm_serving_miniatures import ARGPARSE, CACHE_CONFIG


def test_cache_dtype_members_in_order():
    rows, warnings = literal_members(CACHE_CONFIG, CACHE_PATH)
    assert warnings == []
    assert [(r.symbol, r.key, r.order) for r in rows] == [
        ("CacheDType", "auto", 0),
        ("CacheDType", "bfloat16", 1),
        ("CacheDType", "fp8", 2),
    ]


def test_length_suffixes_and_auto_spellings():
    rows, warnings = length_parser(ARGPARSE, ARGPARSE_PATH)
    assert warnings == []
    assert [(r.symbol, r.key, r.value) for r in rows] == [
        ("human_readable_int.decimal", "k", "1000"),
        ("human_readable_int.binary", "K", "1024"),
        ("human_readable_int_or_auto.auto", "-1", "-1"),
        ("human_readable_int_or_auto.auto", "auto", "-1"),
    ]


def test_an_absent_type_or_parser_is_a_warning():
    assert [w.code for w in literal_members("X = 1\n", CACHE_PATH)[1]] == ["absent"]
    assert [w.code for w in length_parser("def f():\n    pass\n", ARGPARSE_PATH)[1]] == ["absent"]
