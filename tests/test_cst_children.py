"""The fast libcst children (read from each node's fields) are libcst's own `children`, node
for node and in the same order, over every syntax shape and over real engine files."""

from __future__ import annotations

import operator
import os
import subprocess

import libcst as cst
import pytest

from apron.extractors.parsing import cst_children
from apron.extractors.parsing.cst_children import children, field_order
from apron.extractors.parsing.python_cst import walk

SHAPES = '''\
"""Module docstring."""
from __future__ import annotations
import os, sys as system
from . import x
from ..pkg.mod import (a as b, c,)
from m import *
lazy = 1

@decorator(arg, *rest, key=1, **kw)
class C(Base, metaclass=Meta):
    """Doc."""
    x: int = 1
    y: "str"

    async def m(self, a, /, b: int = 2, *args, c, d=3, **kwargs) -> list[int]:
        global g
        nonlocal_ok = [i async for i in aiter() if i if not i]
        async with ctx() as (p, q), other:
            await thing
        async for item in items:
            yield item
        return {k: v for k, v in pairs}, {s for s in x}, (g for g in y)

def f[T: int, *Ts, **P](x: T) -> T:
    def inner():
        nonlocal x
        x += 1; x -= 1; x *= 2; x @= m; x //= 2; x **= 2; x >>= 1; x <<= 1; x |= 1; x &= 1; x ^= 1
        x /= 1; x %= 1
    try:
        raise ValueError("e") from None
    except* (TypeError, ValueError) as group:
        pass
    try:
        pass
    except Exception:
        pass
    else:
        pass
    finally:
        del x, y[0], z.a
    while x and not y or z:
        break
    else:
        continue
    for a, *b in c:
        assert a, "msg"
    match command:
        case [x, y, *rest] if x > 0:
            pass
        case {"k": v, **others}:
            pass
        case Point(x=0, y=_) | None | True:
            pass
        case str() as s:
            pass
        case (1 | 2) | -3 | 1 + 2j:
            pass
    lam = lambda a, *, b=1: a if b else -a
    s = f"{x!r:>{width}} {y=} {{}}" "concat"
    t = x[1:2:3, ::, a]
    u = (yield)
    v = [*a, *b], {**d, "k": 1}, ...
    w = a < b <= c != d is not e not in f in g is h == i > j >= k
    w2 = (a + b - c * d / e // f % g ** h @ i << j >> k & l | m ^ n, ~a, +b)
    if (n := len(a)) > 10:
        pass
    elif n:
        pass
    else:
        pass
    with (open(a) as fa, open(b) as fb):
        pass
    return x  # trailing comment

type Alias[K] = dict[K, int]
print(1); print(2)
'''


def slow_walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    out = [node]
    for child in node.children:
        out += slow_walk(child)
    return out


def assert_same_children(module: cst.Module) -> int:
    nodes = slow_walk(module)
    for node in nodes:
        fast, slow = children(node), list(node.children)
        assert len(fast) == len(slow), type(node).__name__
        assert all(a is b for a, b in zip(fast, slow, strict=True)), type(node).__name__
    assert [id(n) for n in walk(module)] == [id(n) for n in nodes]
    return len(nodes)


def test_every_shape_gives_libcst_children_in_order():
    module = cst.parse_module(SHAPES)
    assert assert_same_children(module) > 1000
    kinds = {type(n).__name__ for n in slow_walk(module)}
    assert {"MatchClass", "TypeAlias", "ExceptStarHandler", "FormattedString", "Lambda"} <= kinds


def test_every_node_type_reads_its_fields_in_visit_order():
    node_types = [
        t
        for t in vars(cst).values()
        if isinstance(t, type) and issubclass(t, cst.CSTNode) and hasattr(t, "__dataclass_fields__")
    ]
    planned = [t for t in node_types if field_order(t) is not None]
    assert len(planned) > 150
    order, others = field_order(cst.Comparison)
    assert order == ("lpar", "left", "comparisons", "rpar")
    assert field_order(cst.Name) == (("lpar", "rpar"), ("value",))


def test_a_type_without_a_readable_order_uses_libcst(monkeypatch):
    monkeypatch.setattr(cst_children, "_getters", lambda node_type: None)
    module = cst.parse_module("x = f(a, b)\n")
    assert [type(n).__name__ for n in children(module.body[0].body[0])] == [
        "AssignTarget",
        "Call",
    ]


def test_a_node_in_an_unlisted_field_uses_libcst(monkeypatch):
    """A node in a field the visit order leaves out: libcst's own children answer, so a node
    type whose visit method reads a field some other way loses no child."""
    real = cst_children._getters

    def without_left(node_type):
        if node_type is not cst.Comparison:
            return real(node_type)
        return operator.attrgetter("lpar", "rpar"), operator.attrgetter("left", "comparisons")

    monkeypatch.setattr(cst_children, "_getters", without_left)
    comparison = cst.parse_expression("(a < b)")
    assert [type(n).__name__ for n in children(comparison)] == [
        "LeftParen",
        "Name",
        "ComparisonTarget",
        "RightParen",
    ]


REAL_FILES = {
    "SGLANG": (
        "30cb848d4b455a288a37cfeb6a45aff34f5634a6",
        [
            "python/sglang/srt/configs/model_config.py",
            "python/sglang/srt/configs/hybrid_arch.py",
            "python/sglang/srt/models/deepseek_v2.py",
        ],
    ),
    "VLLM": (
        "0231dd5467c61dca76f66269b6298a43772b3519",
        ["vllm/config/model.py", "vllm/model_executor/models/registry.py"],
    ),
}


@pytest.mark.real_mirror
@pytest.mark.parametrize("engine", sorted(REAL_FILES))
def test_real_files_give_libcst_children(engine):
    directory = os.environ.get(f"APRON_MIRROR_{engine}")
    if not directory:
        pytest.skip(f"APRON_MIRROR_{engine} not set")
    commit, paths = REAL_FILES[engine]
    for path in paths:
        text = subprocess.run(
            ["git", f"--git-dir={directory}", "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert assert_same_children(cst.parse_module(text)) > 1000, path


def test_the_visit_method_is_read_as_inspect_reads_it_for_every_node_type():
    """The block reader (decorators, a signature over several lines, the indented body) gives
    the source inspect.getsource gives, for every libcst node type with a visit method."""
    import dataclasses
    import inspect

    import libcst

    from apron.extractors.parsing.cst_children import _method_source

    types = [
        t
        for t in vars(libcst).values()
        if isinstance(t, type) and issubclass(t, libcst.CSTNode) and dataclasses.is_dataclass(t)
    ]
    assert len(types) > 150
    for node_type in types:
        method = node_type._visit_and_replace_children
        assert _method_source(method).rstrip() == inspect.getsource(method).rstrip(), node_type
