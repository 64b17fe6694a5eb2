"""The vLLM fact mamba_ssm_dtype_defaults: which architectures' MODELS_CONFIG_MAP hooks set
--mamba-ssm-cache-dtype when it is 'auto', the config field they read and their literal default."""

from __future__ import annotations

import os
import subprocess

import pytest

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.vllm.model_config_defaults import mamba_ssm_dtype_defaults
from tests.vllm_miniatures import MODELS_CONFIG_PATH, MODELS_CONFIG_V1

PIN = "9aaf83ef502fc37bc647f6e474314d48ba36cd1c"


def rows(text: str = MODELS_CONFIG_V1):
    found, _warnings = mamba_ssm_dtype_defaults(text, MODELS_CONFIG_PATH)
    return {r.architecture: r for r in found}


def warnings_of(text: str):
    return mamba_ssm_dtype_defaults(text, MODELS_CONFIG_PATH)[1]


# vLLM after the pin annotates the constant: `DEFAULT_MAMBA_SSM_CACHE_DTYPE: "MambaDType" = ...`
ANNOTATED_CLASS_CONSTANT = MODELS_CONFIG_V1.replace(
    '    DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"',
    '    DEFAULT_MAMBA_SSM_CACHE_DTYPE: "MambaDType" = "float32"',
)
# ... and the same constant at module level, read by its bare name
MODULE_CONSTANT = (
    MODELS_CONFIG_V1.replace('    DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"\n', "    pass\n")
    .replace("cls.DEFAULT_MAMBA_SSM_CACHE_DTYPE", "DEFAULT_MAMBA_SSM_CACHE_DTYPE")
    .replace(
        "class VerifyAndUpdateConfig:",
        'DEFAULT_MAMBA_SSM_CACHE_DTYPE: "MambaDType" = "float32"\n\n\nclass VerifyAndUpdateConfig:',
    )
)


@pytest.mark.parametrize("text", [ANNOTATED_CLASS_CONSTANT, MODULE_CONSTANT])
def test_an_annotated_constant_is_an_assignment(text):
    assert text != MODELS_CONFIG_V1
    assert rows(text)["HybridForCausalLM"].default == "float32"
    assert rows(text)["HybridVisionModel"].default == "float32"
    assert warnings_of(text) == []


def test_a_default_of_a_shape_it_cannot_read_is_unknown_with_a_warning():
    text = MODELS_CONFIG_V1.replace("cls.DEFAULT_MAMBA_SSM_CACHE_DTYPE", "pick_default()")
    assert rows(text)["HybridForCausalLM"].default == "unknown"  # never "" (that would be auto)
    found = warnings_of(text)
    assert [(w.code, w.subject) for w in found] == [
        ("unread-default", "HybridForCausalLM"),
        ("unread-default", "HybridVisionModel"),
    ]
    assert "`pick_default()`" in found[0].message and found[0].path == MODELS_CONFIG_PATH


def test_an_unbound_constant_is_unknown_not_auto():
    text = MODELS_CONFIG_V1.replace('    DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"\n', "    pass\n")
    assert rows(text)["HybridForCausalLM"].default == "unknown"
    assert warnings_of(text)[0].code == "unread-default"


def test_a_config_object_over_several_lines_with_comments_is_one_line_of_code():
    text = MODELS_CONFIG_V1.replace(
        "hf_config=vllm_config.model_config.hf_config,",
        "hf_config=(vllm_config.model_config  # the model's\n            .hf_config),",
    )
    # the keyword's value, brackets looked through, its prefix dropped as for one line
    assert rows(text)["HybridForCausalLM"].config_object == "hf_config"


def test_class_constant_default_and_config_object():
    row = rows()["HybridForCausalLM"]
    assert (row.config_class, row.reads, row.config_object, row.default) == (
        "HybridSsmConfig",
        "mamba_ssm_cache_dtype",
        "hf_config",
        "float32",
    )
    assert row.symbol == "HybridSsmConfig.set_ssm_dtype"


