"""SGLang's serving facts on miniatures: the page size (a pass evaluated for CUDA), the computed
memory fraction, the KV-head split, the MLA cell size, LlamaAttention's checks, state splits."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.parsing.python_ts import parse_tree
from apron.extractors.runner.base import extract_engine
from apron.extractors.sglang.serving_defaults import (
    mem_fraction_default,
    on_cuda,
    page_size_from_pass,
    page_size_source,
)
from apron.extractors.sglang.serving_rules import (
    attention_head_rules,
    kv_split_rules,
    mla_cell_rule,
    ssm_tp_splits,
)
from apron.extractors.snapshot import MemorySnapshot
from tests.sglang_miniatures import LLAMA, MODEL_CONFIG, MODEL_CONFIG_PATH, full_tree_2026
from tests.sglang_serving_miniatures import (
    LLAMA_ATTENTION,
    LLAMA_PATH,
    MAMBA_PATH,
    MAMBA_UTILS,
    OVERRIDES,
    OVERRIDES_PATH,
    POOL,
    POOL_PATH,
    SERVER_ARGS,
    SERVER_ARGS_PATH,
    with_kv_method,
)


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        ("is_hip()", False),
        ("not is_musa()", True),
        ("is_hip() and envs.LAYOUT.get() == 'x'", False),
        ("is_cuda() or unknown_probe()", True),
        ("unknown_probe()", None),
        ("not unknown_probe() and is_cuda()", None),
        ("view.page_size is not None", False),
    ],
)
def test_guards_evaluated_on_cuda(guard, expected):
    expression = parse_tree(guard).named_children[0].named_children[0]
    assert on_cuda(expression, "page_size") is expected


def test_page_size_is_found_through_the_pass():
    assert page_size_source(SERVER_ARGS, SERVER_ARGS_PATH) == (
        OVERRIDES_PATH,
        "_page_default",
        "ServerArgs._handle_page_size",
    )
    row = page_size_from_pass(OVERRIDES, OVERRIDES_PATH, "_page_default", "ServerArgs.x")
    assert (row.kind, row.value, row.role, row.symbol) == (
        "cuda",
        "4",
        "block_tokens",
        "_page_default",
    )
    assert row.candidates == (
        'is_hip() and view.layout == "5d" -> 32',
        "not is_musa() -> 4",
        "may be set by _backend_pages -> 64",
    )


def test_page_size_literal_forms():
    literal = SERVER_ARGS.replace(
        'NS("schedule")] = None\n    tp_size', 'NS("schedule")] = 16\n    tp_size'
    )
    row = page_size_source(literal, SERVER_ARGS_PATH)
    assert (row.kind, row.value) == ("literal", "16")
    older = SERVER_ARGS.replace(
        "        from sglang.srt.arg_groups.overrides import _page_default, run_post_process_pass\n\n"
        "        run_post_process_pass(self, _page_default)\n",
        "        if self.page_size is None:\n            self.page_size = 1\n",
    )
    row = page_size_source(older, SERVER_ARGS_PATH)
    assert (row.kind, row.value, row.reason) == (
        "literal",
        "1",
        "None, set in ServerArgs._handle_page_size",
    )


def test_page_size_guard_that_cannot_be_evaluated_is_opaque():
    changed = OVERRIDES.replace("if not is_musa():", "if probe_platform():")
    row = page_size_from_pass(changed, OVERRIDES_PATH, "_page_default", "h")
    assert (row.kind, row.value) == ("opaque", "")
    assert row.reason == "the guard probe_platform() cannot be evaluated for CUDA"


def test_page_size_missing_anchors():
    with pytest.raises(AnchorError) as info:
        page_size_from_pass(OVERRIDES, OVERRIDES_PATH, "_page_size_default", "h")
    assert (info.value.anchor, info.value.paths) == ("_page_size_default", (OVERRIDES_PATH,))
    renamed = SERVER_ARGS.replace("def _handle_page_size", "def _page_size_handler")
    with pytest.raises(AnchorError) as info:
        page_size_source(renamed, SERVER_ARGS_PATH)
    assert info.value.anchor == "ServerArgs._handle_page_size"
    without = SERVER_ARGS.replace("    page_size: A[", "    page_tokens: A[")
    with pytest.raises(AnchorError) as info:
        page_size_source(without, SERVER_ARGS_PATH)
    assert info.value.anchor == "ServerArgs.page_size"


def test_memory_fraction_is_computed_and_says_by_what():
    row = mem_fraction_default(SERVER_ARGS, SERVER_ARGS_PATH)
    assert (row.kind, row.value, row.computed_by) == (
        "computed",
        "",
        "ServerArgs._handle_memory",
    )
    assert row.reason == (
        "computed at startup from GPU memory: round((gpu_mem - reserved) / gpu_mem, 3) "
        "if gpu_mem is not None else 0.8"
    )
    assert row.candidates == ("gpu_mem is None -> 0.8",)
    literal = SERVER_ARGS.replace('"fraction", NS("schedule")] = None', '"fraction"] = 0.9')
    assert mem_fraction_default(literal, SERVER_ARGS_PATH).value == "0.9"
    unset = SERVER_ARGS.replace("if self.mem_fraction_static is None:", "if gpu_mem:")
    assert mem_fraction_default(unset, SERVER_ARGS_PATH).kind == "opaque"


def test_kv_heads_split_through_a_group_size_at_its_default():
    (row,) = kv_split_rules(with_kv_method(MODEL_CONFIG), MODEL_CONFIG_PATH)
    assert (row.rule, row.shape, row.keys, row.code) == (
        "kv_heads_per_gpu",
        "split_replicate",
        ("total_num_kv_heads",),
        "max(1, total // per_group)",
    )
    changed = with_kv_method(MODEL_CONFIG).replace("group_size: int = 1", "group_size: int = 2")
    (row,) = kv_split_rules(changed, MODEL_CONFIG_PATH)
    assert row.shape == "opaque"  # tp // 2 is not the tp size
    with pytest.raises(AnchorError) as info:
        kv_split_rules(MODEL_CONFIG, MODEL_CONFIG_PATH)
    assert info.value.anchor == "ModelConfig.get_num_kv_heads"


def test_mla_cell_size_does_not_read_tp():
    row = mla_cell_rule(POOL, POOL_PATH)
    assert (row.rule, row.shape, row.when, row.symbol) == (
        "mla_kv_heads_per_gpu",
        "replicated",
        "use_mla_backend",  # the pool's own attribute: a name
        "DefaultPoolConfigurator._compute_cell_size",
    )
    split = POOL.replace("* num_layers\n        else", "* num_layers // tp_size\n        else")
    assert mla_cell_rule(split, POOL_PATH).shape == "opaque"
    with pytest.raises(AnchorError) as info:
        mla_cell_rule(POOL.replace("use_mla_backend", "use_latent"), POOL_PATH)
    assert info.value.anchor == "*._compute_cell_size: if <...mla...>: cell_size = ..."


def test_llama_attention_checks_with_config_keys():
    found = {r.rule: r for r in attention_head_rules(LLAMA + LLAMA_ATTENTION, LLAMA_PATH)}
    heads = found["attention_heads_divisible"]
    assert (heads.shape, heads.keys, heads.code) == (
        "divides",
        ("n_query_heads",),
        "self.total_num_heads % tp_size == 0",
    )
    assert heads.scope == "LlamaAttention (each model class carries its own check)"
    kv = found["kv_heads_divisible"]
    assert (kv.shape, kv.keys) == ("divides_or_divided", ("n_kv_heads",))
    with pytest.raises(AnchorError) as info:
        attention_head_rules(LLAMA, LLAMA_PATH)
    assert info.value.anchor == "LlamaAttention"


def test_state_shape_splits():
    found = {(r.calculator, r.dividend): r for r in ssm_tp_splits(MAMBA_UTILS, MAMBA_PATH)}
    assert sorted(found) == [("mamba2", "conv_dim"), ("mamba2", "num_heads")]  # not per_tp
    assert found[("mamba2", "conv_dim")].adjustments == ("n_groups += extra",)
    with pytest.raises(AnchorError) as info:
        ssm_tp_splits("class Other:\n    pass\n", MAMBA_PATH)
    assert info.value.anchor == "*StateShape.create"


def test_engine_runs_the_serving_facts_on_the_miniature_tree():
    facts = extract_engine(
        ENGINES["sglang"],
        MemorySnapshot(full_tree_2026()),
        commit_date="x",
        only={"serving_defaults", "tp_rules", "ssm_tp_splits"},
    )
    by_name = {f.kind.name: f for f in facts.facts}
    assert [(r.setting, r.kind, r.value) for r in by_name["serving_defaults"].records] == [
        ("mem_fraction_static", "computed", ""),
        ("page_size", "cuda", "4"),
        ("swa_full_tokens_ratio", "literal", "0.8"),
    ]
    assert {s.path for s in by_name["serving_defaults"].sources} == {
        SERVER_ARGS_PATH,
        OVERRIDES_PATH,
    }
    assert [r.rule for r in by_name["tp_rules"].records] == [
        "attention_heads_divisible",
        "kv_heads_divisible",
        "kv_heads_per_gpu",
        "mla_kv_heads_per_gpu",
    ]


HANDLER_BODY = (
    "        from sglang.srt.arg_groups.overrides import _page_default, run_post_process_pass\n\n"
    "        run_post_process_pass(self, _page_default)\n"
)


@pytest.mark.parametrize(
    ("default", "handler", "expected"),
    [
        ("(16)", HANDLER_BODY, ("literal", "16")),
        ("Field(default=8, help='x')", HANDLER_BODY, ("literal", "8")),
        ("-1", "        self.page_size = (2)\n", ("literal", "2")),
        ("4j", "        self.page_size = 2\n", ("literal", "2")),  # not a number literal
        # two targets: not the one assignment the handler is read for
        ("None", "        self.page_size = other = 1\n", ("opaque", "")),
        # an annotated assignment is an assignment
        ("None", "        self.page_size: int = 1\n", ("literal", "1")),
    ],
)
def test_page_size_written_forms(default, handler, expected):
    text = SERVER_ARGS.replace(
        'NS("schedule")] = None\n    tp_size', f'NS("schedule")] = {default}\n    tp_size'
    ).replace(HANDLER_BODY, handler)
    row = page_size_source(text, SERVER_ARGS_PATH)
    assert (row.kind, row.value) == expected


def test_page_size_pass_found_through_a_parenthesized_argument():
    text = SERVER_ARGS.replace("(self, _page_default)", "(self, (_page_default))")
    assert page_size_source(text, SERVER_ARGS_PATH)[1] == "_page_default"
    keyword = SERVER_ARGS.replace("(self, _page_default)", "(self, fn=_page_default)")
    assert page_size_source(keyword, SERVER_ARGS_PATH)[1] == "_page_default"


@pytest.mark.parametrize(
    "test",
    [
        "if gpu_mem is None:\n            pass\n        elif self.mem_fraction_static is None:",
        "if (self.mem_fraction_static) is (None):",
    ],
)
def test_memory_fraction_test_forms(test):
    text = SERVER_ARGS.replace("if self.mem_fraction_static is None:", test)
    row = mem_fraction_default(text, SERVER_ARGS_PATH)
    assert (row.kind, row.computed_by) == ("computed", "ServerArgs._handle_memory")


def test_memory_fraction_set_in_the_else_of_the_test_counts_as_for_the_if():
    text = SERVER_ARGS.replace(
        "        if self.mem_fraction_static is None:\n            reserved",
        "        if self.mem_fraction_static is None:\n            pass\n        else:\n"
        "            reserved",
    )
    assert mem_fraction_default(text, SERVER_ARGS_PATH).kind == "computed"
    chained = SERVER_ARGS.replace(
        "self.mem_fraction_static = (", "self.mem_fraction_static = x = ("
    )
    assert mem_fraction_default(chained, SERVER_ARGS_PATH).kind == "opaque"


def test_pass_candidates_are_plain_assignments_and_dict_literals():
    text = OVERRIDES + (
        "\n\ndef _comprehension(view):\n    return {'page_size': 2 for _ in view.x}\n"
        "\n\ndef _chained(view):\n    page_size = other = 8\n"
        "\n\n@register\ndef _choice(view):\n    return {'page_size': (16 if view.a else 128)}\n"
    )
    row = page_size_from_pass(text, OVERRIDES_PATH, "_page_default", "h")
    assert [c for c in row.candidates if c.startswith("may be set by")] == [
        "may be set by _backend_pages -> 64",
        "may be set by _choice -> 16",
        "may be set by _choice -> 128",
    ]


UNREAD_METHOD = """
    def _handle_other(self):
        self.other = 1
