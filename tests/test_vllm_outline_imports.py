"""The class tree reads a module outline's plain top-level `from` imports from its text
(`split_plain_imports`) and parses only the rest; the bindings must be those of the whole
outline's tree, in the same order, and a line that only looks like an import is not read."""

from __future__ import annotations

import pytest

from apron.extractors.errors import ParseError
from apron.extractors.parsing.python_skeleton import module_outline
from apron.extractors.parsing.python_ts import from_import, parse_python, parse_tree
from apron.extractors.vllm import class_tree
from apron.extractors.vllm.class_tree import ClassTree, Module, _collect_bindings
from apron.extractors.vllm.outline_imports import outside_statements, split_plain_imports


def tree_bindings(text: str, path: str = "vllm/pkg/m.py") -> tuple[dict, list[str]]:
    """The bindings as the whole outline's tree gives them (no text reading)."""
    root = parse_python(module_outline(text, lean=True)[0], path)
    mod = Module("vllm.pkg.m", path, root, {}, [])
    _collect_bindings(root, mod.bindings, mod.star_imports, mod, False)
    return _shape(mod.bindings), mod.star_imports


def _shape(bindings: dict) -> dict:
    return {
        name: (b.kind, b.module, b.name, b.node.start_point[0] if b.node is not None else None)
        for name, b in bindings.items()
    }


def read_bindings(text: str, path: str = "vllm/pkg/m.py") -> tuple[dict, list[str], Module]:
    mod = ClassTree({path: text}.get).module("vllm.pkg.m")
    return _shape(mod.bindings), mod.star_imports, mod


PLAIN = """\
from __future__ import annotations
from .a import A
from ..b.c import (
    C,
    D as E,
)
from vllm.x import *
from . import sibling
from .a import A as Again, F
class Model(A):
    ...
"""


def test_plain_imports_are_read_from_the_text_with_their_rows():
    outline = module_outline(PLAIN)[0]
    rest, imports = split_plain_imports(outline)
    assert rest.count("\n") == outline.count("\n")  # rows are kept
    assert "import" not in rest.replace("from __future__ import annotations", "")
    assert [(i[0], i[1], i[2], i[3], i[4]) for i in imports] == [
        (1, 1, 1, "a", [("A", "")]),
        (2, 5, 2, "b.c", [("C", ""), ("D", "E")]),
        (6, 6, 0, "vllm.x", "*"),
        (7, 7, 1, "", [("sibling", "")]),
        (8, 8, 1, "a", [("A", "Again"), ("F", "")]),
    ]
    assert outside_statements(parse_python(rest, "m.py"), imports)


def test_the_text_reading_gives_the_trees_bindings():
    names, stars, mod = read_bindings(PLAIN)
    assert (names, stars) == tree_bindings(PLAIN)
    assert names["E"] == ("import", "vllm.b.c", "D", None)
    assert stars == ["vllm.x"]
    assert "annotations" not in names  # `__future__` binds nothing, as in the tree


@pytest.mark.parametrize(
    "line",
    [
        "from .a import A  # noqa: E402",
        "from .a import A; B = 1",
        "from .a import (A,  # the first\n    B)",
        "from .a import (\n    A,\n) ; B = 1",
        "from .a import A, \\\n    B",
        "from .a import A,",
        "from .a import (A, B",
        "from .a import class",
        "from .a import A as match",
        "from .ünicode import A",
        "from .a import A as",
        "from.a import A",
        "from .a import (A)(B)",
        "from 1a import A",
        "from .a.class import A",
        "from .a import (*)",
        "  from .a import A",
    ],
)
def test_any_other_import_is_left_to_the_tree(line):
    outline = line + "\n"
    assert split_plain_imports(outline) == (outline, [])


