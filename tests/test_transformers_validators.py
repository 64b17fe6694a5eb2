"""transformers' validate_* checks, read with the configuration classes
(extractors/transformers) and applied by apron: a config the class refuses is refused, naming
the check, as vLLM (which builds the config with that class) refuses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apron import plan
from apron.errors import ApronInputError
from apron.extractors.transformers.config_classes import Validator, read_module

CORPUS = Path(__file__).resolve().parent / "corpus"

# a miniature of a configuration module's shape (not transformers' text)
MODULE = '''
from ...configuration_utils import PreTrainedConfig


@strict
class TinyConfig(PreTrainedConfig):
    model_type = "tiny"
    hidden_size: int = 64
    num_attention_heads: int = 4

    def validate_architecture(self):
        """Checks."""
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(f"{self.hidden_size} is not a multiple of {self.num_attention_heads}")
        print("a statement of another shape")
'''


def test_a_validate_method_is_read_as_conditions_and_messages():
    (tiny,), warnings = read_module(MODULE, "src/transformers/models/tiny/configuration_tiny.py")
    assert tiny.validators == (
        Validator(
            "validate_architecture",
            ("!=", ("%", ("field", "hidden_size"), ("field", "num_attention_heads")), ("const", 0)),
            "ValueError",
            'f"{self.hidden_size} is not a multiple of {self.num_attention_heads}"',
        ),
    )
    assert [w.code for w in warnings] == ["unread_validator"]  # the print is named, not dropped


def test_a_config_the_class_refuses_is_refused_naming_the_check():
    # Llama-3.1-8B with 24 heads: 4,096 % 24 = 16, so LlamaConfig.validate_architecture raises
    # (vLLM measured the same refusal: conformance/vllm, llama-3.1-8b-heads-24.json)
    config = json.loads((CORPUS / "llama-3.1-8b.json").read_text()) | {"num_attention_heads": 24}
    with pytest.raises(ApronInputError, match=r"LlamaConfig\.validate_architecture"):
        plan(config)


def test_a_config_the_class_accepts_is_planned():
    config = json.loads((CORPUS / "llama-3.1-8b.json").read_text()) | {"num_attention_heads": 16}
    assert plan(config, context=8).prediction.kv_bytes_per_token == 32 * 8 * 256 * 2 * 2
