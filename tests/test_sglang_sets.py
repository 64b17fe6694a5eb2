"""SGLang's architecture sets and KV-head rule in model_config.py, on hand-written miniatures."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.sglang.architecture_sets import architecture_sets
from apron.extractors.sglang.hybrid_configs import hybrid_config_classes
from apron.extractors.sglang.kv_heads import kv_head_aliases, kv_head_fallback, kv_head_overrides
from tests.sglang_miniatures import MODEL_CONFIG, MODEL_CONFIG_OLD, MODEL_CONFIG_PATH

PATH = MODEL_CONFIG_PATH


def _sets(text: str = MODEL_CONFIG):
    rows, warnings = architecture_sets(text, PATH)
    by_set: dict[str, dict[str, object]] = {}
    for row in rows:
        by_set.setdefault(row.set_name, {})[row.architecture] = row
    return by_set, warnings


def test_sets_are_named_by_their_predicate_or_attribute():
    by_set, _ = _sets()
    assert sorted(by_set) == [
        "ModelConfig.is_hybrid_swa_compress",
        "is_deepseek_dsa",
        "is_encoder_decoder_model",
        "is_generation_model",
        "is_hybrid_swa_model",
        "is_kimi_k3",
        "is_local_attention_model",
        "is_minimax_sparse",
        "is_multimodal_chunked_prefill_supported",
        "is_multimodal_model",
        "is_piecewise_cuda_graph_disabled_model",
    ]
    assert sorted(by_set["is_kimi_k3"]) == ["KimiK3ForConditionalGeneration"]
    assert sorted(by_set["is_minimax_sparse"]) == ["MiniMaxM3SparseForCausalLM"]
    assert sorted(by_set["is_encoder_decoder_model"]) == [
        "MllamaForConditionalGeneration",
        "WhisperForConditionalGeneration",
    ]


@pytest.mark.parametrize(
    ("set_name", "architecture", "via", "symbol"),
    [
        (
            "is_hybrid_swa_model",
            "MiMoV2FlashForCausalLM",
            "*MIMO_V2_MODEL_ARCHS",
            "MIMO_V2_MODEL_ARCHS",
        ),
        ("is_hybrid_swa_model", "GptOssForCausalLM", "", "is_hybrid_swa_model"),
        (
            "is_multimodal_model",
            "MiMoV2ForCausalLM",
            "*MIMO_V2_MULTIMODAL_ARCHS",
            "MIMO_V2_MULTIMODAL_ARCHS",
        ),
        ("is_multimodal_model", "Gemma3ForConditionalGeneration", "", "multimodal_model_archs"),
        (
            "ModelConfig.is_hybrid_swa_compress",
            "MiMoV2ForCausalLM",
            "*MIMO_V2_MODEL_ARCHS",
            "MIMO_V2_MODEL_ARCHS",
        ),
        (
            "is_piecewise_cuda_graph_disabled_model",
            "LLaDAModelLM",
            "",
            "piecewise_cuda_graph_disabled_model_archs",
        ),
    ],
)
def test_spread_constants_are_resolved(set_name, architecture, via, symbol):
    row = _sets()[0][set_name][architecture]
    assert (row.via, row.symbol, row.condition, row.member_returns) == (via, symbol, None, True)


def test_hybrid_swa_set_with_its_member_condition_and_config_opt_in():
    hybrid = _sets()[0]["is_hybrid_swa_model"]
    assert sorted(hybrid) == [
        "*",
        "Gemma4ForCausalLM",
        "GptOssForCausalLM",
        "LagunaForCausalLM",
        "Llama4ForConditionalGeneration",
        "MiMoV2FlashForCausalLM",
        "MiMoV2ForCausalLM",
    ]
    laguna = hybrid["LagunaForCausalLM"]
    assert (laguna.condition, laguna.condition_rule) == (
        'getattr(hf_text_config, "sliding_window", 0)',
        ("hpget", "hf_text_config.sliding_window", 0),
    )
    assert hybrid["*"].condition_rule == ("hpget", "hf_text_config.is_hybrid_swa", False)
    assert hybrid["GptOssForCausalLM"].condition_rule == ()


def test_conditional_member_and_run_time_member():
    by_set, warnings = _sets()
    external = by_set["is_multimodal_model"]["ExternalVLMForCausalLM"]
    assert (external.via, external.condition, external.condition_rule) == (
        "append",
        "envs.SGLANG_ENABLE_EXTERNAL_VLM.get()",
        ("undef", "envs.SGLANG_ENABLE_EXTERNAL_VLM.get()"),
    )
    assert "external_arch" not in by_set["is_multimodal_model"]
    codes = {(w.code, w.subject) for w in warnings}
    assert ("run-time-member", "multimodal_model_archs") in codes
    assert ("unstructured-condition", "is_multimodal_model") in codes


def test_set_level_condition_and_polarity():
    by_set, _ = _sets()
    dsa = by_set["is_deepseek_dsa"]
    assert sorted(dsa) == ["DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"]
    assert {r.condition_rule for r in dsa.values()} == {
        ("!=", ("hpget", "hf_config.index_topk"), None)
    }
    non_generation = by_set["is_generation_model"]
    assert sorted(non_generation) == ["BertModel", "LlamaEmbeddingModel", "Qwen2ForRewardModel"]
    assert {r.member_returns for r in non_generation.values()} == {False}
    chunked = by_set["is_multimodal_chunked_prefill_supported"]
    assert sorted(chunked) == ["CLIPModel", "MllamaForConditionalGeneration"]
    assert {r.member_returns for r in chunked.values()} == {False}


def test_older_layout_names_the_predicate_is_hybrid_model():
    by_set, warnings = _sets(MODEL_CONFIG_OLD)
    row = by_set["is_hybrid_model"]["Llama4ForConditionalGeneration"]
    assert (row.condition, row.condition_rule) == (
        "hybrid_kvcache_ratio > 0",
        ("undef", "hybrid_kvcache_ratio > 0"),
    )
    assert any(w.code == "unstructured-condition" for w in warnings)


def test_missing_hybrid_swa_set_is_an_error():
    text = MODEL_CONFIG.replace("def is_hybrid_swa_model(", "def hybrid_swa_allowed(")
    with pytest.raises(AnchorError, match="is_hybrid_swa_model or is_hybrid_model"):
        architecture_sets(text, PATH)


def test_unresolved_spread_is_a_warning_not_a_silent_gap():
    text = MODEL_CONFIG.replace(
        '*MIMO_V2_MODEL_ARCHS,\n        "Gemma4', '*load_archs(),\n        "Gemma4'
    )
    by_set, warnings = _sets(text)
    assert "MiMoV2FlashForCausalLM" not in by_set["is_hybrid_swa_model"]
    assert ("unresolved-spread", "*load_archs()") in {(w.code, w.subject) for w in warnings}


def test_malformed_model_config_is_a_parse_error():
    with pytest.raises(ParseError):
        architecture_sets("def is_hybrid_swa_model(:\n", PATH)


def test_kv_head_rule_reads_through_the_vllm_inline_extractor():
    assert [r.key for r in kv_head_aliases(MODEL_CONFIG, PATH)] == [
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
    ]
    overrides = [
        (r.model_type, r.rule_order, r.kind, r.rule) for r in kv_head_overrides(MODEL_CONFIG, PATH)
    ]
    assert overrides == [
        ("*", 0, "conditional", "1 when hparams.get('multi_query', False)"),
        ("mpt", 1, "reads", "reads attn_config.kv_n_heads, else num_attention_heads"),
        ("dbrx", 2, "reads", "reads attn_config.kv_n_heads, else num_attention_heads"),
    ]
    multi_query = kv_head_overrides(MODEL_CONFIG, PATH)[0]
    assert multi_query.when == ("hpget", "multi_query", False)
    assert (multi_query.gives, multi_query.gives_constant, multi_query.otherwise) == (
        "constant",
        1,
        "",
    )
    assert multi_query.excludes == (
        "and",
        ("in", ("hpget", "model_type"), ("list", ("str", "falcon"), ("str", "RefinedWeb"))),
        ("hpget", "new_decoder_architecture", False),
    )
    assert [r.fallback for r in kv_head_fallback(MODEL_CONFIG, PATH)] == ["num_attention_heads"]
    assert kv_head_overrides(MODEL_CONFIG_OLD, PATH) == []


def test_kv_head_rule_missing_is_an_error():
    text = MODEL_CONFIG.replace("def get_total_num_kv_heads(", "def total_kv_heads(")
    with pytest.raises(AnchorError, match="get_total_num_kv_heads"):
        kv_head_aliases(text, PATH)


def _hybrid(text=None, path=None, class_name=None):
    from tests.sglang_miniatures import CONFIG_MODULES, HYBRID_ARCH, HYBRID_ARCH_PATH

    rows, warnings = hybrid_config_classes(
        text or HYBRID_ARCH,
        path or HYBRID_ARCH_PATH,
        CONFIG_MODULES,
        {"python/sglang/srt/models/llama.py": "class LlamaForCausalLM: pass\n"},
        class_name,
    )
    return {(r.function, r.config_class): r for r in rows}, warnings


def test_hybrid_config_classes_follow_isinstance_and_subclasses():
    rows, _ = _hybrid()
    assert sorted(c for f, c in rows if f == "mamba2_config") == [
        "GraniteMoeHybridConfig",
        "InklingModelConfig",
        "Lfm2Config",
        "NemotronHConfig",
        "NemotronHPuzzleConfig",
    ]
    puzzle = rows[("mamba2_config", "NemotronHPuzzleConfig")]
    assert (puzzle.via, puzzle.model_type, puzzle.config_read) == (
        "NemotronHConfig",
        "nemotron_h_puzzle",
        "hf_config",
    )
    text = rows[("hybrid_gdn_config", "Qwen3_5TextConfig")]
    assert (text.via, text.config_read) == ("Qwen3NextConfig", "hf_config.get_text_config()")
    inkling = rows[("mamba2_config", "InklingModelConfig")]
    assert inkling.condition == "config.mamba2_cache_params is not None"
    granite = rows[("mamba2_config", "GraniteMoeHybridConfig")]
    assert granite.condition == (
        'has_mamba (where has_mamba = "mamba" in getattr(config, "layer_types", []))'
    )
    union = {c: r.via for (f, c), r in rows.items() if f == "mambaish_config"}
    assert union["Qwen3NextConfig"] == "hybrid_gdn_config()"
    assert union["NemotronHConfig"] == "mamba2_config()"


def test_a_class_tested_on_the_config_and_on_its_text_config_gives_a_row_for_each():
    """kimi_linear_config at the pin: isinstance(config, KimiLinearConfig), then the same class
    on getattr(config, "text_config", None): a composite config (Kimi-K3) whose text_config is a
    KimiLinearConfig gets the state pool through the second test, so both are rows."""
    from tests.sglang_miniatures import HYBRID_ARCH, HYBRID_ARCH_PATH

    kimi = """

