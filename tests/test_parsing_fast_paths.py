"""The parsing fast paths give what the plain walks give: the pruned depth and cost check, the
tree-sitter queries, the brace count of error-free trees, and the forked worker's share."""

from __future__ import annotations

import os

import pytest

from apron.extractors.errors import ParseError
from apron.extractors.parsing import workers
from apron.extractors.parsing.cpp_ts import CPP, CppSource, function_definitions, parse_cpp, walk
from apron.extractors.parsing.limits import MAX_SYNTAX_DEPTH, check_syntax_tree
from apron.extractors.parsing.python_ts import PYTHON, parse_tree
from apron.extractors.parsing.ts_query import typed_descendants


def full_walk_check(root, path, language, cost_budget=None):
    """The check as one full walk of every node (what the pruned check must agree with)."""
    cursor = root.walk()
    depth = cost = 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            cost += depth
            if depth > MAX_SYNTAX_DEPTH:
                return f"deep at line {cursor.node.start_point[0] + 1}"
            if cost_budget is not None and cost > cost_budget:
                return "costly"
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return None
            depth -= 1
        cost += depth


def pruned_check(root, cost_budget=None):
    try:
        check_syntax_tree(root, "m.py", "Python", cost_budget=cost_budget)
    except ParseError as err:
        if "levels deep" in str(err):
            return f"deep at line {str(err).split('(line ')[1].split(')')[0]}"
        return "costly"
    return None


def nested_ifs(levels: int) -> str:
    return "".join("    " * i + "if a:\n" for i in range(levels)) + "    " * levels + "pass\n"


