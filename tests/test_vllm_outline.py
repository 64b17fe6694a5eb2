"""vLLM's serving and KV-head facts among decoys and odd spellings, and the skeleton tree
(python_skeleton.clean_tree) the hybrid page rule reads: the same records as the plain file."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.parsing.python_skeleton import _misread
from apron.extractors.serving import kv_heads
from apron.extractors.vllm import convertor, model_config_defaults, serving_rules
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


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (serving_rules.tp_rules, (MODEL_CONFIG + MODEL_CONFIG_TP_METHODS, "m.py", None)),
        (serving_rules.kv_divisibility_rule, (LINEAR, LINEAR_PATH)),
        (serving_rules.ssm_tp_splits, (MAMBA_UTILS, MAMBA_PATH)),
        (serving_rules.hybrid_page_rules, (PLATFORM_INTERFACE, PLATFORM_PATH)),
        (serving_rules.cache_defaults, (CACHE_CONFIG, CACHE_PATH)),
    ],
)
def test_decoys_change_no_fact(function, args):
    """A top-level function and another class with the same method names, a class field and a
    docstring: the facts are those of the file without them."""
    text, *rest = args
    assert outcome(function, text + DECOYS, *rest) == outcome(function, text, *rest)


def test_the_anchors_are_not_found_in_the_decoys():
    for text in (MODEL_CONFIG + DECOYS, DECOYS):
        with pytest.raises(AnchorError):
            serving_rules.tp_rules(text, "m.py", None)
    with pytest.raises(AnchorError, match="class Other is not defined"):
        serving_rules.hybrid_page_rules(PLATFORM_INTERFACE, PLATFORM_PATH, "Other")


def test_the_divisibility_key_is_the_one_the_convertor_getter_reads():
    config = MODEL_CONFIG + MODEL_CONFIG_TP_METHODS
    unreached = RENAMED_KEY.replace(
        "default_factory = self.get_total_num_attention_heads", "default_factory = lambda: 0"
    )
    for text in (RENAMED_KEY, unreached):
        keys = {rule.rule: rule.keys for rule in serving_rules.tp_rules(config, "m.py", text)}
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
    rows, _ = model_config_defaults.mamba_ssm_dtype_defaults(text + hook, MODELS_CONFIG_PATH)
    found = {r.architecture: r for r in rows}
    assert found["Delegating"].symbol == "HybridSsmConfig.set_ssm_dtype"
    wanted = model_config_defaults._hook_method_names(text + hook)
    assert "PlainHookConfig.verify_and_update_config" not in wanted


def test_mamba_hook_filter_drops_calls_that_reach_no_setter():
    hooks = (
        "\n\nclass Unrelated(VerifyAndUpdateConfig):\n    @classmethod\n"
        "    def verify_and_update_config(cls, vllm_config) -> None:\n"
        "        cls.helper(vllm_config)\n        PlainHookConfig.verify_and_update_config(vllm_config)\n"
        "\n\nclass Relay(VerifyAndUpdateConfig):\n    @staticmethod\n"
        "    def verify_and_update_config(vllm_config) -> None:\n"
        "        c, h = vllm_config.cache_config, vllm_config.hf_config\n"
        "        Second.verify_and_update_config(vllm_config)\n"
        "\n\nclass Second(VerifyAndUpdateConfig):\n    @staticmethod\n"
        "    def verify_and_update_config(vllm_config) -> None:\n"
        "        HybridSsmConfig.set_ssm_dtype(cache_config=vllm_config.cache_config,"
        " hf_config=vllm_config.hf_config)\n"
    )
    text = MODELS_CONFIG_V1.replace(
        '"PlainModel": PlainHookConfig,',
        '"PlainModel": PlainHookConfig,\n    "Relay": Relay,\n    "Unrelated": Unrelated,',
    )
    wanted = model_config_defaults._hook_method_names(text + hooks)
    assert "Relay.verify_and_update_config" in wanted
    assert "Second.verify_and_update_config" in wanted
    assert "Unrelated.verify_and_update_config" not in wanted
    rows, _ = model_config_defaults.mamba_ssm_dtype_defaults(text + hooks, MODELS_CONFIG_PATH)
    assert {r.architecture: r.symbol for r in rows}["Relay"] == "HybridSsmConfig.set_ssm_dtype"


# ------------------------------------------------------------ the convertor

CONVERTOR_BASE = "ModelArchConfigConvertorBase"
# The base class's factory is named through a comment inside brackets, and its MLA test calls a
# one-line method the describer follows; Other has a method of the same name that must not be.
REACHING_CONVERTOR = (
    CONVERTOR_V1.replace(
        "        default_factory = self.get_total_num_attention_heads\n",
        "        default_factory = (\n            self  # the query heads\n"
        "            .heads_from_config\n        )\n",
    )
    .replace(
        '            return getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n'
        '        elif self.hf_text_config.model_type == "eagle":',
        '            return self.has_latent()\n        elif self.hf_text_config.model_type == "eagle":',
    )
    .replace(
        "    def is_deepseek_mla(self) -> bool:",
        "    def heads_from_config(self) -> int:\n"
        '        return getattr(self.hf_text_config, "n_heads_total", 0)\n\n'
        "    def has_latent(self) -> bool:\n"
        '        return getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n\n'
        "    def get_vocab_size(self) -> int:\n"
        '        return getattr(self.hf_text_config, "vocab_size", 0)\n\n'
        "    def is_deepseek_mla(self) -> bool:",
    )
    + "\n\nclass Other(ModelArchConfigConvertorBase):\n"
    "    def heads_from_config(self) -> int:\n        return 5\n"
)


def test_the_describer_follows_methods_reached_through_self():
    (fallback,) = kv_heads.kv_head_fallback(REACHING_CONVERTOR, "c.py", CONVERTOR_BASE)
    assert fallback.fallback_key == "n_heads_total"
    gates = convertor.mla_gates(REACHING_CONVERTOR, "c.py", CONVERTOR_BASE)
    main = next(g for g in gates if g.scope == "main")
    assert main.other_conditions == ("kv_lora_rank is not None",)  # has_latent() described


@pytest.mark.parametrize(
    "function",
    [
        kv_heads.kv_head_aliases,
        kv_heads.kv_head_fallback,
        convertor.kv_head_overrides_by_convertor,
        convertor.mla_model_types,
        convertor.mla_gates,
    ],
)
def test_convertor_facts_of_the_decoys_alone_are_missing_anchors(function):
    with pytest.raises(AnchorError):
        function(DECOYS, "c.py", CONVERTOR_BASE)


SKELETON_CONFIG = MODEL_CONFIG + MODEL_CONFIG_TP_METHODS + DECOYS
# A one-line string holding a triple quote in a method the skeleton elides: the line-based pass
# would read a string from there to the next triple quote and swallow the methods between.
QUOTE_TRAP = (
    SKELETON_CONFIG.replace(
        "class ModelConfig:",
        'class ModelConfig:\n    def quoting(self):\n        return \'"""\'\n',
        1,
    )
    + '\n\nclass Late:\n    def f(self):\n        """Closes the string the pass would see."""\n'
)


