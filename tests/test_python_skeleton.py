"""Method bodies elided before the class tree parses a module; everything it reads is kept."""

from __future__ import annotations

import re

import pytest

from apron.extractors.errors import ParseError
from apron.extractors.parsing.python_skeleton import method_skeleton, module_outline
from apron.extractors.parsing.python_ts import parse_python, parse_tree
from apron.extractors.vllm.class_tree import ClassTree, c3_mro

MODEL = '''"""A model file."""
from vllm.model_executor.models.interfaces import SupportsPP


class MiniMLP(Base):
    """Doc that names
def not_a_header(x):
    and has a column-0 line
"""

    packed = {
        "qkv": ["q", "k"],
    }

    def __init__(
        self,
        config,
        prefix: str = "#(",
    ) -> None:
        super().__init__()
        text = """
column-0 text inside a method
"""
        self.x = 1

    @property
    async def forward(self, x) -> dict[str, int]:
        return {"a": 1}

    def one_line(self): return 1
    flag = True


if PLATFORM:

    def helper(model):
        return model.flag

    def factory(value):
        def inner(model):
            model.attr = value
            return model

        return inner
'''


def test_method_bodies_become_an_ellipsis_at_their_indentation():
    skeleton = method_skeleton(MODEL)
    assert "super().__init__()" not in skeleton
    assert "column-0 text inside a method" not in skeleton
    assert 'return {"a": 1}' not in skeleton
    assert "    ) -> None:\n        ...\n    @property\n" in skeleton
    assert "    async def forward(self, x) -> dict[str, int]:\n        ...\n" in skeleton
    assert not parse_tree(skeleton).has_error


def test_what_the_class_tree_reads_is_kept():
    skeleton = method_skeleton(MODEL)
    for kept in (
        "def not_a_header(x):\n",  # inside the class docstring, left as text
        '        "qkv": ["q", "k"],\n',
        '        prefix: str = "#(",\n',
        "    def one_line(self): return 1\n",
        "    flag = True\n",
        "        return model.flag\n",  # a module-level function (under `if`) keeps its body
        "            model.attr = value\n",  # and so does a function nested in one
    ):
        assert kept in skeleton


def test_a_method_keep_accepts_keeps_its_whole_body():
    seen = []

    def keep(definition: str) -> bool:
        seen.append(definition.split("(")[0].strip())
        return "self.x = 1" in definition

    skeleton = method_skeleton(MODEL, keep=keep)
    assert seen == ["def __init__", "async def forward"]  # methods with a block body only
    assert "super().__init__()" in skeleton
    assert "column-0 text inside a method\n" in skeleton
    assert "        self.x = 1\n" in skeleton
    assert 'return {"a": 1}' not in skeleton  # not accepted: elided
    assert skeleton.count("\n") < MODEL.count("\n")
    assert not parse_tree(skeleton).has_error
    assert method_skeleton(MODEL, keep=lambda definition: True) == MODEL


def test_functions_true_treats_top_level_functions_as_methods():
    text = (
        "def helper(x):\n    return x + 1\n\n\n"
        "def wanted(x):\n    return x\n\n\n"
        "class C:\n    def m(self):\n        return 2\n"
        "if True:\n    def nested(y):\n        return y\n"
    )
    keep = lambda code: "wanted" in code  # noqa: E731
    assert method_skeleton(text, keep, functions=True) == (
        "def helper(x):\n    ...\n"
        "def wanted(x):\n    return x\n\n\n"
        "class C:\n    def m(self):\n        ...\n"
        "if True:\n    def nested(y):\n        return y\n"
    )
    assert method_skeleton(text, keep) == text.replace("        return 2\n", "        ...\n")


def test_a_module_without_methods_is_unchanged():
    text = "import os\n\n\ndef f(x):\n    return x\n\n\nclass A:\n    x = 1\n"
    assert method_skeleton(text) == text


def test_a_skeleton_that_does_not_parse_falls_back_to_the_full_text():
    # a bracket continued at column 0 ends the body early in the line-based pass
    text = "class A:\n    def f(self):\n        return [\n1]\n    flag = True\n"
    assert parse_tree(method_skeleton(text)).has_error
    files = {"vllm/m.py": text}
    tree = ClassTree(files.get)
    info = tree.resolve("vllm.m", "A")
    assert set(info.methods) == {"f"}
    assert info.attributes["flag"].value is True


