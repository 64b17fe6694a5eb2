"""SGLang attention chain: MLA architectures, their conditions, explicit MHA branches."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError, ParseError
from apron.extractors.runner.base import extract_engine
from apron.extractors.sglang.attention_chain import attention_chain
from apron.extractors.snapshot import MemorySnapshot
from tests.sglang_miniatures import (
    MODEL_CONFIG,
    MODEL_CONFIG_OLD,
    MODEL_CONFIG_PATH,
    full_tree_2026,
    models_tree,
)

PATH = MODEL_CONFIG_PATH


def test_mla_architectures_and_branches():
    chain = attention_chain(MODEL_CONFIG, PATH)
    assert {(r.architecture, r.branch, r.conditional) for r in chain.mla} == {
        ("DeepseekV2ForCausalLM", 1, False),
        ("DeepseekV3ForCausalLM", 1, False),
        ("DeepseekV3ForCausalLMNextN", 1, False),
        ("PixtralForConditionalGeneration", 1, True),
        ("MiniCPM3ForCausalLM", 4, False),
        ("DeepseekVL2ForCausalLM", 5, True),
    }
    assert {r.symbol for r in chain.mla} == {"ModelConfig._derive_model_shapes"}
    assert chain.warnings == []


def _truth_when_absent(rule):
    """The rule's truth on a config without the field it tests (None: unknown), as apron
    evaluates it (apron.conditions.object_holds)."""
    from apron.conditions import object_holds
    from apron.config import ModelConfig

    return object_holds(ModelConfig({"architectures": ["X"]}, "x"), rule).value


def test_conditions_are_rules():
    chain = attention_chain(MODEL_CONFIG, PATH)
    got = {(c.architecture, c.rule) for c in chain.conditions}
    assert got == {
        (
            "PixtralForConditionalGeneration",
            ("!=", ("hpget", "hf_text_config.kv_lora_rank"), None),
        ),
        ("DeepseekVL2ForCausalLM", ("hpget", "hf_text_config.use_mla", True)),
    }
    pixtral = next(c for c in chain.conditions if c.architecture.startswith("Pixtral"))
    assert pixtral.expression == 'getattr(self.hf_text_config, "kv_lora_rank", None) is not None'
    assert {c.architecture: _truth_when_absent(c.rule) for c in chain.conditions} == {
        "PixtralForConditionalGeneration": False,  # getattr(..., None) is not None
        "DeepseekVL2ForCausalLM": True,  # getattr(..., True)
    }
    assert pixtral.label() == (
        "PixtralForConditionalGeneration: "
        'getattr(self.hf_text_config, "kv_lora_rank", None) is not None'
    )


@pytest.mark.parametrize(
    ("condition", "rule", "when_absent"),
    [
        (
            'not getattr(self.hf_text_config, "use_mla", True)',
            ("not", ("hpget", "hf_text_config.use_mla", True)),
            False,
        ),
        (
            'not getattr(self.hf_text_config, "use_mla", 0)',
            ("not", ("hpget", "hf_text_config.use_mla", 0)),
            True,
        ),
        ('hasattr(self.hf_text_config, "use_mla")', ("has", "hf_text_config.use_mla"), False),
        # no default: the read would raise
        ("self.hf_text_config.use_mla", ("hp", "hf_text_config.use_mla"), None),
        # a default that is not a literal, a method of ModelConfig: not read
        (
            'getattr(self.hf_text_config, "use_mla", DEFAULT)',
            ("undef", 'getattr(self.hf_text_config, "use_mla", DEFAULT)'),
            None,
        ),
        ("self.flag_on()", ("undef", "self.flag_on()"), None),
    ],
)
def test_condition_rules_and_their_truth_when_absent(condition, rule, when_absent):
    text = MODEL_CONFIG.replace(
        'getattr(\n            self.hf_text_config, "use_mla", True\n        )', condition
    )
    assert text != MODEL_CONFIG
    (cond,) = [
        c for c in attention_chain(text, PATH).conditions if c.architecture.startswith("Deepseek")
    ]
    assert (cond.rule, _truth_when_absent(cond.rule)) == (rule, when_absent)


def test_explicit_mha_branches_keep_mla_reads():
    chain = attention_chain(MODEL_CONFIG, PATH)
    rows = {r.architecture: r for r in chain.explicit_mha}
    assert set(rows) == {
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForCausalLMNextN",
        "Glm4MoeForCausalLMNextN",
    }
    assert rows["DeepseekV4ForCausalLM"].mla_fields_read == (
        "_init_mla_scaling()",
        "compress_ratios",
        "qk_rope_head_dim",
    )
    assert rows["Glm4MoeForCausalLMNextN"].mla_fields_read == ()
    # the nested `if "MistralForCausalLM"` inside the else branch is not an explicit branch
    assert "MistralForCausalLM" not in rows


def test_older_layout_chain_in_init():
    chain = attention_chain(MODEL_CONFIG_OLD, PATH)
    assert {r.architecture for r in chain.mla} == {
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "MiniCPM3ForCausalLM",
    }
    assert {r.symbol for r in chain.mla} == {"ModelConfig.__init__"}


CHAIN = """
class ModelConfig:
    def f(self):
        if {test}:
            self.attention_arch = AttentionArch.MLA
        elif "B" in self.hf_config.architectures:
            {second}
        else:
            self.attention_arch = AttentionArch.MHA
