"""SGLang's KV-dtype architecture sets (kv_dtype_sets): (snippet, expected) tables, a shape the
reader does not turn into data, and a commit without the set."""

from __future__ import annotations

import pytest

from apron.extractors.sglang import kv_dtype_sets
from apron.extractors.snapshot import MemorySnapshot

PATH = "python/sglang/srt/arg_groups/overrides.py"
NAME = "_DEEPSEEK_FAMILY_ARCHS"


@pytest.mark.parametrize(
    ("text", "members"),
    [
        ('_DEEPSEEK_FAMILY_ARCHS = frozenset({"B", "A"})\n', ["A", "B"]),
        ('_DEEPSEEK_FAMILY_ARCHS = frozenset(["A", "A"])\n', ["A"]),
        ("_DEEPSEEK_FAMILY_ARCHS = {'A'}\n", ["A"]),
        ('_DEEPSEEK_FAMILY_ARCHS = ("A", "B" "C")\n', ["A", "BC"]),
    ],
)
def test_members(text, members):
    rows, warnings = kv_dtype_sets.string_set(text, PATH, NAME)
    assert [(r.architecture, r.status) for r in rows] == [(m, "read") for m in members]
    assert not warnings


@pytest.mark.parametrize(
    "text",
    ["_DEEPSEEK_FAMILY_ARCHS = frozenset(OTHER)\n", '_DEEPSEEK_FAMILY_ARCHS = {"A", B}\n'],
)
def test_another_shape_is_unknown_with_a_warning(text):
    rows, warnings = kv_dtype_sets.string_set(text, PATH, NAME)
    assert [(r.architecture, r.status) for r in rows] == [("", "unknown")]
    assert len(warnings) == 1 and "not a set of strings" in warnings[0].message


def test_a_commit_without_the_set_warns():
    snapshot = MemorySnapshot({PATH: "X = 1\n"}, engine="sglang", commit="1" * 40)
    out = kv_dtype_sets.kv_dtype_sets(snapshot, {})
    assert out.records == ()
    assert [(w.code, w.subject) for w in out.warnings] == [("absent", NAME)]
