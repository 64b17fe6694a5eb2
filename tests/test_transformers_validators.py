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
            ("!=", ("%", ("self", "hidden_size"), ("self", "num_attention_heads")), 0),
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


# field types: huggingface_hub's @strict checks every dataclass field's value against its
# annotation when the config is built (StrictDataclassFieldValidationError)
TYPED = """
from huggingface_hub.dataclasses import strict
from ...configuration_utils import PreTrainedConfig


@strict
class TypedConfig(PreTrainedConfig):
    model_type = "typed"
    use_tuning: bool = True
    heads: int = 4
    window: int|None = None
    dropout: float | int = 0.0
    names: list[str] | None = None
    hidden_act: str = "silu"
    _private: int = 0


class LooseConfig(TypedConfig):
    model_type = "loose"
    extra: int = 1
"""


def test_annotated_field_types_and_the_strict_decorator_are_read():
    (typed, loose), _ = read_module(TYPED, "src/transformers/models/typed/configuration_typed.py")
    assert typed.strict and not loose.strict
    assert dict(typed.field_types) == {
        "use_tuning": ("type", "bool"),
        "heads": ("type", "int"),
        "window": ("union", ("none",), ("type", "int")),
        "dropout": ("union", ("type", "float"), ("type", "int")),
        "names": ("union", ("generic", "list", ("type", "str")), ("none",)),
        "hidden_act": ("type", "str"),
    }
    assert dict(loose.field_types) == {"extra": ("type", "int")}


def test_field_types_are_the_same_whatever_the_spelling():
    respelled = TYPED.replace("int|None", "None | int").replace("float | int", "(int | float)")
    a, _ = read_module(TYPED, "p.py")
    b, _ = read_module(respelled, "p.py")
    assert [c.field_types for c in a] == [c.field_types for c in b]


@pytest.mark.parametrize(
    ("annotation", "value", "refused"),
    [
        (("type", "bool"), 4, "expected bool, got int (value: 4)"),
        (("type", "bool"), True, ""),
        (("type", "int"), True, "expected int, got bool (value: True)"),
        (("type", "int"), 128.5, "expected int, got float (value: 128.5)"),
        (("type", "int"), 7, ""),
        (("type", "float"), 1, "expected float, got int (value: 1)"),
        (("union", ("none",), ("type", "int")), None, ""),
        (("union", ("none",), ("type", "int")), "8", "doesn't match any type"),
        (("union", ("type", "float"), ("type", "int")), 1, ""),
        (("generic", "list", ("type", "str")), [1], ""),  # containers: not checked
        (("unknown", "SomeAlias"), 1, ""),
    ],
)
def test_a_value_is_checked_against_its_field_type(annotation, value, refused):
    from apron.normalize import type_error

    assert (
        (refused in type_error("f", value, annotation))
        if refused
        else not type_error("f", value, annotation)
    )


def test_llama4_scout_as_published_is_refused_naming_the_field_and_type():
    """transformers' Llama4TextConfig (@strict) declares attn_temperature_tuning: bool; the
    published Scout config has 4, and vLLM and SGLang both refuse it (conformance records)."""
    path = (
        Path(__file__).resolve().parent.parent
        / "conformance/vllm/0231dd5467c61dca76f66269b6298a43772b3519/inputs"
        / "llama-4-scout-17b-16e.json"
    )
    with pytest.raises(ApronInputError, match=r"attn_temperature_tuning.*expected bool, got int"):
        plan(str(path))


NEMOTRON_H = (
    Path(__file__).resolve().parent.parent
    / "conformance/vllm/0231dd5467c61dca76f66269b6298a43772b3519/inputs/nemotron-h-8b-base-8k.json"
)

# a miniature of a class that maps a pattern string through a helper (not transformers' text)
PATTERN = '''
@strict
class PatternConfig(PreTrainedConfig):
    model_type = "pattern"
    kinds: list[str] | None = None

    def __post_init__(self, **kwargs):
        if "kind_pattern" in kwargs:
            pattern = kwargs.pop("kind_pattern")
            self.kinds = self._to_list(pattern)

    @staticmethod
    def _to_list(pattern: str) -> list:
        """Docstring."""
        mapping = {"M": "mamba", "*": "attention"}
        return [mapping[char] for char in pattern]
'''


def test_a_helper_method_is_read_inline_and_a_lookup_is_an_expression():
    (cls,), _ = read_module(PATTERN, "p.py")
    (derivation,) = cls.derivations
    assert derivation.condition == ("has", "kind_pattern")
    # the dict display's entries in a stable order, whatever order the source writes them in
    assert derivation.expression == (
        "map",
        "$char",
        ("hpget", "kind_pattern"),
        (
            "item",
            ("dict", ("str", "*"), ("str", "attention"), ("str", "M"), ("str", "mamba")),
            "$char",
        ),
    )


def test_nemotron_h_with_a_pattern_character_the_class_does_not_map_is_refused():
    """transformers' NemotronHConfig maps hybrid_override_pattern through {M, E, *}; the
    published 8B config has '-' (MLP) layers, so building it raises KeyError '-', as vLLM
    measured (conformance/vllm: KeyError: '-'). SGLang builds nemotron_h with its own
    NemotronHConfig, which maps '-', and serves it: only the vLLM column refuses."""
    result = plan(str(NEMOTRON_H))
    vllm, sglang = (next(v for v in result.engines if v.engine == e) for e in ("vllm", "sglang"))
    assert vllm.kv_bytes_per_token is None
    assert any(
        n.startswith("vLLM cannot load the config") and "raises KeyError: '-'" in n
        for n in vllm.notes
    )
    assert sglang.kv_bytes_per_token is not None