"""


@pytest.mark.parametrize(
    ("test", "second", "code", "subject"),
    [
        (
            '"A" in self.hf_config.architectures',
            "self.attention_arch = AttentionArch.SWA",
            "unknown-attention-arch",
            "B",
        ),
        (
            '"A" in self.hf_config.architectures',
            "if x:\n                self.attention_arch = AttentionArch.MLA",
            "conditional-assignment",
            "B",
        ),
        (  # nested deeper, in a block the statement walk enters
            '"A" in self.hf_config.architectures',
            "for x in y:\n                with z:\n                    self.attention_arch = 1",
            "conditional-assignment",
            "B",
        ),
        (
            '"A" in self.hf_config.architectures and self.flag(3)',
            "pass",
            "unstructured-condition",
            "A",
        ),
        (
            '"A" in self.hf_config.architectures or "A" in self.hf_config.architectures',
            "pass",
            "shadowed-branch",
            "A",
        ),
    ],
)
def test_soft_problems_are_warnings(test, second, code, subject):
    chain = attention_chain(CHAIN.format(test=test, second=second), PATH)
    assert [(w.code, w.subject) for w in chain.warnings] == [(code, subject)]
    assert [r.architecture for r in chain.mla] == ["A"]


def test_branch_without_readable_architecture_is_a_warning():
    text = CHAIN.format(test='"A" in self.hf_config.architectures', second="pass").replace(
        'elif "B" in self.hf_config.architectures:\n            pass',
        "elif self.is_special():\n            self.attention_arch = AttentionArch.MLA",
    )
    chain = attention_chain(text, PATH)
    assert [w.code for w in chain.warnings] == ["unparsed-branch"]


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("class Other:\n    pass\n", "ModelConfig: self.attention_arch if/elif chain"),
        (
            "class ModelConfig:\n    def f(self):\n        self.attention_arch = 1\n",
            "ModelConfig: self.attention_arch if/elif chain",
        ),
        (
            'class ModelConfig:\n    def f(self):\n        if "A" in self.hf_config.architectures:\n'
            "            self.attention_arch = AttentionArch.MHA\n",
            "ModelConfig.f: AttentionArch.MLA branch",
        ),
    ],
)
def test_missing_or_empty_anchor_is_an_error(text, anchor):
    with pytest.raises(AnchorError) as err:
        attention_chain(text, PATH)
    assert err.value.anchor == anchor and err.value.paths == (PATH,)


def test_engine_facts_and_missing_file():
    facts = extract_engine(
        ENGINES["sglang"],
        MemorySnapshot(full_tree_2026(), engine="sglang"),
        commit_date="2026-01-01",
        only={"registry_rows", "mla_architectures", "mla_conditions", "explicit_mha_architectures"},
    )
    assert len(facts.fact("mla_architectures").records) == 6
    # chain names that no module registers are flagged, not dropped
    flagged = {w.subject for w in facts.warnings if w.code == "not-registered"}
    assert flagged == {
        "PixtralForConditionalGeneration",
        "MiniCPM3ForCausalLM",
        "DeepseekVL2ForCausalLM",
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForCausalLMNextN",
        "Glm4MoeForCausalLMNextN",
    }
    with pytest.raises(MissingPathError) as err:
        extract_engine(
            ENGINES["sglang"],
            MemorySnapshot(models_tree(), engine="sglang"),
            commit_date="2026-01-01",
            only={"mla_architectures"},
        )
    assert PATH in str(err.value) and "engine: sglang" in str(err.value)


def test_malformed_model_config_is_a_parse_error():
    with pytest.raises(ParseError):
        attention_chain("class ModelConfig(:\n", PATH)


def test_condition_record_refuses_a_rule_outside_the_language():
    from pydantic import ValidationError

    from apron.extractors.sglang.records import SglangMlaCondition

    (row,) = [
        c for c in attention_chain(MODEL_CONFIG, PATH).conditions if "use_mla" in c.expression
    ]
    with pytest.raises(ValidationError, match="bigger"):
        SglangMlaCondition(**{**row.model_dump(), "rule": ("bigger", "hf_config.x", 1)})


# Shapes the tree-sitter reading must see as the libcst reader did: parentheses around a test
# and a value, the default forms of a getattr, a field read through parentheses (not counted),
# a nested assignment, a try block entered (a try/except* block is not).
SHAPES_CHAIN = """
class ModelConfig:
    def __init__(self):
        x = 1
    def _derive(self):
        try:
            if self.is_x:
                pass
            elif ("A" in self.hf_config.architectures) and (getattr(self.hf_text_config, "kv_lora_rank", None) is not None):
                self.attention_arch = (AttentionArch.MLA)
            elif "B" in self.hf_config.architectures and not getattr(self.hf_config, "use_mha", False) and hasattr(hf_config, "q_lora_rank"):
                self.attention_arch = AttentionArch.MLA
            elif "C" in self.hf_config.architectures and self.hf_text_config.flag and getattr(hf_text_config, "n", 0) and getattr(hf_config, "s", "x") and getattr(hf_config, "f", 1.5) and getattr(hf_config, "neg", -1) and getattr(hf_config, "j", 2j):
                self.attention_arch = AttentionArch.MLA
            elif "D" in self.hf_config.architectures or "E" in self.hf_config.architectures:
                self.attention_arch = AttentionArch.MHA
                self.x = self.hf_config.kv_lora_rank + getattr(self.hf_text_config, "qk_rope_head_dim", 0)
                self._init_mla_scaling()
                y = (self.hf_config).q_lora_rank
            elif "F" in self.hf_config.architectures:
                for i in x:
                    self.attention_arch = AttentionArch.MLA
            elif "G" in self.hf_config.architectures:
                self.attention_arch = AttentionArch.SWA
            elif "A" in self.hf_config.architectures:
                self.attention_arch = AttentionArch.MHA
            elif some_call():
                self.attention_arch = AttentionArch.MLA
            elif "H" in self.hf_config.architectures and foo(1):
                self.attention_arch = compute()
            else:
                self.attention_arch = AttentionArch.MLA
        except Exception:
            pass