def test_a_triple_quote_in_a_one_line_string_changes_no_fact():
    assert _misread(QUOTE_TRAP)
    assert serving_rules.tp_rules(QUOTE_TRAP, "m.py", None) == serving_rules.tp_rules(
        SKELETON_CONFIG, "m.py", None
    )


@pytest.mark.parametrize(
    ("text", "misread"),
    [
        ('x = """doc"""  # note\n', False),
        ('"""It\'s a "quoted" word."""\n', False),
        ("'''Has \"\"\" inside.'''\n", False),
        ("x = 1 + \\\n    2\n", True),
        ('# a """ in a comment\n', True),
        ('s = \'a """ b\'\n', True),
        ("s = \"a ''' b\"\n", True),
        ('s = """a \\""" b"""\n', True),
    ],
)
def test_misread_finds_what_the_skeleton_pass_cannot_read(text, misread):
    assert _misread(text) is misread


def test_a_syntax_error_anywhere_in_the_file_is_a_parse_error_naming_its_line():
    broken = SKELETON_CONFIG.replace(
        "class Other:", "class Other:\n    def broken(self):\n        return (\n\n", 1
    )
    with pytest.raises(ParseError, match=r"m.py does not parse as Python \(line \d+\)"):
        serving_rules.tp_rules(broken, "m.py", None)


# ------------------------------------------------------------ the mamba hooks from tree-sitter

