"""Fields that carry code are rendered canonically from the syntax tree: Python through one
unparser (extractors/parsing/python_canonical.py), C++ token by token with one spacing rule
(cpp_canonical.py). Two layouts of one expression give one text; the readers never see a pair of
brackets that groups nothing."""

from __future__ import annotations

import pytest
import tree_sitter_cpp
from tree_sitter import Language, Parser

from apron.extractors.parsing.cpp_canonical import canonical_cpp
from apron.extractors.parsing.cpp_ts import parse_cpp
from apron.extractors.parsing.python_ts import canonical_text, code_text, parse_tree


@pytest.mark.parametrize(
    ("layouts", "canonical"),
    [
        # the examples: redundant brackets inside a field's code
        (["max((1), total_num_kv_heads // tp)", "max(1,total_num_kv_heads//tp)"], None),
        (["(True)", "True"], "True"),
        (["a + (b * c)", "(a)+(b*c)", "a  +  b*c"], "a + b * c"),
        (["(a + b) * c", "( a+b ) * (c)"], "(a + b) * c"),
        (["a - (b - c)"], "a - (b - c)"),  # right operand of the same level keeps its brackets
        (["(a - b) - c", "a - b - c"], "a - b - c"),
        (["-(2 ** 3)", "-2**3"], "-2 ** 3"),
        (["(-2) ** 3"], "(-2) ** 3"),
        (["2 ** (-1)", "2**-1"], "2 ** -1"),
        (["not (a == b)", "not a == b"], "not a == b"),
        (["a < (b < c)"], "a < (b < c)"),  # a chained comparison would mean something else
        (["(1).real"], "(1).real"),
        (["(n := len(a)) > 1"], "(n := len(a)) > 1"),
        # a long line broken in brackets, a trailing comma, the other quote, a split string
        (["f(\n    'x',\n    k = 1,\n    *a,\n    **b,\n)", 'f("x", k=1, *a, **b)'], None),
        (['("a "\n "b")', '"a b"', "'a b'"], '"a b"'),
        (['"it\'s"', "'it\\'s'"], '"it\'s"'),
        (["'line\\nnext'", '"line\\nnext"'], '"line\\nnext"'),
        (["x[1 : 2, ::3]"], "x[1:2, ::3]"),
        (["[x for x in (a if b else c) if x]"], "[x for x in (a if b else c) if x]"),
        (["a if (b or c) else (d if e else f)"], "a if b or c else d if e else f"),
        (["lambda y, *, z=1: y"], "lambda y, *, z=1: y"),
        (["x: ClassVar[Literal[True]] = (5)", "x: ClassVar[ Literal[True] ] = 5"], None),
        (["def f(x: int = 1, *args, y=2) -> int: pass"], None),
        (
            ["if a:\n    return (b)\nelse:\n    c = 1\n    d += 2"],
            "if a: return b else: c = 1; d += 2",
        ),
        (["(gpu_mem - reserved_mem) / gpu_mem"], "(gpu_mem - reserved_mem) / gpu_mem"),
        (['f"{x!r}"'], 'f"{x!r}"'),
        # libcst's text of a node without the brackets that held its line breaks
        (["proj_size\n    + 2\n    * proj_k_size", "(proj_size + (2 * proj_k_size))"], None),
    ],
)
def test_python_layouts_of_one_expression_give_one_text(layouts, canonical):
    texts = {canonical_text(layout) for layout in layouts}
    assert len(texts) == 1, texts
    if canonical is not None:
        assert texts == {canonical}


CPP = Parser(Language(tree_sitter_cpp.language()))


def cpp_statement(code: str) -> str:
    root = CPP.parse(f"void f() {{ {code} }}".encode()).root_node
    body = root.named_children[0].child_by_field_name("body")
    assert body is not None
    return canonical_cpp(body.named_children[0])