"""
# Valid Python the line-based elision cannot cut: a bracket continued at the class's indentation.
UNCUT_METHOD = """
    def _handle_other(self):
        self.other = call(
    1)
"""


def test_server_args_is_read_with_the_unread_method_bodies_elided():
    from apron.extractors.sglang.serving_defaults import _server_args_tree

    text = SERVER_ARGS + UNREAD_METHOD
    tree = _server_args_tree(text, SERVER_ARGS_PATH)
    assert b"self.other = 1" not in tree.text  # elided
    assert b"reserved = 1024" in tree.text  # names the memory fraction: kept
    assert b"run_post_process_pass(self, _page_default)" in tree.text  # the page-size handler
    assert page_size_source(text, SERVER_ARGS_PATH) == page_size_source(
        SERVER_ARGS, SERVER_ARGS_PATH
    )
    assert mem_fraction_default(text, SERVER_ARGS_PATH) == mem_fraction_default(
        SERVER_ARGS, SERVER_ARGS_PATH
    )


def test_server_args_the_elision_cannot_cut_is_read_whole():
    from apron.extractors.sglang.serving_defaults import _server_args_tree

    text = SERVER_ARGS + UNCUT_METHOD
    assert b"self.other = call(" in _server_args_tree(text, SERVER_ARGS_PATH).text
    assert mem_fraction_default(text, SERVER_ARGS_PATH) == mem_fraction_default(
        SERVER_ARGS, SERVER_ARGS_PATH
    )
    with pytest.raises(ParseError, match=r"\(line 2\)"):
        mem_fraction_default(SERVER_ARGS.replace("import Optional", "import (Optional"), "s.py")


def test_a_method_with_a_triple_quote_in_a_one_line_string_is_kept_whole():
    # the line-based pass would take what follows the quote for a string and elide it with the
    # method, the field after it too
    text = SERVER_ARGS + '\n    def _handle_quote(self):\n        marker = \'"""\'\n\n'
    text += "    page_size: int = 32\n"
    row = page_size_source(text, SERVER_ARGS_PATH)
    assert (row.kind, row.value) == ("literal", "32")  # the last assignment, as in the file
