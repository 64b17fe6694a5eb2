"""The reduced texts SGLang's libcst readers parse: each reader's cut of the file (slices.py),
model_config.py in the one shape its readers share when the file does not cut, and the bodies
the tensor-parallel readers keep. Each reader gives on the reduced text what it gives on the
whole file."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_cst import text_keeping
from apron.extractors.sglang import architecture_sets, attention_chain, kv_heads, serving_rules
from apron.extractors.sglang.model_config_shape import model_config_text
from apron.extractors.sglang.slices import Cut, cut_text
from tests.sglang_miniatures import LLAMA, MODEL_CONFIG, MODEL_CONFIG_OLD, MODEL_CONFIG_PATH
from tests.sglang_serving_miniatures import (
    LLAMA_ATTENTION,
    LLAMA_PATH,
    MAMBA_PATH,
    MAMBA_UTILS,
    POOL,
    POOL_PATH,
    with_kv_method,
)

READERS = {
    "kv_head_aliases": lambda t: kv_heads.kv_head_aliases(t, MODEL_CONFIG_PATH),
    "kv_head_fallback": lambda t: kv_heads.kv_head_fallback(t, MODEL_CONFIG_PATH),
    "kv_head_overrides": lambda t: kv_heads.kv_head_overrides(t, MODEL_CONFIG_PATH),
    "kv_split_rules": lambda t: serving_rules.kv_split_rules(t, MODEL_CONFIG_PATH),
}
# each reader's module and the function giving it its cut of model_config.py
CUTS = (
    (kv_heads, "kv_scan_text"),
    (serving_rules, "kv_split_text"),
)


def outcome(reader, text):
    attention_chain.attention_chain.cache_clear()
    try:
        return repr(reader(text))
    except Exception as err:  # the error is part of what must agree
        return f"{type(err).__name__}: {err}"


def whole_shaped_and_cut(name, text, monkeypatch):
    """The reader's outcome on the whole file, on the shared shape and on its own cut."""
    found = []
    for reduce in (lambda t: t, model_config_text):
        with monkeypatch.context() as patch:
            for module, function in CUTS:
                patch.setattr(module, function, reduce)
            found.append(outcome(READERS[name], text))
    return (*found, outcome(READERS[name], text))


HELPER_CONFIG = with_kv_method(MODEL_CONFIG).replace(
    "class ModelConfig:",
    "class ModelConfig:\n    def _heads_key(self):\n        return self.hf_text_config.n_head_kv\n",
    1,
)


@pytest.mark.parametrize("name", sorted(READERS))
@pytest.mark.parametrize(
    "text",
    [
        with_kv_method(MODEL_CONFIG),
        MODEL_CONFIG,
        MODEL_CONFIG_OLD,
        HELPER_CONFIG,
        MODEL_CONFIG.replace("class ModelConfig:", "class Renamed:"),
        with_kv_method(MODEL_CONFIG) + "\nx = (\n",  # does not parse: whole, same error
    ],
)
def test_readers_read_the_shape_and_their_cut_as_the_whole_file(name, text, monkeypatch):
    whole, shaped, cut = whole_shaped_and_cut(name, text, monkeypatch)
    assert whole == shaped == cut


def test_shape_keeps_what_the_readers_look_into_and_elides_the_rest():
    text = with_kv_method(MODEL_CONFIG) + (
        "\n\ndef helper_not_read(x):\n    return x + 1\n"
        "\n\nclass Other:\n    def is_x(self):\n        return 'architectures'\n"
    )
    shaped = model_config_text(text)
    assert shaped.count("\n") == text.count("\n")  # lines keep their numbers
    assert "return x + 1" not in shaped and "def helper_not_read(x):" in shaped
    assert "return 'architectures'" not in shaped  # not a ModelConfig method
    assert "per_group = tensor_parallel_size // group_size" in shaped  # get_num_kv_heads
    assert "hybrid_swa_archs = {" not in shaped  # read from tree-sitter's tree


def test_methods_the_kv_scan_reaches_are_kept_with_their_bodies():
    text = HELPER_CONFIG.replace(
        "def get_total_num_kv_heads(self):",
        "def get_total_num_kv_heads(self):\n        self._heads_key()",
        1,
    )
    assert "return self.hf_text_config.n_head_kv" in model_config_text(text)
    # not reached and naming no marker: elided
    assert "return self.hf_text_config.n_head_kv" not in model_config_text(HELPER_CONFIG)


def test_a_set_read_through_hf_arch_alone_is_kept():
    text = MODEL_CONFIG.replace(
        "class ModelConfig:",
        "class ModelConfig:\n    def _flags(self):\n"
        '        self.is_special = _hf_arch(self.hf_config) in ["SpecialForCausalLM"]\n',
        1,
    )
    rows, _ = architecture_sets.architecture_sets(text, MODEL_CONFIG_PATH)
    assert ("ModelConfig.is_special", "SpecialForCausalLM") in {
        (r.set_name, r.architecture) for r in rows
    }


def test_text_keeping_gives_a_broken_file_back_whole():
    broken = "def f():\n    return 1\nx = (\n"
    assert text_keeping(broken, lambda _name, _code: False) == broken