# Shapes where tree-sitter's tree and libcst's differ: brackets around names, keys and calls, a
# chained and an annotated local, a keyword binding, a constant read through the class's name,
# a one-line class body, a concatenated key with a comment, a splat in the map.
MAMBA_SHAPES = (
    "\n\nclass Shapes(VerifyAndUpdateConfig):\n"
    '    LOCAL_DEFAULT = "bfloat16"\n'
    "    @classmethod\n"
    "    def verify_and_update_config(cls, vllm_config) -> None:\n"
    "        first = second = vllm_config.hf_config\n"
    "        noted: object = vllm_config.hf_config\n"
    "        source = (vllm_config.model_config  # the model's\n            .hf_text_config)\n"
    "        if vllm_config.cache_config.mamba_ssm_cache_dtype == 'auto':\n"
    "            vllm_config.cache_config.mamba_ssm_cache_dtype = (getattr)(\n"
    "                source, ('mamba_ssm' 'dtype'), (Shapes).LOCAL_DEFAULT\n            )\n"
    "\n\nclass Chained(VerifyAndUpdateConfig):\n"
    "    @classmethod\n"
    "    def verify_and_update_config(cls, vllm_config) -> None:\n"
    "        first = second = vllm_config.hf_config\n"
    "        (vllm_config.cache_config).mamba_ssm_cache_dtype = getattr(first, 'mamba_ssm_x')\n"
    "\n\nclass Annotated(VerifyAndUpdateConfig):\n"
    "    @classmethod\n"
    "    def verify_and_update_config(cls, vllm_config) -> None:\n"
    "        noted: object = vllm_config.hf_config\n"
    "        vllm_config.cache_config.mamba_ssm_cache_dtype: str = 'x'\n"
    "        vllm_config.cache_config.mamba_ssm_cache_dtype = getattr(noted, 'mamba_ssm_y', 1)\n"
    "\n\nclass OneLine(VerifyAndUpdateConfig): X = 'float16'\n"
    "\n\nclass ByKeyword(VerifyAndUpdateConfig):\n"
    "    @staticmethod\n"
    "    def verify_and_update_config(vllm_config) -> None:\n"
    "        HybridSsmConfig.set_ssm_dtype(\n"
    "            cache_config=vllm_config.cache_config, hf_config=(vllm_config.hf_config)\n"
    "        )\n"
)
MAMBA_SHAPES_MAP = (
    '"PlainModel": PlainHookConfig,\n'
    '    ("ShapesModel"): (Shapes),\n'
    '    "Chained" "Model"  # two parts\n    : Chained,\n'
    '    "AnnotatedModel": Annotated,\n'
    '    "OneLineModel": OneLine,\n'
    '    "KeywordModel": ByKeyword,\n'
    "    **EXTRA,\n"
)


# ------------------------------------------------------------ cache defaults from tree-sitter


def _cache_variant(block: str, memory: str, extra: str = "") -> str:
    return (
        CACHE_CONFIG.replace("    block_size: int = Field(default=None, gt=0)", block)
        .replace("    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)", memory)
        .replace("        return self\n", "        return self\n" + extra)
    )


REPLACED_32 = (
    "literal",
    "32",
    "CacheConfig.DEFAULT_BLOCK_SIZE",
    "None, replaced in CacheConfig._fill_block_size by DEFAULT_BLOCK_SIZE",
)
MEMORY = "CacheConfig.gpu_memory_utilization"
NOT_A_FIELD = "{} is not a field in vllm/config/cache.py"


def _cache_summary(result):
    """(setting, kind, value, symbol, reason) per row, or (error type, first line)."""
    if isinstance(result, list):
        return [(r.setting, r.kind, r.value, r.symbol, r.reason) for r in result]
    return result[0].__name__, result[1].splitlines()[0]


