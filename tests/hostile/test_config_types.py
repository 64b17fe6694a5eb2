"""Issue 35, config.json types: a count that is not an integer is refused as transformers'
strict configuration classes refuse it (pins/transformers.toml: 5.5.3 raises
StrictDataclassFieldValidationError "expected int, got bool"), never read as absent or replaced
by a derived value; layer_types of the wrong length is refused as validate_layer_type refuses
it; rope factors and original lengths that would give a context of 0 or less are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.apron_run import answered, apron, refused

SAMPLES = Path(__file__).resolve().parents[2] / "apron" / "samples"


def llama() -> dict:
    return json.loads((SAMPLES / "llama-3.1-8b.json").read_text())


def write(tmp_path, config: dict | str) -> Path:
    path = tmp_path / "config.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


VALUES = [
    (True, "is true, not an integer"),
    ("32", "is a string ('32'), not an integer"),
    (128.5, "is a float (128.5), not an integer"),
    (32.0, "is a float (32.0), not an integer"),
    ("NaN", "is NaN, not an integer"),
    ("1e308", "is a float (1e+308), not an integer"),
    ("-Infinity", "is -Infinity, not an integer"),
    ([32], "is a list ([32]), not an integer"),
    ({"n": 1}, "is an object ({'n': 1}), not an integer"),
]
FIELDS = ["num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim"]
FIELDS += ["hidden_size", "max_position_embeddings"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize(("value", "words"), VALUES)
def test_a_count_that_is_not_an_integer_is_refused(tmp_path, field, value, words):
    text = json.dumps({**llama(), field: "@"})
    literal = value if value in ("NaN", "1e308", "-Infinity") else json.dumps(value)
    result = apron("plan", write(tmp_path, text.replace('"@"', literal)))
    refused(result, f"{field} {words}", "transformers' configuration classes declare it int")


def test_a_text_config_count_is_named_as_spelled(tmp_path):
    gemma = json.loads((SAMPLES / "gemma-3-27b.json").read_text())
    gemma["text_config"]["num_hidden_layers"] = True
    refused(apron("plan", write(tmp_path, gemma)), "num_hidden_layers is true")


def test_head_dim_is_not_replaced_by_hidden_over_heads(tmp_path):
    # the issue: head_dim "128" read as absent, so hidden_size / heads stood in for it
    refused(apron("plan", write(tmp_path, {**llama(), "head_dim": "128"})), "head_dim is a string")


def test_null_stays_absent(tmp_path):
    # head_dim null: the configuration class derives it (4096 / 32 = 128), as before
    data = json.loads(
        answered(
            apron("plan", write(tmp_path, {**llama(), "head_dim": None}), "-c", "8192", "--json")
        )
    )
    assert data["prediction"]["kv_bytes_per_token"] == 131_072


def test_layer_types_of_the_wrong_length_is_refused(tmp_path):
    gemma = json.loads((SAMPLES / "gemma-3-27b.json").read_text())
    gemma["text_config"]["layer_types"] = ["sliding_attention"] * 5 + ["full_attention"]
    refused(
        apron("plan", write(tmp_path, gemma)),
        "layer_types has 6 entries but num_hidden_layers is 62",
        "validate_layer_type",
    )


@pytest.mark.parametrize(
    ("factor", "words"),
    [
        ("false", "rope scaling factor is false"),
        ("true", "rope scaling factor is true"),
        ('"4"', "rope scaling factor is a string ('4')"),
        ("[4]", "rope scaling factor is a list"),
        ("NaN", "rope scaling factor is NaN"),
        ("0", "rope scaling factor is 0"),
        ("-2", "rope scaling factor is -2"),
        ("1e-12", "makes the context 8,192 x 1e-12 = 0 tokens"),
    ],
)
def test_rope_factors_that_are_no_factor(tmp_path, factor, words):
    config = {**llama(), "rope_scaling": {"rope_type": "yarn", "factor": "@",
              "original_max_position_embeddings": 8192}}  # fmt: skip
    text = json.dumps(config).replace('"@"', factor)
    refused(apron("plan", write(tmp_path, text)), words)


def test_a_null_factor_is_one_as_vllm_falls_back_to_it(tmp_path):
    config = {**llama(), "rope_scaling": {"rope_type": "yarn", "factor": None,
              "original_max_position_embeddings": 8192}}  # fmt: skip
    data = json.loads(answered(apron("plan", write(tmp_path, config), "--json")))
    assert data["request"]["max_model_len"] == 8192


@pytest.mark.parametrize("original", [0, -32_768, 2**31, 8192.0, "8192"])
def test_yarn_original_lengths_that_are_no_context(tmp_path, original):
    config = {**llama(), "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
              "original_max_position_embeddings": original}}  # fmt: skip
    refused(apron("plan", write(tmp_path, config)), "yarn original_max_position_embeddings")


@pytest.mark.parametrize("original", [0, -4096, True])
def test_longrope_original_lengths_that_are_no_context(tmp_path, original):
    config = {**llama(), "original_max_position_embeddings": original,
              "rope_scaling": {"rope_type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}}  # fmt: skip
    refused(apron("plan", write(tmp_path, config)), "original_max_position_embeddings")


def test_a_huge_factor_is_refused_in_floats_without_overflow(tmp_path):
    config = {**llama(), "rope_scaling": {"rope_type": "dynamic", "factor": 1e308}}
    line = refused(apron("plan", write(tmp_path, config)), "the context over 1e308 tokens")
    assert "inf" not in line and "apron reads contexts up to 2,147,483,647" in line


def test_a_lone_surrogate_in_a_string_is_written_as_an_escape(tmp_path):
    # "\ud800" is valid JSON but no Unicode text: --json wrote it through pydantic (exit 70)
    text = json.dumps({**llama(), "architectures": ["@"]}).replace('"@"', '"\\ud800"')
    data = json.loads(answered(apron("plan", write(tmp_path, text), "-c", "8192", "--json")))
    assert data["architecture"] == "\ud800"
    out = answered(apron("plan", write(tmp_path, text), "-c", "8192"))
    assert "\\ud800" in out
