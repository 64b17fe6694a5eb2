"""Branches, parameters and operators (parsing/python_forms.py) and the expression describer
(parsing/python_describe.py), read from tree-sitter's tree as Python reads the code."""

from __future__ import annotations

import pytest

from apron.extractors.parsing.python_describe import (
    ExpressionDescriber,
    int_value,
    string_sequence,
)
from apron.extractors.parsing.python_forms import binary, if_branch, parameters, unary
from apron.extractors.parsing.python_ts import (
    code_of,
    comparison,
    methods_of,
    node_text,
    parse_tree,
    walk,
)


def _expression(code: str):
    return parse_tree(code).named_children[0].named_children[0]


def test_an_if_and_its_elifs_are_branches_as_python_nests_them():
    root = parse_tree("if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w\nif d:\n    v\n")
    branches = [if_branch(n) for n in walk(root) if if_branch(n) is not None]
    assert [(node_text(b.test), b.elif_follows, b.otherwise is not None) for b in branches] == [
        ("a", True, False),
        ("b", True, False),
        ("c", False, True),
        ("d", False, False),
    ]
    assert [b.alone for b in branches] == [False, False, False, True]
    assert node_text(branches[2].otherwise).strip() == "w"


def test_parameters_with_their_defaults():
    (function,) = parse_tree(
        "def f(self, a, b: int, /, c=1, *args, d: int = (2), e=3, **kw):\n    pass\n"
    ).named_children
    found = {
        name: (node_text(v) if v is not None else None) for name, v in parameters(function).items()
    }
    assert found == {"self": None, "a": None, "b": None, "c": "1", "d": "2", "e": "3"}


@pytest.mark.parametrize(
    ("code", "operator", "expected"),
    [
        ("a // tp", "//", ("a", "tp")),
        ("(a % (b))", "%", ("a", "b")),  # brackets that group nothing are not in the tree
        ("a // tp", "%", None),
        ("-(-x // tp)", "//", None),
    ],
)
def test_binary(code, operator, expected):
    found = binary(_expression(code), operator)
    assert (tuple(node_text(n) for n in found) if found else None) == expected


def test_unary_and_int_value():
    assert node_text(unary(_expression("(-(x))"), "-")) == "x"
    assert node_text(unary(_expression("-(x + 1)"), "-")) == "(x + 1)"
    assert unary(_expression("~x"), "-") is None
    assert [int_value(_expression(c)) for c in ("16", "-(1_000)", "0x10", "2j", "1.5")] == [
        16,
        -1000,
        16,
        None,
        None,
    ]


def test_a_line_joined_comparison_has_two_operands():
    operands, operators = comparison(_expression('"k" not in \\\n    self.hf_config.x'))
    assert [code_of(o) for o in operands] == ['"k"', "self.hf_config.x"]
    assert operators == ["not in"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ('("a", "b")', ["a", "b"]),
        ('["a", \'b\' "c"]', ["a", "bc"]),
        ("()", []),
        ('("a", x)', None),
        ('"a"', None),
    ],
)
def test_string_sequence(code, expected):
    assert string_sequence(_expression(code)) == expected


METHODS = parse_tree(
    "class C:\n"
    "    def latent(self):\n"
    '        return getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n'
    "    def two(self):\n        x = 1\n        return x\n"
).named_children[0]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ('self.hf_text_config.attn_config["kv_n_heads"]', "attn_config.kv_n_heads"),
        ('getattr(self.hf_text_config, "multi_query", False)', "multi_query"),
        ('"k" in self.hf_config', "has k"),
        ('"k" not in self.hf_config.sub', "not has sub.k"),
        ('hasattr(self.hf_text_config, "n")', "has n"),
        ("not (a or b) and c", "not (a or b) and c"),
        # a local bound to an `or` is bracketed where it is read and again where it is used,
        # as the libcst describer wrote it (the KV-head rule words at the pins keep this form)
        ("cfg.model_type == 'mpt' and flag", "model_type == mpt and ((x or y))"),
        ("self.latent()", "kv_lora_rank is not None"),
        ("self.two()", "two()"),
        ("[1, -2, 'three']", "[1, -2, three]"),
        ("lambda: self.use_mla", "use_mla"),
        ("f(x) + 1", "f(x) + 1"),
    ],
)
def test_describer_words(code, expected):
    env = {
        "cfg": _expression("self.hf_text_config"),
        "flag": _expression("x or y"),
    }
    describer = ExpressionDescriber(env=env, methods=methods_of(METHODS))
    assert describer.describe(_expression(code)) == expected


def test_describer_config_reads_and_defaults():
    describer = ExpressionDescriber(env={"cfg": _expression("self.hf_config")})
    assert describer.config_ref(_expression("cfg.n_head")) == "n_head"
    assert describer.config_ref(_expression("self.hf_text_config")) == ""
    assert describer.config_ref(_expression("other.n_head")) is None
    read = _expression('getattr(cfg, "n", 0)')
    assert code_of(describer.getattr_default(read)) == "0"
    assert describer.getattr_default(_expression('getattr(cfg, "n")')) is None