def kimi_linear_config(model_config):
    config = model_config.hf_config
    if isinstance(config, Qwen3NextConfig):
        return config
    text_config = getattr(config, "text_config", None)
    if isinstance(text_config, Qwen3NextConfig):
        return text_config
    return None
"""
    text = HYBRID_ARCH.replace(
        "existing = mamba2_config(model_config) or hybrid_gdn_config(model_config)",
        "existing = mamba2_config(model_config) or kimi_linear_config(model_config)",
    )
    from tests.sglang_miniatures import CONFIG_MODULES

    rows, _ = hybrid_config_classes(text + kimi, HYBRID_ARCH_PATH, CONFIG_MODULES, {}, None)
    reads = sorted(
        (r.function, r.config_class, r.config_read)
        for r in rows
        if r.config_class == "Qwen3NextConfig"
        and r.function in ("kimi_linear_config", "mambaish_config")
    )
    assert reads == [
        ("kimi_linear_config", "Qwen3NextConfig", "hf_config"),
        ("kimi_linear_config", "Qwen3NextConfig", "hf_config.text_config"),
        ("mambaish_config", "Qwen3NextConfig", "hf_config"),
        ("mambaish_config", "Qwen3NextConfig", "hf_config.text_config"),
    ]


def test_hybrid_config_warnings_say_what_is_not_static():
    _, warnings = _hybrid()
    codes = {(w.code, w.subject) for w in warnings}
    assert ("run-time-registry", "mambaish_config") in codes
    assert ("exception-branch", "mamba2_config: NemotronHConfig") in codes
    exception = next(w for w in warnings if w.code == "exception-branch")
    assert 'when model_config.is_draft_model and pattern is not None and "M" not in pattern' in (
        exception.message
    )
    assert ("inherited-model-type", "Lfm2Config") in codes
    registry = next(w for w in warnings if w.code == "run-time-registry")
    assert "0 call(s)" in registry.message


def test_hybrid_config_classes_in_the_older_model_runner_layout():
    from tests.sglang_miniatures import MODEL_RUNNER, MODEL_RUNNER_PATH

    rows, warnings = _hybrid(MODEL_RUNNER, MODEL_RUNNER_PATH, "ModelRunner")
    assert sorted(rows) == [
        ("hybrid_gdn_config", "Qwen3NextConfig"),
        ("hybrid_gdn_config", "Qwen3_5TextConfig"),
        ("mamba2_config", "NemotronHConfig"),
        ("mamba2_config", "NemotronHPuzzleConfig"),
        ("mambaish_config", "NemotronHConfig"),
        ("mambaish_config", "NemotronHPuzzleConfig"),
        ("mambaish_config", "Qwen3NextConfig"),
        ("mambaish_config", "Qwen3_5TextConfig"),
    ]
    assert not any(w.code == "run-time-registry" for w in warnings)


def test_hybrid_config_union_missing_is_an_error():
    from tests.sglang_miniatures import HYBRID_ARCH

    with pytest.raises(AnchorError, match="mambaish_config"):
        _hybrid(HYBRID_ARCH.replace("def mambaish_config(", "def state_config("))


def test_set_members_no_module_registers_are_warnings_of_the_sets_fact():
    from apron.extractors.engines import ENGINES
    from apron.extractors.runner.base import extract_engine
    from apron.extractors.snapshot import MemorySnapshot
    from tests.sglang_miniatures import full_tree_2026

    facts = extract_engine(
        ENGINES["sglang"], MemorySnapshot(full_tree_2026(), engine="sglang"), commit_date="x"
    )
    stale = {w.subject: w for w in facts.warnings if w.code == "set-member-not-registered"}
    assert {w.fact for w in stale.values()} == {"architecture_sets"}
    assert "Qwen2ForCausalLM" not in stale  # registered by the miniature models package
    assert "Qwen3NextForCausalLM" in stale
    assert stale["LLaDAModelLM"].message == (
        "is_piecewise_cuda_graph_disabled_model names LLaDAModelLM, which no models module "
        "registers"
    )


def test_related_config_classes_are_those_of_all_the_files():
    from apron.extractors.sglang.hybrid_configs import config_classes, related_config_classes

    texts = {
        "c/a.py": "class AConfig(Base):\n    model_type = 'a'\n",
        # derives from AConfig through a class this file defines; names AConfig
        "c/b.py": "from .a import AConfig\nclass BConfig(AConfig): pass\n"
        "class CConfig(BConfig):\n    model_type = 'c'\n",
        # names only CConfig, which the closure reaches: parsed in the second round
        "c/d.py": "from .b import CConfig\nclass DConfig(CConfig): pass\n",
        # an earlier definition of BConfig (path order) with other bases: the one that counts
        "c/0.py": "class BConfig(Other): pass\n",
        "c/unrelated.py": "class ZConfig: pass\n",
    }
    full = config_classes(texts)
    related = related_config_classes(texts, {"AConfig"})
    for name in ("AConfig", "BConfig", "CConfig", "DConfig"):
        assert related.get(name) == full.get(name)
    assert full["BConfig"].bases == ("Other",)  # so CConfig and DConfig are not subclasses
    assert "ZConfig" not in related


def test_related_config_classes_do_not_parse_files_naming_none():
    from apron.extractors.sglang.hybrid_configs import related_config_classes

    texts = {"c/a.py": "class AConfig: pass\n", "c/broken.py": "class (:\n"}
    assert set(related_config_classes(texts, {"AConfig"})) == {"AConfig"}
    with pytest.raises(ParseError):
        related_config_classes(texts, {"AConfig", "class"})


# Shapes the tree-sitter reading must see as libcst did: parentheses around a test or a set,
# comments inside collections, True/False as names, elif tests inside methods, assignments in
# nested blocks and functions, two targets and annotated assignments (not sets), a walrus guard.
SHAPES_CONFIG = '''
A_ARCHS = ["A1", "A2"]
B_ARCHS: list = ("B1",  # a comment inside the tuple
    "B2")
C = D = ["C1"]
A_ARCHS.append("A3")
if (flag := os.environ.get("X")):
    A_ARCHS.append("A4")
    A_ARCHS.append(load())
if other:
    B_ARCHS.append("B3")
else:
    B_ARCHS.append("B4")
E_ARCHS = "E1", "E2"


@decorator
def is_hybrid_swa_model(model_architectures):
    """Doc."""
    hybrid = {
        "H1",  # first
        *A_ARCHS,
        *MISSING,
        name_var,
    }
    return any((arch in hybrid) for arch in model_architectures)


def is_paren(architectures):
    return ((architectures[0]) in (B_ARCHS)) and (getattr(config, "x", None) is not None)


def is_names(architectures):
    if architectures[0] in E_ARCHS:
        return False
    elif "Z" == architectures[0]:
        return (True)
    return False


def is_cmp(architectures):
    return 1 < len(architectures) < 3


def is_listcomp(architectures):
    return any([a in ["L1", "L2"] for a in architectures])


def is_two_loops(architectures):
    return any(a in ["T1"] for a in architectures for b in architectures)


class ModelConfig:
    def __init__(self, hf_config):
        hf_architectures = self.hf_config.architectures[0]
        local_list = ["LL1", "LL2"]
        self.is_y = (
            hf_architectures == "Y1"  # a comment inside the test
            or hf_architectures == "Y2"
        )
        self.a = self.b = hf_architectures in ["NO1"]
        self.c: bool = hf_architectures in ["C2"]  # an annotated assignment is an assignment
        if other:
            pass
        elif hf_architectures in local_list:
            self.q = 1
        elif hf_architectures in E_ARCHS and not (
            hasattr(self.hf_config, "v") and hasattr(self.hf_config, "a")
        ):  # a module constant tested in a method: a set of its own
            self.r = 2
        for i in range(3):
            try:
                self.w = any(a in ["W1"] for a in self.hf_config.architectures)
            except Exception:
                self.v = _hf_arch(self.hf_config) in ["V1"]

        def inner():
            self.n = hf_architectures in ["N1"]

    def _x(self):
        self.z = self.hf_config.architectures[0] in ("Z1",)

    def _x(self):
        self.z2 = self.hf_config.architectures[0] in ("Z2",)
'''


MIMO_LIKE = 'not (hasattr(self.hf_config, "v") and hasattr(self.hf_config, "a"))'


def test_the_architecture_sets_of_these_shapes():
    rows, warnings = architecture_sets(SHAPES_CONFIG, PATH)
    assert sorted(
        (r.set_name, r.architecture, r.member_returns, r.via, r.condition) for r in rows
    ) == [
        ("ModelConfig.__init__.E_ARCHS", "E1", True, "", MIMO_LIKE),
        ("ModelConfig.__init__.E_ARCHS", "E2", True, "", MIMO_LIKE),
        ("ModelConfig.__init__.local_list", "LL1", True, "", None),
        ("ModelConfig.__init__.local_list", "LL2", True, "", None),
        ("ModelConfig.c", "C2", True, "", None),
        ("ModelConfig.is_y", "Y1", True, "", None),
        ("ModelConfig.is_y", "Y2", True, "", None),
        ("ModelConfig.n", "N1", True, "", None),
        ("ModelConfig.v", "V1", True, "", None),
        ("ModelConfig.w", "W1", True, "", None),
        ("ModelConfig.z2", "Z2", True, "", None),  # the last definition of _x
        ("is_hybrid_swa_model", "A1", True, "*A_ARCHS", None),
        ("is_hybrid_swa_model", "A2", True, "*A_ARCHS", None),
        ("is_hybrid_swa_model", "A3", True, "append", None),
        ("is_hybrid_swa_model", "A4", True, "append", 'os.environ.get("X")'),
        ("is_hybrid_swa_model", "H1", True, "", None),
        ("is_listcomp", "L1", True, "", None),
        ("is_listcomp", "L2", True, "", None),
        ("is_names", "E1", False, "", None),
        ("is_names", "E2", False, "", None),
        ("is_names", "Z", True, "", None),
        # the condition's own brackets are not code
        ("is_paren", "B1", True, "", 'getattr(config, "x", None) is not None'),
        ("is_paren", "B2", True, "", 'getattr(config, "x", None) is not None'),
    ]
    paren = next(r for r in rows if r.set_name == "is_paren")
    assert (paren.condition_rule, paren.symbol) == (
        ("!=", ("hpget", "hf_config.x"), None),
        "B_ARCHS",
    )
    assert [(w.code, w.subject) for w in warnings] == [
        ("run-time-member", "A_ARCHS"),
        ("unresolved-spread", "*MISSING"),
        ("non-literal-member", "name_var"),
        ("unstructured-condition", "is_hybrid_swa_model"),
        ("unread-predicate", "is_cmp"),
    ]  # E_ARCHS' `not (hasattr(...) and hasattr(...))` is read: no warning
    e1 = next(r for r in rows if r.set_name == "ModelConfig.__init__.E_ARCHS")
    assert e1.condition_rule == ("not", ("and", ("has", "hf_config.v"), ("has", "hf_config.a")))


def test_a_file_tree_sitter_cannot_parse_is_a_parse_error_naming_its_line():
    broken = SHAPES_CONFIG + "\nx = (\n"
    line = len(broken.splitlines())  # the unclosed bracket, on the last line
    with pytest.raises(ParseError, match=rf"{PATH} does not parse as Python \(line {line}\)"):
        architecture_sets(broken, PATH)


CONFIG_MODULE = """
class EConfig(PretrainedConfig):
    model_type = "e"

    def __init__(self, layers=2, **kwargs):
        self.layers = layers
        model_type = "not the class attribute"
        super().__init__(**kwargs)

    keys_to_ignore = ["x"]
