"""Config-field reads and truth-when-absent, once (parsing/config_reads.py)."""

from __future__ import annotations

import pytest

from apron.extractors.parsing.config_reads import config_read, truth_when_absent
from apron.extractors.parsing.python_ts import parse_tree


def _read(code: str, readers=("getattr",)):
    expression = parse_tree(code).named_children[0].named_children[0]
    found = config_read(expression, readers=readers)
    return None if found is None else (found.config, found.field, found.default)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("self.hf_text_config", ("hf_text_config", "", None)),
        ("self.hf_config.kv_lora_rank", ("hf_config", "kv_lora_rank", None)),
        ("( self . hf_config ).kv_lora_rank", ("hf_config", "kv_lora_rank", None)),
        (
            'getattr(hf_text_config, "multi_query", False)',
            ("hf_text_config", "multi_query", "False"),
        ),
        ('getattr(self.hf_config, "n")', ("hf_config", "n", None)),
        (
            'self.hf_text_config.attn_config["kv_n_heads"]',
            ("hf_text_config", "attn_config.kv_n_heads", None),
        ),
        ('getattr(config.text_config, "x", -1)', ("hf_config", "text_config.x", "-1")),
        ('getattr(other, "x", 0)', None),
        ("getattr(self.hf_config, name, 0)", None),
        ("self.model_type", None),
        ('_hf_attr(config, "x")', None),
    ],
)
def test_config_read(code, expected):
    assert _read(code) == expected


def test_a_reader_with_its_own_default():
    assert _read('_hf_attr(config, "x")', readers=("_hf_attr",)) == ("hf_config", "x", "None")


@pytest.mark.parametrize(
    ("check", "default", "expected"),
    [
        ("present", None, False),
        ("absent", None, True),
        ("truthy", None, None),  # no default: the read raises
        ("truthy", "False", False),
        ("truthy", "0", False),
        ("truthy", "0.0", False),
        ("truthy", '""', False),
        ("truthy", "-1", True),
        ("falsy", "None", True),
        ("is not None", "None", False),
        ("is None", "None", True),
        ("is not None", '"x"', True),
        ("truthy", "[]", None),  # not a plain literal
        ("truthy", "DEFAULT", None),
        ("expression", "0", None),
    ],
)
def test_truth_when_absent(check, default, expected):
    assert truth_when_absent(check, default) is expected