def test_missing_anchor_on_the_shape_is_the_same_error():
    text = with_kv_method(MODEL_CONFIG).replace("def get_num_kv_heads(", "def num_kv_heads(")
    with pytest.raises(AnchorError) as err:
        serving_rules.kv_split_rules(text, MODEL_CONFIG_PATH)
    assert err.value.anchor == "ModelConfig.get_num_kv_heads"


LLAMA_TEXT = LLAMA + LLAMA_ATTENTION


@pytest.mark.parametrize(
    ("reader", "text", "path"),
    [
        (serving_rules.attention_head_rules, LLAMA_TEXT, LLAMA_PATH),
        # built through an attribute call: the body that does it still names the class
        (
            serving_rules.attention_head_rules,
            LLAMA_TEXT.replace("LlamaAttention(\n", "llama.LlamaAttention(\n"),
            LLAMA_PATH,
        ),
        # a class whose decorator names the class: the file is not cut, the bodies are kept
        (
            serving_rules.attention_head_rules,
            LLAMA_TEXT.replace(
                "class LlamaDecoderLayer(", "@register(LlamaAttention)\nclass LlamaDecoderLayer("
            ),
            LLAMA_PATH,
        ),
        # built at module level, and a second __init__ of LlamaAttention (the last one counts)
        (
            serving_rules.attention_head_rules,
            LLAMA_TEXT
            + "\nDEFAULT = LlamaAttention(config, num_heads=config.heads_x)\n"
            + "\n\nclass LlamaAttention(nn.Module):\n    def __init__(self):\n        pass\n",
            LLAMA_PATH,
        ),
        (serving_rules.attention_head_rules, LLAMA_TEXT.replace("\n", "\r\n"), LLAMA_PATH),
        (serving_rules.mla_cell_rule, POOL, POOL_PATH),
        (serving_rules.mla_cell_rule, POOL + "\nclass A: x = 1\n", POOL_PATH),  # not cut
        (
            serving_rules.mla_cell_rule,
            POOL.replace("class DefaultPoolConfigurator", "class Old")
            + "\n"
            + POOL.replace("use_mla_backend", "use_other"),
            POOL_PATH,
        ),
        (serving_rules.mla_cell_rule, POOL.replace("_compute_cell_size", "other"), POOL_PATH),
        (serving_rules.ssm_tp_splits, MAMBA_UTILS, MAMBA_PATH),
    ],
)
def test_tp_readers_read_their_bodies_as_the_whole_file(reader, text, path, monkeypatch):
    shaped = outcome(lambda t: reader(t, path), text)
    with monkeypatch.context() as patch:
        patch.setattr(serving_rules, "cut_text", lambda _t, _cut: None)
        kept = outcome(lambda t: reader(t, path), text)
        patch.setattr(
            serving_rules,
            "parse_module_keeping",
            lambda t, p, _keep: serving_rules.parse_module(t, p),
        )
        whole = outcome(lambda t: reader(t, path), text)
    assert whole == kept == shaped


def test_a_cut_copies_the_kept_members_and_writes_an_empty_class_as_dots():
    text = (
        "import os\n\n\nclass Keep(Base, metaclass=M):\n    x = 1\n\n"
        "    @staticmethod\n    def wanted(a):\n        return a  # trailing\n\n"
        "    def other(self):\n        return 2\n\n\nclass Empty:\n    def other(self):\n"
        "        return 3\n\n\nclass Dropped:\n    pass\n"
    )
    cut = Cut(cls=lambda name: name != "Dropped", method=lambda _c, name, _code: name == "wanted")
    assert cut_text(text, cut) == (
        "class Keep:\n    @staticmethod\n    def wanted(a):\n        return a  # trailing\n"
        "class Empty:\n    ...\n"
    )


def test_by_name_the_last_definition_decides_for_every_definition_of_the_name():
    text = (
        "class C:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n\n"
        "    def f(self):\n        return 'marker'\n"
    )
    marked = Cut(cls=lambda _name: True, method=lambda _c, _n, code: b"marker" in code)
    assert cut_text(text, marked) == (
        "class C:\n    def f(self):\n        return 1\n    def f(self):\n        return 'marker'\n"
    )
    each = Cut(cls=lambda _name: True, method=lambda _c, _n, code: b"marker" in code, by_name=False)
    assert cut_text(text, each) == "class C:\n    def f(self):\n        return 'marker'\n"


@pytest.mark.parametrize(
    "text",
    [
        "class C:\n    def f(self):\n        return 1\nx = (\n",  # tree-sitter finds an error
        "class C: x = 1\n",  # a class body on its header's line
        "@deco(N)\nclass C:\n    def f(self):\n        return 1\n",  # the needle in a decorator
        "class C(N):\n    def f(self):\n        return 1\n",  # the needle in a base
    ],
)
def test_a_file_the_cut_does_not_handle_gives_none(text):
    cut = Cut(cls=lambda _name: True, method=lambda *_: True, needle=b"N")
    assert cut_text(text, cut) is None