def test_full_modules_keep_their_method_bodies():
    text = "class A:\n    def f(self):\n        return 1\n"
    files = {"vllm/m.py": text}
    elided = ClassTree(files.get).module("vllm.m")
    full = ClassTree(files.get, full_modules=("vllm.m",)).module("vllm.m")
    assert b"return 1" not in elided.root.text
    assert b"return 1" in full.root.text


def test_the_mro_of_a_complete_class_is_computed_once():
    files = {"vllm/m.py": "class B:\n    pass\n\n\nclass A(B):\n    x = 1\n"}
    info = ClassTree(files.get).resolve("vllm.m", "A")
    first = c3_mro(info)
    assert [c.name for c in first] == ["A", "B"]
    assert info.mro_cache is first
    assert c3_mro(info) is first


OUTLINED = '''"""A model file."""
from vllm.model_executor.models.interfaces import SupportsPP


@register
class Helper(Base):
    """Never needed."""

    def forward(self, x):
        return x


def as_pooling(cls):
    class Pooling(cls):
        is_pooling_model = True

    return Pooling


class Model(SupportsPP):
    supports_pp = True
    packed = {
        "qkv": ["q", "k"],
    }

    def forward(self, input_ids, **kwargs):
        return input_ids


PoolingModel = as_pooling(Model)
'''


def test_outline_elides_top_level_bodies_and_keeps_their_spans():
    outline, spans = module_outline(OUTLINED)
    assert "supports_pp" not in outline and "Never needed" not in outline
    assert "@register\nclass Helper(Base):\n    ...\n" in outline
    assert "PoolingModel = as_pooling(Model)" in outline
    assert not parse_tree(outline).has_error
    lines = outline.split("\n")
    assert {lines[row].split("(")[0] for row in spans} == {
        "class Helper",
        "def as_pooling",
        "class Model",
    }
    model = next(span for row, span in spans.items() if lines[row].startswith("class Model"))
    assert OUTLINED[model[0] : model[1]].startswith("class Model(SupportsPP):\n")
    assert OUTLINED[model[0] : model[1]].rstrip().endswith("return input_ids")


def test_a_class_and_an_adapter_the_tree_needs_are_read_from_their_spans():
    files = {"vllm/m.py": OUTLINED}
    tree = ClassTree(files.get)
    model = tree.resolve("vllm.m", "Model")  # its fields and methods are elided in the outline
    assert model.attributes["supports_pp"].value is True
    assert model.methods["forward"].params == ("input_ids",)
    assert model.methods["forward"].has_var_keyword
    pooling = tree.resolve("vllm.m", "PoolingModel")  # the adapter's body, read in full
    assert pooling.attributes["is_pooling_model"].value is True
    assert [c.qualname for c in c3_mro(pooling)][:2] == [
        "vllm.m.as_pooling(vllm.m.Model).Pooling",
        "vllm.m.Model",
    ]


def test_a_line_joined_at_column_0_reads_the_module_as_a_skeleton():
    # `y = 1 + \` then `2` at column 0 would end the class body early in the outline.
    text = "class A:\n    y = 1 + \\\n2\n    flag = True\n"
    tree = ClassTree({"vllm/m.py": text}.get)
    assert tree.module("vllm.m").elided == {}
    assert tree.resolve("vllm.m", "A").attributes["flag"].value is True


def test_a_syntax_error_in_an_elided_class_body_is_the_files_error():
    text = "import os\n\n\nclass A(Base):\n    x = (1,\n    y = 2\n"
    with pytest.raises(ParseError) as whole:
        parse_python(text, "vllm/m.py")
    tree = ClassTree({"vllm/m.py": text}.get)
    with pytest.raises(ParseError) as outlined:
        tree.resolve("vllm.m", "A")
    assert str(outlined.value) == str(whole.value)