# Each shape with the rows vLLM's CacheConfig means by it (these were libcst's reading too,
# while a libcst twin of the reader existed).
CACHE_SHAPES = [
    (
        CACHE_CONFIG,
        [("block_size", *REPLACED_32), ("gpu_memory_utilization", "literal", "0.85", MEMORY, "")],
    ),
    (
        _cache_variant("    block_size: int = (16)", "    gpu_memory_utilization = 1j"),
        [
            ("block_size", "literal", "16", "CacheConfig.block_size", ""),
            ("gpu_memory_utilization", "opaque", "", MEMORY, "the default 1j is not a literal"),
        ],
    ),
    (
        _cache_variant(
            "    block_size = (pydantic.Field)(default=None)",
            "    gpu_memory_utilization: float = Field(\n        0.9,  # positional\n"
            "        default=compute(),\n    )",
        ),
        [
            ("block_size", *REPLACED_32),
            (
                "gpu_memory_utilization",
                "opaque",
                "",
                MEMORY,
                "the default compute() is not a literal",
            ),
        ],
    ),
    (
        _cache_variant(
            "    block_size: int = Field(default=None)\n    other = block_size = 8",
            "    gpu_memory_utilization: float\n    gpu_memory_utilization = 0.5",
            "\n    def _chained(self):\n        self.block_size = x = self.OTHER\n"
            "        (self).block_size: int = self.ALSO\n"
            "        self.block_size = (CacheConfig).DEFAULT_BLOCK_SIZE\n",
        ),
        [("block_size", *REPLACED_32), ("gpu_memory_utilization", "literal", "0.5", MEMORY, "")],
    ),
    (
        _cache_variant(
            "    block_size: int = None", "    gpu_memory_utilization: float = 0.7"
        ).replace("self.block_size = self.DEFAULT_BLOCK_SIZE", "self.block_size = cls.MISSING"),
        [
            (
                "block_size",
                "opaque",
                "",
                "CacheConfig.block_size",
                "the default None is not a literal",
            ),
            ("gpu_memory_utilization", "literal", "0.7", MEMORY, ""),
        ],
    ),
    (
        "class CacheConfig: block_size = 16\n",  # one-line body: no fields
        ("AnchorError", NOT_A_FIELD.format("CacheConfig.block_size")),
    ),
    (
        CACHE_CONFIG.replace("class CacheConfig", "class OtherConfig"),
        ("AnchorError", "class CacheConfig is not defined in vllm/config/cache.py"),
    ),
    (
        CACHE_CONFIG.replace("    gpu_memory_utilization", "    gpu_fraction"),
        ("AnchorError", NOT_A_FIELD.format(MEMORY)),
    ),
]


@pytest.mark.parametrize(("text", "expected"), CACHE_SHAPES)
def test_cache_defaults_read_these_shapes(text, expected):
    assert _cache_summary(outcome(serving_rules.cache_defaults, text, CACHE_PATH)) == expected


def test_cache_defaults_of_specific_shapes():
    rows = {r.setting: r for r in serving_rules.cache_defaults(CACHE_CONFIG, CACHE_PATH)}
    assert (rows["block_size"].value, rows["block_size"].symbol) == (
        "32",
        "CacheConfig.DEFAULT_BLOCK_SIZE",
    )
    multi = _cache_variant(
        "    block_size: int = (16)",
        "    gpu_memory_utilization: float = Field(\n        0.9,  # positional\n"
        "        default=compute( 1 ),\n    )",
    )
    rows = {r.setting: r for r in serving_rules.cache_defaults(multi, CACHE_PATH)}
    assert rows["block_size"].value == "16"
    assert rows["gpu_memory_utilization"].reason == "the default compute(1) is not a literal"
    imaginary = _cache_variant("    block_size: int = 1j", "    gpu_memory_utilization = 0.5")
    rows = {r.setting: r for r in serving_rules.cache_defaults(imaginary, CACHE_PATH)}
    assert rows["block_size"].kind == "opaque"  # libcst's Imaginary, not an Integer


def test_cache_defaults_of_a_file_with_syntax_errors_is_a_parse_error_naming_the_line():
    broken = CACHE_CONFIG + "\ndef broken(:\n    pass\n"
    line = CACHE_CONFIG.count("\n") + 2  # the line of `def broken(:`
    assert _cache_summary(outcome(serving_rules.cache_defaults, broken, CACHE_PATH)) == (
        "ParseError",
        f"vllm/config/cache.py does not parse as Python (line {line})",
    )


# ------------------------------------------------------------ the hybrid page rule from tree-sitter

HYBRID_SHAPES = [
    PLATFORM_INTERFACE,
    # brackets around the product, the call and the names; a walrus binding for the alignment
    PLATFORM_INTERFACE.replace(
        "attn_block_size = align * cdiv(mamba_page, align * page_1)",
        "(attn_block_size) = ((align) * (cdiv)(mamba_page, (align * page_1)))",
    )
    .replace("        align = max(", "        _ = (align := max(")
    .replace(
        "            cache_config.block_size,\n        )",
        "            cache_config.block_size,\n        ))",
    ),
    # an elif chain (its branches are not followed), a with body (it is), chained and
    # annotated assignments (no binding), the raise test in an elif and after an `or`
    PLATFORM_INTERFACE.replace(
        '        if cache_config.mamba_cache_mode == "all":',
        "        with lock:\n            attn_block_size = 8\n"
        "        first = second = 4\n        typed: int = 5\n"
        '        if cache_config.mamba_cache_mode == "all":',
    ).replace(
        "        if cache_config.block_size < attn_block_size:",
        "        if x:\n            pass\n"
        "        elif flag or (cache_config.block_size < attn_block_size):",
    ),
    PLATFORM_INTERFACE.replace(
        "        else:\n            attn_block_size = align",
        "        elif cache_config.enable_prefix_caching:\n            attn_block_size = 1\n"
        "        else:\n            attn_block_size = align",
    ),
    # the padding assigned as the second target of a chain (libcst reads the first only)
    PLATFORM_INTERFACE.replace(
        "        cache_config.mamba_page_size_padded = attn_page_size",
        "        other.x = cache_config.mamba_page_size_padded = attn_page_size",
    ),
    PLATFORM_INTERFACE.replace("attn_block_size = ", "attn_size = "),  # assigns none
    PLATFORM_INTERFACE.replace("_align_hybrid_block_size", "_other"),  # method missing
    PLATFORM_INTERFACE.replace("class Platform", "class Other"),  # class missing
]