TEXTS = [
    "x = 1\n",
    "x = " + "(" * 497 + "1" + ")" * 497 + "\n",  # the deepest node one level under the limit
    "x = " + "(" * 498 + "1" + ")" * 498 + "\n",  # one level over it
    "y = 1\n" * 200 + "z = " + "[" * 490 + "]" * 490 + "\n",
    "y = 1\n" * 200 + "z = " + "[" * 520 + "]" * 520 + "\n",
    nested_ifs(249),
    nested_ifs(250),
    "def f():\n    return [" + ", ".join(f"g({i})" for i in range(3000)) + "]\n",
    ("X = " + "[" * 30 + "]" * 30 + "\n") * 300,
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("budget", [None, 1_000_000, 50_000, 2_000])
def test_pruned_check_agrees_with_the_full_walk(text, budget):
    root = parse_tree(text)
    assert pruned_check(root, budget) == full_walk_check(root, "m.py", "Python", budget)


def test_the_agreement_covers_both_outcomes():
    costly = {full_walk_check(parse_tree(t), "m.py", "Python", 50_000) for t in TEXTS}
    deep = {full_walk_check(parse_tree(t), "m.py", "Python") for t in TEXTS}
    assert None in costly and "costly" in costly
    assert None in deep and len({o for o in deep if o and o.startswith("deep")}) >= 3


CPP_TEXT = """
namespace n {
int top(int a) { return a; }
struct s {
    int method() { return 1; }
    struct inner { void f() {} };
};
}
int later() {
    struct local { int g() { return 2; } };
    auto l = [](int x) { return x; };
    return 0;
}
#ifdef X
void under_ifdef() {}
#endif
"""

PYTHON_TEXT = """
x = 1
def f():
    y = 2
    def g():
        z = w = 3
    class C:
        a = 4
    return [q := 5 for _ in ()]
"""


@pytest.mark.parametrize(
    ("text", "types"),
    [
        (CPP_TEXT, ("function_definition",)),
        (CPP_TEXT, ("struct_specifier", "compound_statement")),
        (CPP_TEXT + "int broken( { \n", ("function_definition",)),
    ],
)
def test_cpp_query_finds_what_the_walk_finds_in_the_same_order(text, types):
    source = parse_cpp(text, "a.cpp")
    walked = [n for n in walk(source.root) if n.type in types]
    assert walked  # the table cases have something to find
    assert typed_descendants(CPP, source.root, types) == walked


def test_function_definitions_keep_source_order_with_nesting():
    names = [name for name, _ in function_definitions(parse_cpp(CPP_TEXT, "a.cpp").root)]
    assert names == ["top", "method", "f", "later", "g", "under_ifdef"]


def test_python_query_within_a_subtree_includes_nested_scopes():
    root = parse_tree(PYTHON_TEXT)
    function = next(n for n in root.named_children if n.type == "function_definition")
    walked = [n for n in walk(function) if n.type == "assignment"]
    found = typed_descendants(PYTHON, function, ("assignment",))
    assert found == walked and len(found) == 4  # y, z = w = 3 (two), a; not the top-level x


def slow_brace_count(source: CppSource) -> int:
    return sum(
        {"{": 1, "}": -1}.get(n.type, 0)
        for n in walk(source.root)
        if not n.children and not n.is_missing
    )


@pytest.mark.parametrize(
    ("text", "imbalance"),
    [
        (CPP_TEXT, 0),
        ("int f() {\n#ifdef A\n  if (x) {\n#else\n  if (y) {\n#endif\n  }\n}\n", 1),
        ("int f() { return 1; }\n}}\n", -2),
        ("{\n" + CPP_TEXT, 1),
    ],
)
def test_brace_count_agrees_with_counting_every_token(text, imbalance):
    source = parse_cpp(text, "a.cpp")
    assert source.brace_imbalance() == slow_brace_count(source) == imbalance
    assert source.root.has_error == (imbalance != 0)


def _square(item: int) -> int:
    if item in (13, 70):
        raise ParseError(f"item {item} is bad", paths=[f"{item}.py"])
    return item * item


@pytest.fixture
def forking(monkeypatch):
    if not workers.may_share(workers.MIN_BYTES):
        pytest.skip("no second core or no fork here")
    monkeypatch.setattr(workers, "MIN_BYTES", 0)


def test_two_shares_give_the_serial_results_in_order(forking):
    items = list(range(12))
    assert workers.map_in_two(_square, items, [1] * len(items)) == [i * i for i in items]


@pytest.mark.parametrize(
    ("items", "first_bad"),
    [
        (list(range(10, 20)), 13),  # in the worker's share
        (list(range(60, 80)), 70),  # in this process's share
        ([13, *range(20, 30), 70], 13),  # in both: the first in order wins, as serially
    ],
)
def test_an_error_is_the_first_a_serial_run_meets(forking, items, first_bad):
    with pytest.raises(ParseError) as err:
        workers.map_in_two(_square, items, [1] * len(items))
    assert str(err.value).startswith(f"item {first_bad} is bad")
    assert err.value.paths == (f"{first_bad}.py",)


def test_uneven_sizes_give_the_results_in_item_order(forking):
    items = list(range(30))
    sizes = [(i * 7919) % 31 + 1 for i in items]  # taken largest first, returned in order
    assert workers.map_in_two(_square_ok, items, sizes) == [i * i for i in items]


PARENT = os.getpid()


def _dies_in_the_worker(item: int) -> int:
    if os.getpid() != PARENT and item % 3 == 0:
        os._exit(1)  # the worker stops midway, its results never sent
    return item * item


def test_what_a_dead_worker_took_is_run_here(forking):
    items = list(range(40))
    assert workers.map_in_two(_dies_in_the_worker, items, [1] * len(items)) == [
        i * i for i in items
    ]


def _square_ok(item: int) -> int:
    return item * item


def test_small_work_runs_in_this_process(monkeypatch):
    def no_fork(*args, **kwargs):
        raise AssertionError("forked for tiny work")

    monkeypatch.setattr(workers.multiprocessing, "get_context", no_fork)
    assert workers.map_in_two(_square, [1, 2, 3], [10, 10, 10]) == [1, 4, 9]


MODEL_CONFIG = '''
"""Miniature config module."""
import os

from enum import IntEnum


class AttentionArch(IntEnum):
    MLA = 1
    MHA = 2


class ModelConfig:
    """Doc."""

    kind = "model"

    def __init__(self, hf_config):
        self.hf_config = hf_config
        self._derive()

    @property
    def size(self):
        return 1

    def _derive(self):
        if "DeepseekV2ForCausalLM" in self.hf_config.architectures:
            self.attention_arch = AttentionArch.MLA
        elif "Other" in self.hf_config.architectures:
            self.attention_arch = AttentionArch.MHA

    def twice(self):
        return 1

    def twice(self):
        self.attention_arch = AttentionArch.MLA


def helper():
    return os.sep
'''


def chain_outcome(text):
    """The chain's MLA and explicit-MHA rows as (architecture, branch, symbol), or the error."""
    from apron.extractors.sglang import attention_chain as chain

    chain.attention_chain.cache_clear()
    try:
        found = chain.attention_chain(text, "m.py")
    except Exception as err:  # the error is part of what must agree
        return type(err).__name__, str(err).splitlines()[0]
    finally:
        chain.attention_chain.cache_clear()
    return (
        [(r.architecture, r.branch, r.symbol) for r in found.mla],
        [(r.architecture, r.branch, r.symbol) for r in found.explicit_mha],
        [w.code for w in found.warnings],
    )


CHAIN_READ = (
    [("DeepseekV2ForCausalLM", 1, "ModelConfig._derive")],
    [("Other", 2, "ModelConfig._derive")],
    [],
)
NO_CHAIN = ("AnchorError", "no if/elif chain in ModelConfig assigns self.attention_arch in m.py")


# What the libcst reader gave on each (the tree-sitter reading must give the same).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MODEL_CONFIG, CHAIN_READ),
        (
            MODEL_CONFIG.replace(
                "def twice(self):\n        return 1", "def first(self):\n        return 1"
            ),
            CHAIN_READ,
        ),
        # the last ModelConfig counts
        (MODEL_CONFIG + "\nclass ModelConfig:\n    def f(self):\n        return 2\n", NO_CHAIN),
        (MODEL_CONFIG.replace("attention_arch", "arch"), NO_CHAIN),  # no method has the marker
        (
            MODEL_CONFIG.replace("class ModelConfig:", "class Other:"),
            ("AnchorError", "class ModelConfig not found in m.py"),
        ),
        ("\ufeff" + MODEL_CONFIG.replace("\n", "\r\n"), CHAIN_READ),
        (
            MODEL_CONFIG.replace(
                "return 1\n\n    def _derive", "return 1  # attention_arch\n\n    def _derive"
            ),
            CHAIN_READ,
        ),
        (
            MODEL_CONFIG.replace('"""Doc."""', '"""self.attention_arch = AttentionArch.MLA"""'),
            CHAIN_READ,
        ),
        (
            MODEL_CONFIG.replace("import os\n", "import os; import sys  # two on a line\n"),
            CHAIN_READ,
        ),
    ],
)
def test_the_chain_reads_as_the_libcst_reader_did(text, expected):
    assert chain_outcome(text) == expected


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (MODEL_CONFIG.replace("import os\n", "import os\nx = (\n"), 4),  # outside the class
        (MODEL_CONFIG.replace("return 1\n\n    def _derive", "return 1 +\n\n    def _derive"), 24),
    ],
)
def test_a_chain_file_that_does_not_parse_is_a_parse_error_naming_its_line(text, line):
    assert chain_outcome(text) == ("ParseError", f"m.py does not parse as Python (line {line})")