@pytest.mark.parametrize(
    "text",
    [
        "class A:\n    def f(self):\n        pass\n  x\n#c\ndef g(): ...\n",
        "\n\n   \nasync def h():\n\treturn 1\n",
        "x = 1\nclassy = 2\n class B: pass\n",
        "",
        "def",
    ],
)
def test_line_start_search_matches_a_multiline_caret(text):
    from apron.extractors.parsing.python_skeleton import FIRST_CODE, HEADER, _dedent_pattern

    pairs = [
        (HEADER, re.compile(r"^([ \t]*)(?:async[ \t]+)?(class|def)\b", re.M)),
        (FIRST_CODE, re.compile(r"^([ \t]*)[^ \t\r\n#]", re.M)),
        (_dedent_pattern(0), re.compile(r"^[ \t]{0,0}(?=[^ \t\r\n#])", re.M)),
        (_dedent_pattern(4), re.compile(r"^[ \t]{0,4}(?=[^ \t\r\n#])", re.M)),
    ]
    for fast, caret in pairs:
        for position in range(len(text) + 1):
            for end in (len(text), max(position, len(text) - 3)):
                expected = caret.search(text, position, end)
                found = fast.search(text, position, end)
                if expected is None:
                    assert found is None
                else:
                    assert found is not None
                    assert found[0] == expected.start()
                    assert found[1].groups() == expected.groups()


def test_odd_line_breaks_take_the_line_by_line_pass():
    # str.splitlines splits at a form feed, so `foo` is a line of its own at column 0 that
    # closes the class, and `f` is no method: the fast pass (lines end at "\n") must not run
    text = "class A:\n    x = 1 \x0cfoo\n    def f(self):\n        return 1\n"
    assert method_skeleton(text) == text
    assert method_skeleton(text.replace("\x0c", " ")) != text.replace("\x0c", " ")


@pytest.mark.parametrize(
    ("text", "quote"),
    [
        ('a """b""" c \'\'\'d', ""),
        ("x '''\n\"\"\" y '''\n z \"\"\"", ""),
        ('""""""', ""),
        ('"""" x', ""),
        ("rest ''' then \"\"\"", '"""'),
        ("no quotes at all", "'''"),
        ("", ""),
    ],
)
def test_quote_scan_within_bounds_agrees_with_scanning_the_slice(text, quote):
    from apron.extractors.parsing.python_skeleton import _open_quote, _open_quote_in

    padded = "'''" + text + '"""'
    for start in range(4):
        for end in range(len(padded) - 3, len(padded) + 1):
            expected = _open_quote(padded[start:end], quote)
            assert _open_quote_in(padded, start, end, quote) == expected


def test_a_body_ends_after_every_column_0_line_of_its_strings():
    # two docstrings with column-0 lines, then a code line at column 0 that ends the class
    text = (
        'class A:\n    def f(self):\n        """one\nnot code\n"""\n'
        "    def g(self):\n        '''two\nstill text\n'''\n        return 1\n"
        "x = 1\n"
    )
    outline, spans = module_outline(text)
    assert outline == "class A:\n    ...\nx = 1\n"
    (span,) = spans.values()
    assert text[span[0] : span[1]].endswith("        return 1\n")


STRINGY = [
    MODEL,
    OUTLINED,
    '"""Doc\nclass NotAClass:\n"""\nimport os\n\n\nclass A:\n    x = """a""" + """b\n'
    'def g(self):\n"""\n    def f(self):\n        return 1\n\n\nclass B:\n    y = 1\n',
    "class A:\n    '''doc'''\n    class Inner:\n        def f(self):\n            s = '''\n"
    "x\n'''\n            return s\n    def g(self):\n        return 2\nz = 3\n",
    'x = """\n    unterminated\n',
    # a string closed and another opened on a line that starts inside the first
    'x = """\nend""" + """\nclass Fake:\n    def f(self):\n"""\nclass B:\n'
    "    def f(self):\n        return 1\n",
    'class A:\n    def f(self):\n        return """a""", """\nb"""\n    flag = True\n',
]


@pytest.mark.parametrize("text", STRINGY)
def test_the_run_by_run_pass_gives_what_the_line_by_line_pass_gives(text, monkeypatch):
    from apron.extractors.parsing import python_skeleton as module_skeleton

    fast = (method_skeleton(text), module_outline(text))
    monkeypatch.setattr(module_skeleton, "ODD_SPACE", re.compile(""))  # every chunk line by line
    assert (method_skeleton(text), module_outline(text)) == fast
