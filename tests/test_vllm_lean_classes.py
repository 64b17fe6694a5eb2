"""The class tree reads a class from its lean skeleton (each elided method as `def name(): ...`)
and a method's parameters from its signature's text only when they are asked for; what it
reads must be what the full skeleton gives."""

from __future__ import annotations

import pytest

from apron.extractors.errors import ParseError
from apron.extractors.parsing.python_skeleton import (
    lean_class_skeleton,
    method_skeleton,
    module_outline,
)
from apron.extractors.parsing.python_ts import parse_python, parse_tree
from apron.extractors.vllm.class_tree import ClassTree, Method, _method
from apron.extractors.vllm.signature_text import plain_parameters

MODEL = '''\
from vllm.model_executor.models.interfaces import SupportsPP


class ToyForCausalLM(nn.Module, SupportsPP):
    """A toy.

def not_a_method(self):
    """
    packed = {"qkv": ["q", "k", "v"]}
    flag: ClassVar[bool] = True

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.x = 1

    @property
    def size(self) -> int:  # a comment, (with a bracket
        return 3

    async def stream(
        self,
        a: dict[str, tuple[int, int]] = {"(": 1},
        *args: int,
        b="#,)",  # why: the default text
        **kwargs: object,
    ) -> "Out":
        yield a

    def one_line(self, q): return q

    def sort(self, key=lambda a, b: a, *, reverse=False):
        return key

    class Inner:
        def inner_method(self, r, /, s):
            return r

    def forward(cls, input_ids, positions, intermediate_tensors=None):
        return input_ids
'''


def test_elided_methods_are_written_as_their_names_and_their_signatures_kept():
    lean, signatures = lean_class_skeleton(MODEL)
    assert "    def __init__(): ...\n" in lean
    assert "    def stream(): ...\n" in lean  # `async` is not needed to know the name
    assert "    def one_line(self, q): return q\n" in lean  # not elided: kept as it is
    assert "        def inner_method(): ...\n" in lean
    assert "def not_a_method(self):" in lean  # inside the docstring, untouched
    rows = lean.splitlines()
    read = {rows[row].strip(): MODEL[start:end] for row, (start, end) in signatures.items()}
    assert read["def stream(): ..."].startswith("async def stream(\n")
    assert read["def stream(): ..."].endswith(') -> "Out":\n')
    assert read["def __init__(): ..."] == (
        'def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:\n'
    )
    assert not parse_tree(lean).has_error


def test_a_lean_class_reads_as_its_full_skeleton():
    lean = ClassTree({"vllm/toy.py": MODEL}.get).resolve("vllm.toy", "ToyForCausalLM")
    full_tree = ClassTree({"vllm/toy.py": method_skeleton(MODEL)}.get, full_modules=("vllm.toy",))
    full = full_tree.resolve("vllm.toy", "ToyForCausalLM")
    assert list(lean.methods) == list(full.methods)
    assert lean.methods == full.methods  # parameters compared, so read from the signatures
    assert repr(lean.methods["stream"]) == repr(full.methods["stream"])
    assert lean.methods["stream"].params == ("a", "b")
    assert lean.methods["stream"].has_var_keyword
    assert lean.methods["forward"].params == ("input_ids", "positions", "intermediate_tensors")
    assert lean.methods["sort"].params == ("key", "reverse")  # read by a parse: a lambda
    assert lean.attributes == full.attributes and lean.annotations == full.annotations


def test_parameters_are_read_only_when_asked_for():
    info = ClassTree({"vllm/toy.py": MODEL}.get).resolve("vllm.toy", "ToyForCausalLM")
    method = info.methods["__init__"]
    assert method._signature is not None  # not read yet
    assert method.accepts("vllm_config") and not method.accepts("config")
    assert method._signature is None and method.params == ("vllm_config", "prefix")


def test_a_signature_that_does_not_parse_is_the_files_error_when_read():
    text = "class A:\n    def good(self):\n        pass\n\n    def bad(self, a b):\n        pass\n"
    info = ClassTree({"vllm/m.py": text}.get).resolve("vllm.m", "A")
    assert set(info.methods) == {"good", "bad"}  # the class itself reads
    assert info.methods["good"].params == ()
    for _ in range(2):  # raised each time it is asked, never an empty parameter list
        with pytest.raises(ParseError, match=r"vllm/m.py does not parse as Python \(line 5\)"):
            info.methods["bad"].accepts("a")


