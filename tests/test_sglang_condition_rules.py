"""SGLang's config-field conditions as expressions of the one rule language (config_check) and
their evaluation on SGLang's config objects (apron.conditions.object_holds)."""

from __future__ import annotations

import pytest

from apron.conditions import object_holds
from apron.config import ModelConfig
from apron.extractors.parsing.expressions import config_check


def test_the_builder_keys_each_read_by_its_config_object():
    assert config_check("hf_config", "index_topk", "is not None", "None", "c") == (
        "!=",
        ("hpget", "hf_config.index_topk", None),
        None,
    )
    assert config_check("hf_text_config", "use_mla", "truthy", "True", "c") == (
        "hpget",
        "hf_text_config.use_mla",
        True,
    )
    assert config_check("hf_config", "v", "absent", "", "c") == ("not", ("has", "hf_config.v"))
    assert config_check("", "", "expression", "", "is_draft_model") == ("undef", "is_draft_model")


# A VLM config: hf_config is the top level, hf_text_config its text_config.
VLM = {"architectures": ["X"], "text_config": {"index_topk": 64}}


@pytest.mark.parametrize(
    ("config", "field", "expected"),
    [
        ("hf_text_config", "index_topk", True),  # the text config holds it
        ("hf_config", "index_topk", False),  # the top level does not: getattr default None
    ],
)
def test_hf_config_and_hf_text_config_stay_apart(config, field, expected):
    rule = config_check(config, field, "is not None", "None", "c")
    assert object_holds(ModelConfig(VLM, "t"), rule).value is expected


def test_a_read_without_default_is_unknown_when_absent_and_code_not_read_is_unknown():
    model = ModelConfig(VLM, "t")
    no_default = config_check("hf_config", "use_mla", "truthy", None, "c")
    assert object_holds(model, no_default).value is None
    assert object_holds(model, ("undef", "is_draft_model")).problem == (
        "condition not evaluated: code the reader does not read (is_draft_model)"
    )
    assert object_holds(model, ("hpget", "self.x", None)).value is None  # no such object


def test_the_generated_mla_conditions_carry_their_rules():
    from apron.generated.sglang import mla_conditions

    rules = {r.architecture: r.rule for r in mla_conditions.ROWS}
    assert rules["DeepseekVL2ForCausalLM"] == ("hpget", "hf_text_config.use_mla", True)
    assert rules["PixtralForConditionalGeneration"] == (
        "!=",
        ("hpget", "hf_text_config.kv_lora_rank", None),
        None,
    )