"""


@pytest.mark.parametrize(
    "text",
    [
        CONFIG_MODULE,
        # a bracket continued at the class's indentation: the line-based elision cannot cut
        # the method, so the module is parsed whole
        CONFIG_MODULE.replace("self.layers = layers", "self.layers = max(\n    layers, 1)"),
    ],
)
def test_config_classes_read_headers_and_class_attributes_with_method_bodies_elided(text):
    from apron.extractors.sglang.hybrid_configs import ConfigClass, config_classes

    assert config_classes({"c/e.py": text}) == {
        "EConfig": ConfigClass("EConfig", ("PretrainedConfig",), "e")
    }


def test_config_module_broken_outside_method_bodies_is_a_parse_error():
    from apron.extractors.sglang.hybrid_configs import config_classes

    with pytest.raises(ParseError):
        config_classes({"c/e.py": CONFIG_MODULE.replace('keys_to_ignore = ["x"]', "keys = [")})


# Shapes the tree-sitter reading must see as the libcst reader did: a branch body read as text
# (a compound statement owns the comment lines above it, the first one those after the block
# header), classes written as a tuple, an attribute or a union, an elif, a nested def, a
# decorator call, `self.x` members of the union.
HYBRID_SHAPES = """
from x import (AConfig, BConfig)