"""


def test_the_chain_reads_the_shapes_the_libcst_reader_read():
    chain = attention_chain(SHAPES_CHAIN, PATH)
    assert [(r.architecture, r.branch, r.conditional) for r in chain.mla] == [
        ("A", 2, True),
        ("B", 3, True),
        ("C", 4, True),
    ]
    assert [(c.architecture, c.rule, _truth_when_absent(c.rule)) for c in chain.conditions] == [
        ("A", ("!=", ("hpget", "hf_text_config.kv_lora_rank"), None), False),
        ("B", ("not", ("hpget", "hf_config.use_mha", False)), True),
        ("B", ("has", "hf_config.q_lora_rank"), False),
        ("C", ("hp", "hf_text_config.flag"), None),
        ("C", ("hpget", "hf_text_config.n", 0), False),
        ("C", ("hpget", "hf_config.s", ("str", "x")), True),
        ("C", ("hpget", "hf_config.f", 1.5), True),
        ("C", ("hpget", "hf_config.neg", ("neg", 1)), True),  # a negative number
        ("C", ("undef", 'getattr(hf_config, "j", 2j)'), None),  # an imaginary default
    ]
    assert [(r.architecture, r.mla_fields_read) for r in chain.explicit_mha] == [
        # `(self.hf_config).q_lora_rank` is a read of q_lora_rank: brackets hide nothing
        ("D", ("_init_mla_scaling()", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim")),
        ("E", ("_init_mla_scaling()", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim")),
    ]
    assert [(w.code, w.subject) for w in chain.warnings] == [
        ("unstructured-condition", "C"),  # the imaginary default is not read
        ("conditional-assignment", "F"),
        ("unknown-attention-arch", "G"),
        ("shadowed-branch", "A"),
        ("unparsed-branch", "some_call()"),
        ("unknown-attention-arch", "H"),
        ("else-not-mha", "else"),
    ]
    with pytest.raises(AnchorError, match="no if/elif chain"):
        attention_chain(SHAPES_CHAIN.replace("except Exception", "except* Exception"), PATH)