@pytest.mark.parametrize(
    "text",
    [
        "int f() { return 1; }\n",
        "int f() {\n  return 1; // #if not a directive\n}\n",
        "#define X 1\n#include <a.h>\nint f();\n",
        "  #  ifdef A\nint a;\n#else\nint b;\n #endif\n",
        "#if A\r\nint a;\r\n#endif\r\n",
        "#\tifndef A\nint a;\n#endif // A\n",
        "#ifdef\n",
    ],
)
def test_directive_search_agrees_with_reading_every_line(text):
    from apron.extractors.parsing import cpp_ts

    lines = text.split("\n")
    per_line = any(cpp_ts._CONDITIONAL.match(line) for line in lines)
    assert (cpp_ts._ANY_CONDITIONAL.search(text) is not None) == per_line
    masked, conditions = cpp_ts.mask_conditionals(text)
    if not per_line:
        assert (masked, conditions) == (text, ("",) * len(lines))
    else:
        assert masked != text and len(conditions) == len(lines)


MODEL_CPP = """#include "models.h"

void llama_model_toy::load_arch_hparams(llama_model_loader & ml) {
    ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa);
    if (hparams.n_swa > 0) {
        hparams.swa_type = LLAMA_SWA_TYPE_STANDARD;
    }
}

llm_build_toy::llm_build_toy(const llama_model & model) : llm_graph_context(params) {
    const char * s = "}";
    for (int il = 0; il < n_layer; ++il) {
        build_layer(il);
    }
}
"""


