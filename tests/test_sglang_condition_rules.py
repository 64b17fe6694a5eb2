"""SGLang's config-field conditions as expressions of the one rule language (config_condition)
and their evaluation on SGLang's config objects (apron.conditions.object_holds)."""

from __future__ import annotations

import pytest

from apron.conditions import object_holds
from apron.config import ModelConfig
from apron.extractors.parsing.expressions import config_condition
from apron.extractors.parsing.python_ts import parse_python


def rule(code: str, readers=("getattr", "_hf_attr")):
    """The rule of a condition written as SGLang writes it."""
    (statement,) = parse_python(f"x = ({code})\n", "c.py").named_children
    return config_condition(statement.named_children[0].child_by_field_name("right"), readers)


def test_the_builder_keys_each_read_by_its_config_object():
    assert rule('_hf_attr(config, "index_topk") is not None') == (
        "!=",
        ("hpget", "hf_config.index_topk"),
        None,
    )
    assert rule('getattr(self.hf_text_config, "use_mla", True)') == (
        "hpget",
        "hf_text_config.use_mla",
        True,
    )
    assert rule('not hasattr(self.hf_config, "v")') == ("not", ("has", "hf_config.v"))
    assert rule("is_draft_model") == ("undef", "is_draft_model")
    assert rule('getattr(self.hf_config, "f", 1.5) > 0.5') == (
        ">",
        ("hpget", "hf_config.f", 1.5),
        0.5,
    )


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
    found = rule(f'getattr(self.{config}, "{field}", None) is not None')
    assert object_holds(ModelConfig(VLM, "t"), found).value is expected


def test_a_read_without_default_is_unknown_when_absent_and_code_not_read_is_unknown():
    model = ModelConfig(VLM, "t")
    no_default = rule("self.hf_config.use_mla")
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
        ("hpget", "hf_text_config.kv_lora_rank"),
        None,
    )
