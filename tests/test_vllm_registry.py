"""vLLM registry rows from a miniature registry.py."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.vllm.registry_rows import registry_rows, task_group
from tests.vllm_miniatures import REGISTRY_PATH, REGISTRY_V1, REGISTRY_V2


def rows_by_arch(text):
    rows, warnings = registry_rows(text, REGISTRY_PATH)
    return {r.architecture: r for r in rows}, warnings


@pytest.mark.parametrize(
    ("dict_name", "group"),
    [
        ("_TEXT_GENERATION_MODELS", "text-generation"),
        ("_SEQUENCE_CLASSIFICATION_MODELS", "sequence-classification"),
        ("_TRANSFORMERS_BACKEND_MODELS", "transformers-backend"),
        ("_LATE_INTERACTION_MODELS", "late-interaction"),
    ],
)
def test_task_group_from_dict_name(dict_name, group):
    assert task_group(dict_name) == group


def test_rows_with_sections_modules_and_dotted_modules():
    rows, _ = rows_by_arch(REGISTRY_V1)
    whisper = rows["WhisperForConditionalGeneration"]
    assert (whisper.task_group, whisper.module, whisper.class_name, whisper.section) == (
        "text-generation",
        "whisper",
        "WhisperForConditionalGeneration",
        "Encoder-decoder",
    )
    assert rows["DeepseekV4ForCausalLM"].module == "vllm.models.deepseek_v4"
    assert rows["DeepseekV3ForCausalLM"].section == "Decoder-only"  # a plain comment is no section
    assert rows["TransformersForCausalLM"].section == ""
    assert "MotifForCausalLM" not in rows  # not merged into _VLLM_MODELS


def test_later_dict_wins_and_the_shadowed_row_is_a_warning():
    rows, warnings = rows_by_arch(REGISTRY_V1)
    llama = rows["LlamaForCausalLM"]
    # the class-filter comprehension copies every LlamaForCausalLM row into _EMBEDDING_MODELS
    assert (llama.task_group, llama.dict_name, llama.also_in) == (
        "embedding",
        "_EMBEDDING_MODELS",
        ("text-generation",),
    )
    assert rows["AquilaForCausalLM"].task_group == "embedding"
    assert rows["DeepseekV3ForCausalLM"].task_group == "text-generation"
    shadowed = {w.subject for w in warnings if w.code == "shadowed"}
    assert shadowed == {"LlamaForCausalLM", "AquilaForCausalLM"}


def test_second_commit_adds_removes_and_moves_rows():
    old, _ = rows_by_arch(REGISTRY_V1)
    new, _ = rows_by_arch(REGISTRY_V2)
    assert set(new) - set(old) == {"OpenVLAForActionPrediction"}
    assert set(old) - set(new) == {"LlavaForConditionalGeneration"}
    assert (old["Qwen2Model"].task_group, new["Qwen2Model"].task_group) == (
        "embedding",
        "multimodal",
    )


def test_duplicate_key_in_one_dict_is_a_warning_and_the_later_row_wins():
    text = REGISTRY_V1.replace(
        '    "Qwen2Model": ("qwen2", "Qwen2ForCausalLM"),\n',
        '    "Qwen2Model": ("qwen2", "Qwen2ForCausalLM"),\n    "BertModel": ("bert2", "Bert2"),\n',
    )
    rows, warnings = rows_by_arch(text)
    assert rows["BertModel"].module == "bert2"
    assert any(w.code == "duplicate-key" and w.subject == "BertModel" for w in warnings)


def test_a_non_literal_row_is_a_warning_not_a_silent_drop():
    text = REGISTRY_V1.replace(
        '"BertModel": ("bert", "BertEmbeddingModel"),', '"BertModel": make_row("bert"),'
    )
    rows, warnings = rows_by_arch(text)
    assert "BertModel" not in rows
    assert any(w.code == "unparsed-row" for w in warnings)


def test_missing_merged_dict_is_an_error():
    with pytest.raises(AnchorError) as info:
        registry_rows(REGISTRY_V1.replace("_VLLM_MODELS", "_ALL_MODELS"), REGISTRY_PATH)
    assert info.value.anchor == "_VLLM_MODELS"


def test_merged_dict_without_spreads_is_an_error():
    text = REGISTRY_V1[: REGISTRY_V1.index("_VLLM_MODELS = {")] + "_VLLM_MODELS = {}\n"
    with pytest.raises(AnchorError, match="spreads no architecture dicts"):
        registry_rows(text, REGISTRY_PATH)


def test_syntax_error_is_a_parse_error_with_line():
    with pytest.raises(ParseError, match=r"does not parse as Python \(line"):
        registry_rows(REGISTRY_V1.replace('"BertModel": (', '"BertModel": ((', 1), REGISTRY_PATH)
