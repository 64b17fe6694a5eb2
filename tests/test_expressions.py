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


def test_python_comparisons_not_in_and_chained():
    # a name the builder cannot resolve alone is a local: bind it
    root = parse_python("x = 0 <= i < len(p)\n", "x.py")
    node = root.named_children[0].named_children[0].child_by_field_name("right")
    tree = build.python_expression(node, {"i": "i", "p": "p"})
    assert tree == ("and", ("<=", 0, "i"), ("<", "i", ("call", "len", "p")))
    assert build.infix(tree) == "0 <= i and i < len(p)"
    # no converter needed for Python's operators: 0 <= 2 < 3 holds, 0 <= 3 < 3 does not
    calls = {"len": len}  # the caller's call table (outside the converter)
    assert ex.evaluate(tree, {"i": 2, "p": "abc"}, calls)
    assert not ex.evaluate(tree, {"i": 3, "p": "abc"}, calls)
    root = parse_python("x = 'a100' not in name\n", "x.py")
    node = root.named_children[0].named_children[0].child_by_field_name("right")
    tree = build.python_expression(node, {"name": "name"})
    assert tree == ("not", ("in", ("str", "a100"), "name"))
    assert ex.evaluate(tree, {"name": "h100 80gb"}) is True


def test_a_resolver_reads_the_names_and_leaves_the_operators_to_the_builder():
    root = parse_python("x = divide(cfg.width, tp) - 1\n", "x.py")
    node = root.named_children[0].named_children[0].child_by_field_name("right")

    def resolve(n, read):
        if n.type == "call":  # a call of the reader's own: ("call", NAME, *args)
            args = n.child_by_field_name("arguments").named_children
            return ("call", "divide", *(read(a) for a in args))
        if n.type in ("identifier", "attribute"):
            return n.text.decode()
        return build.NOT_RESOLVED

    tree = build.python_expression(node, resolve=resolve)
    assert tree == ("-", ("call", "divide", "cfg.width", "tp"), 1)
    assert ex.evaluate(tree, {"cfg.width": 12, "tp": 4}, {"divide": lambda a, b: a // b}) == 2


def test_getattr_absent_and_a_mapping_subscript():
    tree = ("*", ("getattr", "freq", 1), ("item", "table", ("str", "k")))
    assert ex.expression_problem(tree) == ""
    assert build.infix(tree) == "getattr(freq, 1) * table['k']"
    assert list(build.names_in(tree)) == ["freq", "table"]
    # getattr takes its default where the name is missing or absent, the value where it is not
    assert ex.evaluate(tree, {"table": {"k": 5}}) == 5
    assert ex.evaluate(tree, {"freq": ex.absent("no freq"), "table": {"k": 5}}) == 5
    assert ex.evaluate(tree, {"freq": 3, "table": {"k": 5}}) == 15
    # an absent value is undefined: unused by `?:` it is fine, used it is Unknown naming why
    choice = ("?:", "flag", 7, ("+", "gone", 1))
    assert ex.evaluate(choice, {"flag": 1, "gone": ex.absent("the config has no gone")}) == 7
    with pytest.raises(ex.Unknown, match="the config has no gone"):
        ex.evaluate(choice, {"flag": 0, "gone": ex.absent("the config has no gone")})
    # a mapping from the environment lacking the key is Unknown (not Raises: code not read may
    # fill it), naming the key and the keys it holds
    with pytest.raises(ex.Unknown, match=r"KeyError: 'j' \(it maps 'k'\)") as lacking:
        ex.evaluate(("item", "table", ("str", "j")), {"table": {"k": 5}})
    assert not isinstance(lacking.value, ex.Raises)


def test_every_generated_vllm_expression_is_well_formed():
    """vLLM's state shapes, indexer rule and sizing paths are expressions of the one language."""
    from apron.constraints import load_constraints

    vllm = load_constraints().get("vllm")
    assert vllm is not None
    found = []
    for row in vllm.rows("mamba_state_calculators"):
        found += [*row.defaults, *(dim for state in row.states for dim in state)]
    for row in vllm.rows("mamba_state_hooks"):
        found += row.arguments
    for row in vllm.rows("kv_sizing_paths"):
        found += [*row.conditions, row.value]
    found += [row.skip for row in vllm.rows("indexer_layer_rules")]
    assert len(found) > 250  # 293 at the pin
    assert [e for e in found if ex.expression_problem(e)] == []
    # no postfix term survives: a call is a node, never "name/arity"
    assert not [n for e in found for n in ex.names_in(e) if "/" in n]


# -- Python code of a configuration class (transformers): read through a Converter -------------


def _class_reads(fields: dict, config: dict | None = None) -> ex.Converter:
    """`self.x` is the field x (an absent field is unknown only where it is used); `kwargs` is
    config.json."""

    def attribute(name: str):
        return fields[name] if name in fields else ex.absent(f"the field {name}")

    return ex.Converter(hparams=config or {}, attribute=attribute)


def test_a_dict_display_indexed_with_a_key_it_lacks_raises():
    # NemotronHConfig: [{"*": "attention", "E": "moe", "M": "mamba"}[c] for c in pattern]
    table = ("dict", ("str", "*"), ("str", "attention"), ("str", "M"), ("str", "mamba"))
    layers = ("map", "$c", ("hpget", "pattern"), ("item", table, "$c"))
    reads = _class_reads({}, {"pattern": "M*M"})
    assert ex.evaluate(layers, {}, None, reads) == ["mamba", "attention", "mamba"]
    with pytest.raises(ex.Raises, match=r"KeyError: '-' \(it maps '\*', 'M'\)"):
        ex.evaluate(layers, {}, None, _class_reads({}, {"pattern": "M-"}))
    # a dict read from the config lacking the key is unknown, not a raise: code not read may fill it
    lookup = ("item", ("self", "rope_parameters"), ("str", "rope_theta"))
    with pytest.raises(ex.Unknown) as unknown:
        ex.evaluate(lookup, {}, None, _class_reads({"rope_parameters": {}}))
    assert not isinstance(unknown.value, ex.Raises)
    assert (
        ex.evaluate(lookup, {}, None, _class_reads({"rope_parameters": {"rope_theta": 1e6}})) == 1e6
    )
    assert ex.infix(table) == "{'*': 'attention', 'M': 'mamba'}"
    assert ex.expression_problem(("dict", 1)) != ""


def test_a_branch_not_taken_may_read_an_unknown_field_or_raise():
    # head_dim if head_dim is not None else hidden_size // num_attention_heads
    head_dim = (
        "?:",
        ("!=", ("self", "head_dim"), None),
        ("self", "head_dim"),
        ("//", ("self", "hidden_size"), ("self", "num_attention_heads")),
    )
    assert ex.evaluate(head_dim, {}, None, _class_reads({"head_dim": 96})) == 96
    assert (
        ex.evaluate(
            head_dim,
            {},
            None,
            _class_reads({"head_dim": None, "hidden_size": 4096, "num_attention_heads": 32}),
        )
        == 128
    )
    with pytest.raises(ex.Unknown, match="the field hidden_size"):
        ex.evaluate(head_dim, {}, None, _class_reads({"head_dim": None}))
    raising = ("item", ("dict", ("str", "a"), 1), ("str", "b"))
    assert ex.evaluate(("?:", True, 7, raising), {}, None, _class_reads({})) == 7
    assert ex.evaluate(("or", 5, raising), {}, None, _class_reads({})) == 5


def test_python_strings_compare_and_concatenate_as_python_does():
    # BambaConfig: mamba_d_head == "auto" with a published 64 is False, not an enum comparison
    auto = ("==", ("self", "mamba_d_head"), ("str", "auto"))
    assert ex.evaluate(auto, {}, None, _class_reads({"mamba_d_head": 64})) == 0
    assert ex.evaluate(auto, {}, None, _class_reads({"mamba_d_head": "auto"})) == 1
    assert ex.evaluate(("+", ("str", "a"), ("str", "b")), {}, None, _class_reads({})) == "ab"
    with pytest.raises(ex.Unknown):  # C++: an enum constant compared with a number
        ex.evaluate(("==", "LLM_ARCH_LLAMA", 1), {})


def test_lists_past_the_bound_are_not_built():
    hostile = _class_reads({"n": 10**12})
    for huge in (("call", "range", ("self", "n")), ("*", ("list", ("str", "x")), ("self", "n"))):
        with pytest.raises(ex.Unknown, match="100,000"):
            ex.evaluate(huge, {}, None, hostile)
    assert ex.evaluate(("*", ("list", 0), 3), {}, None, hostile) == [0, 0, 0]
    # range(n - 3) with n = 2 is empty, as in Python: ZambaConfig's three leading layers only
    zamba = (
        "+",
        ("list", ("str", "m")),
        ("map", "$i", ("call", "range", ("-", ("self", "n"), 3)), ("str", "h")),
    )
    assert ex.evaluate(zamba, {}, None, _class_reads({"n": 2})) == ["m"]


def test_a_list_holding_an_unknown_item_at_any_depth_is_unknown():
    nested = ("list", ("list", 1, ("self", "missing")), 2)
    with pytest.raises(ex.Unknown, match="the field missing"):
        ex.evaluate(nested, {}, None, _class_reads({}))


def test_every_generated_transformers_expression_is_well_formed():
    from apron.constraints import load_constraints

    tables = load_constraints().config_tables
    assert tables is not None
    seen = 0
    for module in tables.modules():
        assert module.SCHEMA_VERSION == 2
        for _cls, _step, _field, condition, value in module.DERIVATIONS:
            assert ex.expression_problem(condition) == ex.expression_problem(value) == ""
            seen += 1
        for _cls, _method, _step, condition, _error, _message in module.VALIDATORS:
            assert condition != () and ex.expression_problem(condition) == ""
            seen += 1
    assert seen > 800


def test_one_builder_reads_a_configuration_class_through_its_reads():
    """The converter's builder reads a configuration class's Python too: `kwargs` is its config
    dict (`.get` and `.pop`), a literal display is its value, and with `partial` a part it does
    not read is ("undef", code) in place rather than the whole expression unreadable."""
    reads = build.PythonReads(config=("kwargs",), config_reads=("get", "pop"), partial=True)

    def cls(code: str):
        root = parse_python(f"x = {code}\n", "configuration_x.py")
        right = root.named_children[0].named_children[0].child_by_field_name("right")
        return build.python_expression(right, {"n": ("self", "n")}, reads=reads)

    assert cls('kwargs.pop("interval", 4)') == ("hpget", "interval", 4)
    assert (
        cls('kwargs.get("n_embed", None)') == cls('kwargs.get("n_embed")') == ("hpget", "n_embed")
    )
    assert cls('"k" not in kwargs') == ("not", ("has", "k"))
    assert cls("{'M': 'mamba', '*': 'attention'}") == (
        "dict",
        ("str", "*"),
        ("str", "attention"),
        ("str", "M"),
        ("str", "mamba"),
    )
    assert cls("-1.5") == -1.5
    assert cls("sum(self.repeats) * 4 + n") == (
        "+",
        ("*", ("call", "sum", ("self", "repeats")), 4),
        ("self", "n"),
    )
    assert cls("self.a.b + 1") == ("+", ("undef", "self.a.b"), 1)
    # the converter's reading is unchanged: a part it does not read leaves the whole unreadable
    with pytest.raises(build.UnreadableExpression):
        py("self.a.b + 1")
    assert py('self.hparams.get("k", None)') == ("hpget", "k")


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
        quantity("sizes[1:2]")
    with pytest.raises(build.UnreadableExpression, match="dictionary"):
        quantity("{2: a}[2]")
    with pytest.raises(build.UnreadableExpression, match="with keywords"):
        quantity("round(x, ndigits=2)")


STRS = (("str", "none"), ("str", "deepep"))


@pytest.mark.parametrize(
    ("code", "tree"),
    [
        ('self.backends()[0] != "x"', ("!=", ("item", "self.backends()", 0), ("str", "x"))),
        ('v.a not in ("none", "deepep")', ("not", ("in", "v.a", ("list", *STRS)))),
        ("0 < self.n <= 4", ("and", ("<", 0, "self.n"), ("<=", "self.n", 4))),
        ("not a == b", ("!=", "a", "b")),
        ("is_hip() or f(self.x)", ("or", ("call", "is_hip"), ("call", "f", "self.x"))),
    ],
)
def test_quantity_expressions_are_the_one_builders_shapes(code, tree):
    """quantity_expression is the one builder with a resolver: subscripts, tuples and chained
    comparisons read as everywhere else; names are spelled as their code."""
    assert quantity(code) == tree


def test_substituted_values_read_in_words():
    tree = quantity("round((gpu_mem - reserved_mem) / gpu_mem, 3)")
    shown = ex.substituted(tree, {"gpu_mem": "81,920", "reserved_mem": "13,904"})
    assert ex.infix(shown) == "round((81,920 - 13,904) / 81,920, 3)"
    assert list(ex.names_in(tree)) == ["gpu_mem", "reserved_mem", "gpu_mem"]