def _hparams(source):
    from apron.extractors.parsing.cpp_ts import function_definitions

    return [
        (name, node.start_byte, node.end_byte, str(node))
        for name, node in function_definitions(source.root)
        if name.endswith("::load_arch_hparams")
    ]


def test_a_method_parsed_on_its_own_is_the_same_definition_as_in_the_whole_file():
    from apron.extractors.parsing.cpp_ts import parse_cpp, parse_cpp_methods

    alone = parse_cpp_methods(MODEL_CPP, "src/models/toy.cpp", "load_arch_hparams")
    whole = parse_cpp(MODEL_CPP, "src/models/toy.cpp")
    assert alone.regions_only and not whole.regions_only
    assert _hparams(alone) == _hparams(whole) != []
    names = [n.type for n in alone.root.named_children]
    assert names == ["function_definition"]  # the graph builder was not parsed
    assert alone.brace_imbalance() == whole.brace_imbalance() == 0


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t.replace("void llama_model_toy", "/*\nvoid llama_model_toy"), "in a comment"),
        (
            lambda t: t.replace("        hparams.swa_type", "}\n        hparams.swa_type"),
            "not clean",
        ),
        (lambda t: t.replace('"models.h"\n', '"models.h"\n#define X "::load_arch_hparams("\n'), ""),
    ],
    ids=["starts-in-a-comment", "region-not-one-definition", "name-in-a-literal"],
)
def test_a_region_that_is_not_one_clean_definition_parses_the_whole_file(edit, why):
    from apron.extractors.parsing.cpp_ts import parse_cpp, parse_cpp_methods

    text = edit(MODEL_CPP)
    alone = parse_cpp_methods(text, "src/models/toy.cpp", "load_arch_hparams")
    whole = parse_cpp(text, "src/models/toy.cpp")
    assert alone is whole  # the fallback is parse_cpp itself: same errors, same anchors
    assert _hparams(alone) == _hparams(whole)


def test_a_file_without_the_method_is_parsed_whole():
    from apron.extractors.parsing.cpp_ts import parse_cpp, parse_cpp_methods

    text = MODEL_CPP.replace("load_arch_hparams", "load_other")
    assert parse_cpp_methods(text, "x.cpp", "load_arch_hparams") is parse_cpp(text, "x.cpp")


def test_braces_outside_the_parsed_method_still_count():
    from apron.extractors.parsing.cpp_ts import parse_cpp, parse_cpp_methods

    text = "{\n" + MODEL_CPP + "// } in a comment\n"
    alone = parse_cpp_methods(text, "x.cpp", "load_arch_hparams")
    assert alone.regions_only
    assert alone.brace_imbalance() == parse_cpp(text, "x.cpp").brace_imbalance() == 1