@pytest.mark.parametrize(
    ("layouts", "canonical"),
    [
        (
            [
                "mem_size = std::max((uint32_t)1, cparams.n_seq_max);",
                "mem_size=std::max( (uint32_t) 1 , cparams.n_seq_max );",
                "mem_size = std::max(((uint32_t)1), (cparams.n_seq_max));",
            ],
            "mem_size = std::max((uint32_t)1, cparams.n_seq_max);",
        ),
        (["n = (a + b) * (c);", "n=(a+b)*c;"], "n = (a + b) * c;"),
        (["n = (a * b) + c;", "n = a*b + c;"], "n = a * b + c;"),
        (["y = !f<int>(-z, sizeof(block_q4_0)) ? 1 : 0;"], None),
        (["r = - -x;"], "r = - -x;"),  # not the decrement `--x`
        (["if (a && (b || c)) { return (x); }"], "if (a && (b || c)) { return x; }"),
        (["auto v = new llama_kv_cache(*this, {1, 2,}, nullptr);"], None),
        (["s = sizeof (float);", "s = sizeof(float);"], "s = sizeof(float);"),
        (['s = "a  b";'], 's = "a  b";'),  # a literal keeps its blanks
    ],
)
def test_cpp_layouts_of_one_expression_give_one_text(layouts, canonical):
    texts = {cpp_statement(layout) for layout in layouts}
    assert len(texts) == 1, texts
    if canonical is not None:
        assert texts == {canonical}


@pytest.mark.parametrize(
    ("source", "seen"),
    [
        ("x = round((((a) - (b))) / (c), 3)\n", "x = round( ( a  -  b )  /  c , 3)\n"),
        ("y = ((a + b)) * c\n", "y =  (a + b)  * c\n"),
        ("z = f((a\n + b))\n", "z = f( a\n + b )\n"),  # the call's brackets hold the line break
        ("w = (a\n + b)\n", "w = (a\n + b)\n"),  # these brackets hold it: kept
        # the outer pair stays (`* d` needs it) and holds the inner pair's line break
        ("t = (a + (b\n * c)) * d\n", "t = (a +  b\n * c ) * d\n"),
        ('v = f"{(x)}"\n', 'v = f"{(x)}"\n'),  # inside an f-string: left alone
        ("u = (1).real\n", "u = (1).real\n"),
        ("r = (yield)\n", "r = (yield)\n"),
        ("c = a  # (x)\n", "c = a" + " " * 7 + "\n"),
    ],
)
def test_python_readers_never_see_brackets_that_group_nothing(source, seen):
    assert code_text(source) == seen
    assert not parse_tree(source).has_error


def test_cpp_readers_never_see_brackets_that_group_nothing():
    source = (
        "bool f() { return has((LLM_KV_X)) && ((hparams.n_swa) > 0) && sizeof(x) > (a < b)"
        " && g<(n > 1)>(y); }"
    )
    tree = parse_cpp(source, "a.cpp")
    kept = [n.text.decode() for n in _walk(tree.root) if n.type == "parenthesized_expression"]
    # the argument's, the member's and the comparison's brackets are gone; sizeof's own, a `<`
    # inside and a template argument's stay
    assert kept == ["(x)", "(a < b)", "(n > 1)"]


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


def test_brackets_nested_deep_are_each_judged_once():
    """Two hundred pairs around one sum: every pair groups nothing but the outermost, whose
    place (`* c`) needs it; each pair is judged once (judged one by one, the inner pairs'
    judgements re-asked the outer ones' and the work doubled per level)."""
    nested = "(" * 200 + "a + b" + ")" * 200
    assert code_text(f"x = {nested} * c\n").split() == ["x", "=", "(a", "+", "b)", "*", "c"]
    tree = parse_cpp(f"int f() {{ return {nested} * c; }}", "a.cpp")
    kept = [n.text.decode() for n in _walk(tree.root) if n.type == "parenthesized_expression"]
    assert [" ".join(k.split()) for k in kept] == ["(a + b)"]


# A condition broken over lines that dedent below its block, inside brackets that group
# nothing (the shape the composed metamorphic edits give vLLM's deepseek_v2.py): Python accepts
# it, and so does tree-sitter-python while the inner pair is there; blanked, its grammar
# rejects the dedent. Pairs that hold line breaks then stay, and the one-line pairs still go.
DEDENT_INSIDE_BRACKETS = """def load(name, w):
    for k in w:
        if k:
            n = (g(w, 'n', 1)) or (1)
            split_dim = (
                1
                if (
                    (('down') in (name))
        and ((w.ndim)
        > (1)))
                else 0
            )
            total = w.shape[split_dim]
"""


def test_brackets_holding_a_dedented_line_break_stay_and_the_one_line_pairs_go():
    tree = parse_tree(DEDENT_INSIDE_BRACKETS)
    assert not tree.has_error
    seen = code_text(DEDENT_INSIDE_BRACKETS)
    assert "                if (\n" in seen  # the pair that holds the line breaks stays
    assert "n =  g(w, 'n', 1)  or  1 \n" in seen  # one-line pairs that group nothing go
    assert "  'down'  in  name  \n" in seen
