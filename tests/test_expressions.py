"""The one rule language: the builder's trees (C++ and Python), their words, their checks, and
the one evaluator (compiled once per expression)."""

from __future__ import annotations

import pytest

from apron import expressions as ex
from apron.extractors.parsing import expressions as build
from apron.extractors.parsing.cpp_ts import parse_cpp, walk
from apron.extractors.parsing.python_ts import parse_python


def cpp(code: str):
    source = parse_cpp(f"int f() {{ return {code}; }}", "x.cpp")
    ret = next(n for n in walk(source.root) if n.type == "return_statement")
    return build.cpp_expression(ret.named_children[0])


def py(code: str):
    root = parse_python(f"x = {code}\n", "x.py")
    assignment = root.named_children[0].named_children[0]
    return build.python_expression(assignment.child_by_field_name("right"))


@pytest.mark.parametrize(
    ("code", "words", "names", "value"),
    [
        # Mamba2's conv state: (4 - 1) x (8192 + 2 x 8 x 128) = 30,720
        (
            "(c > 0 ? c - 1 : 0) * (d + 2*g*s)",
            "(c > 0 ? c - 1 : 0) * (d + 2 * g * s)",
            {"c": 4, "d": 8192, "g": 8, "s": 128},
            30_720,
        ),
        ("GGML_PAD(x, 256)", "GGML_PAD(x, 256)", {"x": 1025}, 1280),  # 1025 up to 5 x 256
        ("a - (b - c)", "a - (b - c)", {"a": 10, "b": 4, "c": 1}, 7),
        ("a - b - c", "a - b - c", {"a": 10, "b": 4, "c": 1}, 5),
        ("k || n / 0 == 1", "k || n / 0 == 1", {"n": 3, "k": 1}, 1),  # x / 0 unused by ||
        ("!x && y[il]", "!x && y[il]", {"x": 0, "y": [0, 7], "il": 1}, 1),
        ("arch == LLM_ARCH_X", "arch == LLM_ARCH_X", {"arch": ex.Symbol("LLM_ARCH_X")}, 1),
    ],
)
def test_cpp_words_and_values(code, words, names, value):
    tree = cpp(code)
    assert ex.expression_problem(tree) == ""
    assert build.infix(tree) == words
    assert ex.evaluate(tree, names) == value


def test_python_reads_resolve_through_the_converter():
    tree = py("self.find_hparam(['d_conv', 'conv_kernel'], optional=True) or 4")
    assert tree == ("or", ("findopt", "d_conv", "conv_kernel"), 4)
    assert build.infix(tree) == "find_hparam(['d_conv', 'conv_kernel'], optional=True) or 4"
    converter = ex.Converter({"conv_kernel": 3}, lambda name: None)
    assert ex.evaluate(tree, {}, None, converter) == 3
    assert ex.evaluate(tree, {}, None, ex.Converter({}, lambda name: None)) == 4
    with pytest.raises(ex.Unknown, match="findopt:d_conv|conv_kernel"):
        ex.evaluate(tree, {})  # no converter: the read is unknown, never a default


def test_a_comprehension_and_a_division_by_zero():
    tree = py("[(i + 1) % 4 != 0 for i in range(self.hparams['n'])]")
    converter = ex.Converter({"n": 5}, lambda name: None)
    assert ex.evaluate(tree, {}, None, converter) == [1, 1, 1, 0, 1]
    with pytest.raises(ex.Unknown, match="division by zero"):
        ex.evaluate(cpp("a / b"), {"a": 1, "b": 0})


@pytest.mark.parametrize(
    ("tree", "problem"),
    [
        (("+", "a"), "+ takes 2..2 operands"),
        (("frobnicate", "a"), "not a node"),
        (("call", 3), "takes 1 name(s) first"),
        ({"+": 1}, "not a literal"),
        (("+", (), 1), "empty"),
    ],
)
def test_malformed_trees_are_named(tree, problem):
    assert problem in ex.expression_problem(tree)
    with pytest.raises(ValueError, match="rule language|operands|name|literal|empty"):
        build.checked(tree)
    if isinstance(tree, tuple):
        with pytest.raises(ex.Unknown):
            ex.evaluate(tree, {"a": 1})


def test_compiled_once_per_expression():
    tree = ("*", "a", ("+", "b", 1))
    first = ex.compiled(tree)
    assert ex.compiled(tree) is first
    assert ex.evaluate(tree, {"a": 3, "b": 4}) == 15
    assert ex.evaluate(tree, {"a": 2, "b": 0}) == 2  # the cached function, new names