def test_a_lean_skeleton_that_does_not_parse_falls_back_to_the_whole_span():
    text = "class A:\n    def m(self, a):\n        pass\n    x = 1; y = 2\n"
    info = ClassTree({"vllm/m.py": text}.get).resolve("vllm.m", "A")
    assert info.methods["m"].params == ("a",)
    assert info.attributes["x"].value == 1


@pytest.mark.parametrize(
    "signature",
    [
        "def f(self):\n",
        "def f():\n",
        "def f(cls, a, b=1, *args, c, d: int = 2, **kw):\n",
        "def f(self, *, a):\n",
        "def f(a, /, b):\n",
        "def f(\n    self,\n    a: list[int] = [1, 2],\n    b: dict = {'k': (1,)},\n):\n",
        'def f(self, a: str = "x,y)", b="#") -> "R":\n',
        "def f(self, a=1,  # it's a comment, (with brackets\n    b=2):\n",
        "async def f(self, a) -> tuple[int, int]:\n",
        "def f(self, **kwargs: Any) -> None:\n",
        "def f(self, *args: int):\n",
        "def f(self, a: Callable[[int], int] = g(1, h(2))):\n",
        "def f(self, a=f'{x}'):\n",
    ],
)
def test_a_plain_signature_reads_as_the_tree_reads_it(signature):
    definition = parse_python(signature + "    ...\n", "m.py").named_children[0]
    tree = _method(definition, strip_self=False)
    names, var_keyword = plain_parameters(signature)
    assert (tuple(names), var_keyword) == (tree.params, tree.has_var_keyword)


@pytest.mark.parametrize(
    "signature",
    [
        "def f(self, a=lambda x, y: x):\n",
        "def f(self, a='\\''):\n",
        "def f(self, a=1, \\\n    b=2):\n",
        "def f(self, a b):\n",
        "def f(self, a=(1, 2):\n",
        "def f(self, a='unclosed):\n",
        "def f(self, 1a):\n",
        "def f[T](self, a: T):\n",
        "def f(self, **kw=1):\n",
        "def f(self, , a):\n",
    ],
)
def test_any_other_signature_is_left_to_the_tree(signature):
    assert plain_parameters(signature) is None


def test_a_method_without_a_signature_to_read_compares_and_prints_as_before():
    assert Method("m", ("a",), True) == Method("m", ("a",), True)
    assert Method("m", ("a",), False) != Method("m", ("a",), True)
    assert (
        repr(Method("m", ("a",), True)) == "Method(name='m', params=('a',), has_var_keyword=True)"
    )
    lazy = Method("m", signature=("def m(self, a, **k):\n", "m.py", ""))
    assert lazy == Method("m", ("a",), True)


OUTLINED = """\
from .base import Base, factory


@factory("x")
class Model(
    Base,
):
    flag = True

    def forward(self, x):
        return x


async def adapter(cls,
                  extra=1):
    return cls


def one_line(cls): return cls


class Generic[T](Base):
    kind = "generic"
"""


def test_a_lean_outline_writes_elided_top_level_definitions_as_their_names():
    outline, spans = module_outline(OUTLINED, lean=True)
    rows = outline.splitlines()
    assert "class Model: ..." in rows and "def adapter(): ..." in rows
    assert "def one_line(cls): return cls" in rows  # not elided: as it is
    assert "class Generic[T](Base):" in rows  # a header the name pattern does not read
    assert '@factory("x")' in rows  # decorators are lines of the outline
    read = {rows[row]: OUTLINED[start:end] for row, (start, end) in spans.items()}
    assert read["class Model: ..."].startswith("class Model(\n    Base,\n):\n")
    assert read["def adapter(): ..."].startswith("async def adapter(cls,\n")
    assert not parse_tree(outline).has_error


def test_a_class_and_a_function_of_a_lean_outline_read_from_their_spans():
    files = {
        "vllm/m.py": OUTLINED,
        "vllm/base.py": "class Base:\n    base = 1\n\n\ndef factory(kind):\n    return kind\n",
    }
    tree = ClassTree(files.get)
    info = tree.resolve("vllm.m", "Model")
    assert [b.qualname for b in info.bases] == ["vllm.base.Base"]
    assert info.attributes["flag"].value is True and info.methods["forward"].params == ("x",)
    mod = tree.module("vllm.m")
    adapter = tree.full_definition(mod, mod.bindings["adapter"].node)
    assert _method(adapter, strip_self=False).params == ("cls", "extra")
    generic = tree.resolve("vllm.m", "Generic")
    assert generic.attributes["kind"].value == "generic"
