"""Outline parses (cst_outline.parse_outline) and the vLLM facts that read through them: the
same records and the same errors as when the whole file is parsed."""

from __future__ import annotations

import pytest

from extractors.errors import AnchorError, ParseError
from extractors.parsing import python_cst
from extractors.parsing.python_cst import class_methods, parse_module, top_level_classes
from extractors.vllm import model_config_defaults, serving_rules
from extractors.vllm.cst_outline import parse_outline
from tests.vllm_class_miniatures import MODEL_CONFIG
from tests.vllm_miniatures import CONVERTOR_V1, MODELS_CONFIG_PATH, MODELS_CONFIG_V1
from tests.vllm_serving_miniatures import (
    CACHE_CONFIG,
    CACHE_PATH,
    LINEAR,
    LINEAR_PATH,
    MAMBA_PATH,
    MAMBA_UTILS,
    MODEL_CONFIG_TP_METHODS,
    PLATFORM_INTERFACE,
    PLATFORM_PATH,
)

MODULES_READING_OUTLINES = (serving_rules, model_config_defaults)

# Decoys around the anchors: a top-level function and another class with the same method
# names, a class field and a docstring; none of it may change what a fact finds.
DECOYS = '''

def get_num_kv_heads(parallel_config):
    attn_block_size = 1
    return 7


class Other:
    """Not read."""

    flag: bool = True

    def get_num_kv_heads(self, parallel_config):
        return 3

    def _align_hybrid_block_size(cls, vllm_config, backend_cls):
        attn_block_size = 2
'''


# The convertor base class reads the attention-head count from a renamed key (tp_rules reports
# it as the divisibility rule's key).
RENAMED_KEY = CONVERTOR_V1.replace('"num_attention_heads", 0', '"n_heads_total", 0') + DECOYS


def outcome(function, *args):
    try:
        return function(*args)
    except (AnchorError, ParseError) as err:
        return type(err), str(err)


def both_ways(monkeypatch, function, *args):
    """(the fact's result with outlines, its result with every file parsed whole)."""
    with_outline = outcome(function, *args)
    with monkeypatch.context() as patch:
        for module in MODULES_READING_OUTLINES:
            patch.setattr(
                module, "parse_outline", lambda text, path, keep, **_: parse_module(text, path)
            )
        whole = outcome(function, *args)
    return with_outline, whole


def test_outline_keeps_kept_bodies_class_headers_and_module_statements():
    text = (
        "import os\nfrom a import B\n\n\nX = 1\n\n\ndef helper():\n    return os\n\n\n"
        "@decorate\nclass C(B, metaclass=M):\n    '''Doc.'''\n\n    field = 2\n\n"
        "    def read(self):\n        return 1\n\n    def skipped(self):\n        return 2\n\n\n"
        "class Empty(B):\n    def skipped(self):\n        pass\n"
    )
    module = parse_outline(text, "m.py", lambda q, _code: q == "C.read")
    assert module.code == (
        "import os\nfrom a import B\n\n\nX = 1\n"
        "@decorate\nclass C(B, metaclass=M):\n    def read(self):\n        return 1\n"
        "class Empty(B):\n    ...\n"
    )
    with_fields = parse_outline(text, "m.py", lambda q, _code: False, class_statements=True)
    assert "field = 2" in with_fields.code and "def" not in with_fields.code
    bare = parse_outline(text, "m.py", lambda q, _code: q == "C.read", module_statements=False)
    assert "import" not in bare.code and "X = 1" not in bare.code and "return 1" in bare.code


def test_an_outline_that_does_not_parse_falls_back_to_the_kept_bodies(monkeypatch):
    # `;` joins two class statements on one line: leaving one out breaks the line.
    text = "class C:\n    x = 1; y = 2\n\n    def read(self):\n        return 1\n"
    calls = []
    real = python_cst.parse_module_keeping

    def spy(*args):
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr("extractors.vllm.cst_outline.parse_module_keeping", spy)
    module = parse_outline(text, "m.py", lambda q, _code: q == "C.read")
    assert calls == ["m.py"]
    cls = top_level_classes(module)["C"]
    assert "return 1" in module.code_for_node(class_methods(cls)["read"])