def test_json_lists_read_back_as_tuples():
    assert build.checked(["+", ["*", 2, "a"], 1]) == ("+", ("*", 2, "a"), 1)


def test_conjunction_and_names():
    both = build.conjunction(["a", (), ("!", "b"), ("<", "il", 3)])
    assert both == ("&&", ("&&", "a", ("!", "b")), ("<", "il", 3))
    assert build.conjunction([]) == ()
    assert list(build.names_in(both)) == ["a", "b", "il"]
    assert ex.evaluate(both, {"a": 1, "b": 0, "il": 2}) == 1


def test_every_generated_llamacpp_expression_is_well_formed():
    """The loader checks an Expression field's shape only; every node is checked here."""
    from apron.constraints import load_constraints
    from apron.extractors.llamacpp.records import ConverterHparams, HparamsStep, TensorShape

    llamacpp = load_constraints().get("llamacpp")
    assert llamacpp is not None
    seen = 0
    for fact, fields in (
        ("hparams_steps", ("value", "index", "condition")),
        ("tensor_shapes", ("block", "condition")),
        ("hparams_formulas", ("value", "condition")),
        ("cache_sizes", ("value", "condition")),
        ("memory_callbacks", ("value", "condition", "when")),
    ):
        for row in llamacpp.rows(fact):
            for name in fields:
                assert ex.expression_problem(getattr(row, name)) == "", (fact, row)
                seen += 1
    for row in llamacpp.rows("tensor_shapes"):
        assert all(ex.expression_problem(d) == "" for d in row.dims)
    for row in llamacpp.rows("hparams_steps"):
        assert all(ex.expression_problem(a) == "" for a in row.arguments)
    for row in llamacpp.rows("converter_hparams"):
        for entry in (*row.writes, *row.attributes, *row.hparams_sets):
            assert all(ex.expression_problem(part) == "" for part in entry)
    assert seen > 5_000
    # and the records accept them back (the bump's reading of the previous generation)
    row = llamacpp.rows("hparams_steps")[0]
    assert HparamsStep(**row._asdict()).value == row.value
    assert TensorShape(**llamacpp.rows("tensor_shapes")[0]._asdict())
    assert ConverterHparams(**llamacpp.rows("converter_hparams")[0]._asdict())


def quantity(code: str):
    root = parse_python(f"x = {code}\n", "x.py")
    assignment = root.named_children[0].named_children[0]
    return build.quantity_expression(assignment.child_by_field_name("right"))


@pytest.mark.parametrize(
    ("code", "tree", "names", "value"),
    [
        # SGLang's reserve: a quantity of the program is a name spelled as its code
        (
            "self.tp_size * self.pp_size / 8 * 1024",
            ("*", ("/f", ("*", "self.tp_size", "self.pp_size"), 8), 1024),
            {"self.tp_size": 2, "self.pp_size": 1},
            256.0,
        ),
        (
            "max(self.chunked_prefill_size, 2048)",
            ("call", "max", "self.chunked_prefill_size", 2048),
            {"self.chunked_prefill_size": 8192},
            8192,
        ),
        ("x is not None", ("!=", "x", None), {"x": 0}, 1),  # 0 is given: not None
        ('"llama-2" not in p', ("not", ("in", ("str", "llama-2"), "p")), {"p": "llama-3"}, True),
        ("self.use_mla_backend()", "self.use_mla_backend()", {"self.use_mla_backend()": 1}, 1),
        ("a or b or 1", ("or", ("or", "a", "b"), 1), {"a": None, "b": 0}, 1),
        ('m == "all"', ("==", "m", ("str", "all")), {"m": 3}, 0),  # Python's == of any values
    ],
)
def test_quantity_expressions_read_and_evaluate_as_python(code, tree, names, value):
    assert quantity(code) == tree
    assert ex.evaluate(tree, names, None, ex.PYTHON) == value


def test_an_unread_quantity_shape_is_named():
    with pytest.raises(build.UnreadableExpression, match="subscript"):
        quantity("{2: a}[2]")


def test_substituted_values_read_in_words():
    tree = quantity("round((gpu_mem - reserved_mem) / gpu_mem, 3)")
    shown = ex.substituted(tree, {"gpu_mem": "81,920", "reserved_mem": "13,904"})
    assert ex.infix(shown) == "round((81,920 - 13,904) / 81,920, 3)"
    assert list(ex.names_in(tree)) == ["gpu_mem", "reserved_mem", "gpu_mem"]