def test_delegating_hook_keeps_its_own_config_object():
    row = rows()["HybridVisionModel"]
    assert row.config_class == "WrappedHybridConfig"
    assert row.config_object == "hf_config.text_config" and row.default == "float32"


def test_field_without_default_keeps_auto():
    row = rows()["DeltaForConditionalGeneration"]
    assert (row.reads, row.config_object, row.default) == ("mamba_ssm_dtype", "hf_text_config", "")


def test_hook_that_never_sets_the_dtype_has_no_row():
    assert "PlainModel" not in rows()
    assert list(rows()) == sorted(rows())


def test_a_string_literal_default_is_read_directly():
    text = MODELS_CONFIG_V1.replace("cls.DEFAULT_MAMBA_SSM_CACHE_DTYPE", '"bfloat16"')
    assert rows(text)["HybridForCausalLM"].default == "bfloat16"


def test_map_without_any_setter_is_empty_not_an_error():
    text = MODELS_CONFIG_V1.replace("cache_config.mamba_ssm_cache_dtype = ", "chosen_value = ")
    text = text.replace("vllm_config.cache_config.mamba_ssm_cache_dtype = wanted", "pass")
    assert rows(text) == {}


def test_missing_map_is_an_anchor_error():
    text = MODELS_CONFIG_V1.replace("MODELS_CONFIG_MAP:", "RENAMED_MAP:")
    with pytest.raises(AnchorError) as err:
        mamba_ssm_dtype_defaults(text, MODELS_CONFIG_PATH)
    assert err.value.anchor == "MODELS_CONFIG_MAP"
    assert MODELS_CONFIG_PATH in err.value.paths


def test_map_that_is_not_a_dict_literal_is_an_anchor_error():
    text = MODELS_CONFIG_V1 + "\nMODELS_CONFIG_MAP = dict(PlainModel=PlainHookConfig)\n"
    with pytest.raises(AnchorError, match="not a dict literal"):
        mamba_ssm_dtype_defaults(text, MODELS_CONFIG_PATH)


def test_malformed_python_is_a_parse_error():
    with pytest.raises(ParseError):
        mamba_ssm_dtype_defaults("class Broken(:\n", MODELS_CONFIG_PATH)


@pytest.mark.real_mirror
def test_real_pin_nemotron_h_and_qwen35():
    mirror = os.environ.get("APRON_MIRROR_VLLM")
    if not mirror:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    text = subprocess.run(
        ["git", "-C", mirror, "show", f"{PIN}:{MODELS_CONFIG_PATH}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = rows(text)
    nemotron = found["NemotronHForCausalLM"]
    assert (nemotron.reads, nemotron.config_object, nemotron.default) == (
        "mamba_ssm_cache_dtype",
        "hf_config",
        "float32",
    )
    assert found["NemotronH_Nano_VL_V2"].config_object == "hf_config.text_config"
    qwen = found["Qwen3_5ForConditionalGeneration"]
    assert (qwen.reads, qwen.config_object, qwen.default) == (
        "mamba_ssm_dtype",
        "hf_text_config",
        "",
    )
    assert "GptOssForCausalLM" not in found


@pytest.mark.real_mirror
def test_real_pin_under_the_annotated_constant_upstream_wrote_later():
    """vLLM after the pin writes `DEFAULT_MAMBA_SSM_CACHE_DTYPE: "MambaDType" = "float32"`:
    the same edit of the real file at the pin keeps NemotronH's default."""
    mirror = os.environ.get("APRON_MIRROR_VLLM")
    if not mirror:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    text = subprocess.run(
        ["git", "-C", mirror, "show", f"{PIN}:{MODELS_CONFIG_PATH}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    edited = text.replace(
        'DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"',
        'DEFAULT_MAMBA_SSM_CACHE_DTYPE: "MambaDType" = "float32"',
    )
    assert edited != text
    assert rows(edited) == rows(text)
    assert rows(edited)["NemotronHForCausalLM"].default == "float32"
    assert warnings_of(edited) == warnings_of(text) == []