@decorator()
def a_config(model_config):
    config = model_config.hf_config
    if isinstance(config, AConfig) and (model_config.flag):
        # comment above a for
        for i in config.layers:
            # inner
            x = i
        # footer at block level
          # mid
        # above with
        with ctx():
            pass
    if isinstance((config), (BConfig, mod.CConfig)):  # header comment
        # first lead
        try:
            y = 1
        except Exception:
            return None
        return config
    if isinstance(config, AConfig | BConfig):
        t = config.text_config
        return t if t.enabled else None
    if isinstance(config, BConfig):
        if not config.has_mamba:
            return None
        return config
    if isinstance(config, AConfig) and config.special:
        return None
    return None


def b_config(model_config):
    text_config = getattr(model_config.hf_config, "text_config", None)
    if isinstance(text_config, BConfig):
        return text_config
    elif isinstance(text_config, AConfig):
        def inner():
            return 1
        return None


def linear_attn_registry_result(model_config):
    return 1


def mambaish_config(model_config):
    existing = a_config(model_config) or b_config(model_config) or self.c_config
    if existing:
        return existing
    result = linear_attn_registry_result(model_config)
    return result
"""
HYBRID_CONFIGS = {
    "c/a.py": "class AConfig(PretrainedConfig):\n    model_type = 'a'\n\n"
    "class A2Config(AConfig):\n    model_type = 'a2'\n",
    "c/b.py": "class BConfig(X):\n    model_type = 'b'\n    def __init__(self):\n        self.x = 1\n",
}


def test_hybrid_functions_read_the_shapes_the_libcst_reader_read():
    rows, warnings = hybrid_config_classes(
        HYBRID_SHAPES, "hybrid_arch.py", HYBRID_CONFIGS, {"m.py": "register_linear_attn_model(x)"}
    )
    first_lead = "try: y = 1 except Exception: return None return config"  # no comment text
    enabled = "t.enabled (where t = config.text_config)"
    text_config = 'getattr(model_config.hf_config, "text_config", None)'
    inner = "def inner(): return 1 return None"
    assert sorted(
        (r.function, r.config_class, r.via, r.config_read, r.condition) for r in rows
    ) == [
        ("a_config", "A2Config", "AConfig", "hf_config", enabled),
        ("a_config", "AConfig", "", "hf_config", enabled),
        # `isinstance((config), ...)` reads the local `config`, bound to hf_config
        ("a_config", "BConfig", "", "hf_config", first_lead),
        ("a_config", "CConfig", "", "hf_config", first_lead),
        ("b_config", "A2Config", "AConfig", text_config, inner),
        ("b_config", "AConfig", "", text_config, inner),
        ("b_config", "BConfig", "", text_config, None),
        # the union keeps b_config's tests of text_config beside a_config's of the config
        ("mambaish_config", "A2Config", "a_config()", "hf_config", enabled),
        ("mambaish_config", "A2Config", "b_config()", text_config, inner),
        ("mambaish_config", "AConfig", "a_config()", "hf_config", enabled),
        ("mambaish_config", "AConfig", "b_config()", text_config, inner),
        ("mambaish_config", "BConfig", "a_config()", "hf_config", first_lead),
        ("mambaish_config", "BConfig", "b_config()", text_config, None),
        ("mambaish_config", "CConfig", "a_config()", "hf_config", first_lead),
    ]
    assert [(w.code, w.subject) for w in warnings] == [
        ("exception-branch", "a_config: AConfig"),
        ("class-not-in-configs", "CConfig"),
        ("exception-branch", "a_config: AConfig"),
        ("run-time-registry", "mambaish_config"),
    ]
    assert warnings[0].message == (
        "a_config returns None for AConfig when model_config.flag and "
        "for i in config.layers: x = i "
        "with ctx(): pass: an exception the class rows below do not carry"  # no comment text
    )


def test_config_method_with_a_triple_quote_in_a_one_line_string_is_kept_whole():
    from apron.extractors.sglang.hybrid_configs import ConfigClass, config_classes

    text = 'class EConfig(P):\n    def f(self):\n        q = \'"""\'\n\n    model_type = "e"\n'
    assert config_classes({"c/e.py": text}) == {"EConfig": ConfigClass("EConfig", ("P",), "e")}


def test_a_config_class_registered_with_transformers_takes_that_model_type():
    """SGLang's Lfm2Config inherits its model_type from transformers' class and registers itself
    under "lfm2" (CONFIG_MAPPING._extra_content), which is how a config.json reaches it."""
    from tests.sglang_miniatures import CONFIG_MODULES, HYBRID_ARCH, HYBRID_ARCH_PATH

    modules = dict(CONFIG_MODULES)
    path = next(p for p, t in modules.items() if "class Lfm2Config" in t)
    modules[path] += (
        "\n\n# registered under the model_type transformers already maps\n"
        'CONFIG_MAPPING._extra_content["lfm2"] = Lfm2Config\n'
    )
    rows, warnings = hybrid_config_classes(HYBRID_ARCH, HYBRID_ARCH_PATH, modules, {}, None)
    lfm2 = {r.function: r.model_type for r in rows if r.config_class == "Lfm2Config"}
    assert lfm2 == {"mamba2_config": "lfm2", "mambaish_config": "lfm2"}
    assert ("inherited-model-type", "Lfm2Config") not in {(w.code, w.subject) for w in warnings}
