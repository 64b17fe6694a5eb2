"""The top-level outline the SGLang registry scan parses: what it drops, what it keeps as written
when in doubt, and that the scan reads the same as from the full text."""

from __future__ import annotations

import pytest

from apron.extractors.errors import ParseError
from apron.extractors.parsing.python_ts import parse_tree
from apron.extractors.sglang import registry_rows
from apron.extractors.sglang.registry_rows import scan_module
from apron.extractors.sglang.top_level import Outline, top_level_outline

PATH = "python/sglang/srt/models/m.py"


def full_scan(text: str, monkeypatch: pytest.MonkeyPatch):
    """The scan of the whole text, as before the outline."""
    with monkeypatch.context() as patch:
        patch.setattr(registry_rows, "top_level_outline", lambda t: Outline(t, ""))
        return scan_module(text, PATH)


def same_reading(text: str, monkeypatch: pytest.MonkeyPatch):
    scan, full = scan_module(text, PATH), full_scan(text, monkeypatch)
    for field in ("classes", "aliases", "imports", "entry", "nested_entry"):
        assert getattr(scan, field) == getattr(full, field), field
    return scan


MODEL = '''# Copyright header
"""Module docstring: class NotAClass(Base):
    EntryClass = NotAClass
"""
import torch
from torch import nn
from .base import (
    Base,
    Other as Renamed,
)


@register
class LlamaForCausalLM(Base):
    """Docstring with a line at column zero:
EntryClass = Hidden
"""

    def forward(self, x):
        from .secret import Inner
        EntryClass = Inner
        return x


def helper(
    a,
):
    return a


Alias = LlamaForCausalLM
EntryClass = [Alias, Renamed]
'''


def test_outline_keeps_names_imports_and_entry_only():
    outline = top_level_outline(MODEL)
    assert "class LlamaForCausalLM: ...\n" in outline.names
    for gone in ("forward", "Hidden", "Inner", "import torch", "helper", "@register", "Copyright"):
        assert gone not in outline.names
    assert "Alias = LlamaForCausalLM" in outline.names and "EntryClass = [" in outline.names
    assert "from torch import nn" in outline.imports and "Other as Renamed" in outline.imports


def test_scan_of_the_outline_is_the_scan_of_the_full_text(monkeypatch):
    scan = same_reading(MODEL, monkeypatch)
    assert scan.classes == {"LlamaForCausalLM"}  # not NotAClass (in a string)
    assert scan.entry is not None and scan.entry.names == ("Alias", "Renamed")
    assert scan.imports["Renamed"] == (1, "base", "Other")
    assert scan.aliases == {"Alias": "LlamaForCausalLM"}


def test_imports_are_read_only_when_used():
    scan = scan_module(MODEL, PATH)
    assert scan.read_imports is None
    assert scan.imports["nn"] == (0, "torch", "nn")
    assert scan.read_imports is not None


@pytest.mark.parametrize(
    "text",
    [
        # a column-0 line inside the brackets of a class body: the class stays as written
        "class A:\n    x = f(\n1)\n\nfrom m import B\nEntryClass = A\n",
        # a backslash continuation into a column-0 line
        "class A:\n    x = 1 + \\\n2\nEntryClass = A\n",
        # a triple quote inside a short string: the lines after it may be in a string
        'X = \'"""\'\nclass A:\n    y = 1\nfrom m import B\nZ = \'"""\'\nEntryClass = A\n',
        # an import inside a top-level try: all imports stay in place, in order
        "from a import X\ntry:\n    from b import X\nexcept ImportError:\n    pass\nEntryClass = X\n",
        # a statement after `;` on an import line
        "import os; EntryClass = A\nclass A: pass\n",
        "from m import A; EntryClass = A\n",
        # one-line and async definitions, decorators with arguments over several lines
        "class A: pass\nasync def f(): pass\n@dec(\n    1,\n)\nclass B(A): x = 1\nEntryClass = B\n",
        "\ufeffclass A: pass\nEntryClass = A\n",
        "",
        "# only a comment\n",
    ],
)
def test_doubtful_statements_keep_the_full_reading(text, monkeypatch):
    same_reading(text, monkeypatch)


def test_try_import_order_is_kept(monkeypatch):
    text = "from a import X\ntry:\n    from b import X\nexcept ImportError:\n    pass\n"
    assert top_level_outline(text).imports == ""
    assert same_reading(text, monkeypatch).imports["X"] == (0, "b", "X")


def test_column_zero_line_in_brackets_keeps_the_class():
    outline = top_level_outline("class A:\n    x = f(\n1)\n\nEntryClass = A\n")
    assert "x = f(" in outline.names


def test_outline_that_does_not_parse_falls_back_to_the_full_text(monkeypatch):
    # the comment's `)` balances the count, so the class is cut at `1)`: the outline is broken
    text = "class A:\n    x = f(  # )\n1)\nEntryClass = A\n"
    assert parse_tree(top_level_outline(text).names).has_error
    scan = same_reading(text, monkeypatch)
    assert scan.classes == {"A"} and scan.entry is not None and scan.entry.names == ("A",)


def test_broken_top_level_is_still_a_parse_error():
    with pytest.raises(ParseError) as err:
        scan_module("class (:\nEntryClass = A\n", PATH)
    assert PATH in str(err.value)


def test_broken_set_aside_import_is_a_parse_error_when_read():
    scan = scan_module("from m import A B\nclass C: pass\nEntryClass = C\n", PATH)
    assert scan.entry is not None and scan.entry.names == ("C",)
    with pytest.raises(ParseError) as err:
        scan.imports  # noqa: B018
    assert PATH in str(err.value)