ALL = ("==", "mamba_cache_mode", ("str", "all"))  # a name: the setting apron passes
NOT_ALL = ("!=", "mamba_cache_mode", ("str", "all"))
HYBRID_SYMBOL = "Platform._align_hybrid_block_size"
# (when, shape, raises_only, pads_mamba_page) per row of each of HYBRID_SHAPES, or the error:
# what vLLM's rule means by each shape (libcst's reading too, while a libcst twin existed).
HYBRID_READINGS = [
    [(NOT_ALL, "align_ceil", True, True), (ALL, "chunk_align_ceil", True, True)],
    [(NOT_ALL, "align_ceil", True, True), (ALL, "chunk_align_ceil", True, True)],
    [
        ((), "opaque", True, True),
        (NOT_ALL, "align_ceil", True, True),
        (ALL, "chunk_align_ceil", True, True),
    ],
    [(ALL, "chunk_align_ceil", True, True)],
    [(NOT_ALL, "align_ceil", True, False), (ALL, "chunk_align_ceil", True, False)],
    ("AnchorError", f"{HYBRID_SYMBOL} assigns no attn_block_size in {PLATFORM_PATH}"),
    ("AnchorError", f"{HYBRID_SYMBOL} is not defined in {PLATFORM_PATH}"),
    ("AnchorError", f"class Platform is not defined in {PLATFORM_PATH}"),
]


def _hybrid_summary(result):
    if isinstance(result, list):
        return [(r.when, r.shape, r.raises_only, r.pads_mamba_page) for r in result]
    return result[0].__name__, result[1].splitlines()[0]


@pytest.mark.parametrize(
    ("text", "expected"), list(zip(HYBRID_SHAPES, HYBRID_READINGS, strict=True))
)
def test_hybrid_page_rules_read_these_shapes(text, expected):
    args = (text, PLATFORM_PATH, serving_rules.PLATFORM_CLASS, serving_rules.HYBRID_METHOD)
    assert _hybrid_summary(outcome(serving_rules.hybrid_page_rules, *args)) == expected


def test_hybrid_page_rules_from_tree_sitter_read_these_shapes():
    args = (PLATFORM_PATH, serving_rules.PLATFORM_CLASS, serving_rules.HYBRID_METHOD)
    bracketed = serving_rules.hybrid_page_rules(HYBRID_SHAPES[1], *args)
    # `(align) * cdiv(m, align * p)` is `align * cdiv(...)`: brackets do not hide the shape
    assert {r.shape for r in bracketed} == {"align_ceil", "chunk_align_ceil"}
    assert any(r.formula.startswith("(attn_block_size) = ") for r in bracketed)
    assert all(r.alignment.startswith("max(min(s for s in") for r in bracketed)
    chained = serving_rules.hybrid_page_rules(HYBRID_SHAPES[2], *args)
    assert [r.when for r in chained][0] == ()  # the with body's assignment, under no test
    assert all(r.raises_only for r in chained)
    assert not any(
        r.pads_mamba_page for r in serving_rules.hybrid_page_rules(HYBRID_SHAPES[4], *args)
    )


def test_hybrid_page_rules_of_a_file_with_syntax_errors_is_a_parse_error_naming_the_line():
    broken = PLATFORM_INTERFACE.replace("        page_1 = 100", "        page_1 = (100")  # line 6
    args = (PLATFORM_PATH, serving_rules.PLATFORM_CLASS, serving_rules.HYBRID_METHOD)
    assert _hybrid_summary(outcome(serving_rules.hybrid_page_rules, broken, *args)) == (
        "ParseError",
        f"{PLATFORM_PATH} does not parse as Python (line 6)",
    )