@pytest.mark.parametrize(
    "line",
    [
        "from .a  import  A  as  B ,  C",
        "from\t.a\timport\tA",
        "from ...a import (\n  A\n  as\n  B\n)",
        "from a.b import (A, B,)",
        "from . import *",
        "from a import A_1, type_, _b",
    ],
)
def test_a_plain_import_reads_as_the_tree_reads_it(line):
    outline = f"X = 1\n{line}\nY = 2\n"
    rest, imports = split_plain_imports(outline)
    root = parse_tree(outline)
    assert not root.has_error
    (statement,) = [c for c in root.children if c.type == "import_from_statement"]
    (first, last, level, module, names) = imports[0]
    assert (first, last) == (statement.start_point[0], statement.end_point[0])
    wildcard = names == "*"
    pairs = [] if wildcard else [(alias or name, name) for name, alias in names]
    assert from_import(statement) == (level, module, pairs, wildcard)
    assert rest.splitlines()[0] == "X = 1" and rest.splitlines()[-1] == "Y = 2"
    assert rest.count("\n") == outline.count("\n")


def test_rows_are_kept_when_the_module_starts_with_an_import():
    text = "from .a import A\nfrom .b import B\n\nclass Model(A):\n    x = 1\nfrom .c import C\n"
    outline, elided = module_outline(text, lean=True)
    rest, imports = split_plain_imports(outline)
    assert rest == "\n\n\nclass Model: ...\n\n"
    assert [i[:2] for i in imports] == [(0, 0), (1, 1), (4, 4)]
    mod = ClassTree({"vllm/pkg/m.py": text}.get).module("vllm.pkg.m")
    assert mod.bindings["Model"].node.start_point[0] == 3 and 3 in mod.elided
    info = ClassTree({"vllm/pkg/m.py": text}.get).resolve("vllm.pkg.m", "Model")
    assert info.attributes["x"].value == 1  # the body is read from its span


def test_an_import_line_inside_a_string_is_not_read_as_one():
    text = (
        "from .base import Base\n"
        "class Target(Base):\n"
        "    flag = True\n"
        'NOTE = """\n'
        "from .elsewhere import Target\n"
        '"""\n'
    )
    names, _, mod = read_bindings(text)
    assert names["Target"][0] == "class"
    assert (names, mod.star_imports) == tree_bindings(text)
    # what the check saw: the blanked row is inside a top-level statement
    rest, imports = split_plain_imports(module_outline(text, lean=True)[0])
    assert len(imports) == 2
    assert not outside_statements(parse_python(rest, "m.py"), imports)


def test_text_imports_are_bound_in_order_among_the_nested_ones():
    text = (
        "from .first import Early\n"
        "try:\n"
        "    from .fast import Impl, Early\n"
        "except ImportError:\n"
        "    from .slow import Impl\n"
        "from .override import Impl\n"
        "if TYPE_CHECKING:\n"
        "    from .typing_only import Late\n"
        "else:\n"
        "    from .runtime import Late\n"
        "from .last import Late as Later\n"
        "class Model:\n"
        "    ...\n"
        "from .other import Model\n"
        "Alias = Model\n"
        "from .other import Later as Alias\n"
        "try:\n"
        "    from .stars_first import *\n"
        "except ImportError:\n"
        "    pass\n"
        "from .stars_second import *\n"
    )
    names, stars, _ = read_bindings(text)
    assert (names, stars) == tree_bindings(text)
    assert names["Early"][1] == "vllm.pkg.first"  # a nested import does not replace it
    assert names["Impl"][1] == "vllm.pkg.override"  # a later top-level import does
    assert names["Late"][1] == "vllm.pkg.runtime"
    assert names["Model"][:2] == ("import", "vllm.pkg.other")  # after the class, it wins
    assert names["Alias"] == ("import", "vllm.pkg.other", "Later", None)
    assert stars == ["vllm.pkg.stars_first", "vllm.pkg.stars_second"]


def test_an_outline_that_does_not_parse_without_its_imports_is_parsed_whole(monkeypatch):
    parsed = []
    real = class_tree.parse_python

    def recording(text, path, **kwargs):
        parsed.append(text)
        return real(text, path, **kwargs)

    monkeypatch.setattr(class_tree, "parse_python", recording)
    text = "from .a import A\nX = [\n    1,\n]\n"
    read_bindings(text)
    assert len(parsed) == 1 and "import" not in parsed[0]
    parsed.clear()
    broken = "from .a import A\nX = [\n"
    with pytest.raises(ParseError, match="line 2"):
        read_bindings(broken)
    assert len(parsed) >= 2 and parsed[1].startswith("from .a import A")