def test_a_file_with_syntax_errors_reports_parse_modules_error():
    text = "class C:\n    def read(self):\n        return (\n"
    with pytest.raises(ParseError) as outlined:
        parse_outline(text, "bad.py", lambda q, _code: True)
    with pytest.raises(ParseError) as whole:
        parse_module(text, "bad.py")
    assert str(outlined.value) == str(whole.value)


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (serving_rules.tp_rules, (MODEL_CONFIG + MODEL_CONFIG_TP_METHODS + DECOYS, "m.py", None)),
        (serving_rules.tp_rules, (MODEL_CONFIG + MODEL_CONFIG_TP_METHODS, "m.py", RENAMED_KEY)),
        (serving_rules.tp_rules, (MODEL_CONFIG + DECOYS, "m.py", None)),  # anchor missing
        (serving_rules.tp_rules, (DECOYS, "m.py", None)),  # class missing
        (serving_rules.kv_divisibility_rule, (LINEAR + DECOYS, LINEAR_PATH)),
        (serving_rules.ssm_tp_splits, (MAMBA_UTILS + DECOYS, MAMBA_PATH)),
        (serving_rules.hybrid_page_rules, (PLATFORM_INTERFACE + DECOYS, PLATFORM_PATH)),
        (serving_rules.hybrid_page_rules, (PLATFORM_INTERFACE, PLATFORM_PATH, "Other")),
        (serving_rules.cache_defaults, (CACHE_CONFIG + DECOYS, CACHE_PATH)),
        (
            model_config_defaults.mamba_ssm_dtype_defaults,
            (MODELS_CONFIG_V1 + DECOYS, MODELS_CONFIG_PATH),
        ),
    ],
)
def test_facts_read_the_same_through_outlines(monkeypatch, function, args):
    with_outline, whole = both_ways(monkeypatch, function, *args)
    assert with_outline == whole
    if args[-1] is RENAMED_KEY:
        keys = {rule.rule: rule.keys for rule in with_outline}
        assert keys["attention_heads_divisible"] == ("n_heads_total",)


@pytest.mark.parametrize(
    "call",
    [
        "HybridSsmConfig.set_ssm_dtype(cache_config=c, hf_config=h)",
        "(HybridSsmConfig).set_ssm_dtype(cache_config=c, hf_config=h)",
        "HybridSsmConfig \\\n            .set_ssm_dtype(cache_config=c, hf_config=h)",
        "(HybridSsmConfig  # the hook\n            ).set_ssm_dtype(cache_config=c, hf_config=h)",
    ],
)
def test_mamba_hook_filter_keeps_every_spelling_of_a_class_method_call(call):
    # The delegating hook's text names the class, then only brackets, blanks, comments or a
    # line join before the `.`: the filter must keep its body, or the row is lost.
    hook = (
        "\n\nclass Delegating(VerifyAndUpdateConfig):\n    @staticmethod\n"
        "    def verify_and_update_config(vllm_config) -> None:\n"
        f"        c, h = vllm_config.cache_config, vllm_config.hf_config\n        {call}\n"
    )
    text = MODELS_CONFIG_V1.replace(
        '"PlainModel": PlainHookConfig,',
        '"PlainModel": PlainHookConfig,\n    "Delegating": Delegating,',
    )
    rows = model_config_defaults.mamba_ssm_dtype_defaults(text + hook, MODELS_CONFIG_PATH)
    found = {r.architecture: r for r in rows}
    assert found["Delegating"].symbol == "HybridSsmConfig.set_ssm_dtype"
    keep = model_config_defaults._hook_methods(text + hook)
    assert not keep(
        "PlainHookConfig.verify_and_update_config", b"def f(x):\n    x.block_size = 16\n"
    )
