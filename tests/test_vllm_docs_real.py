"""vLLM docs tables against a real checkout (APRON_MIRROR_VLLM); skipped when it is not set."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.git import GitSource
from apron.extractors.pins import load_pin
from apron.extractors.runner.base import extract_engine
from tests.conftest import REPO_ROOT, mirror

pytestmark = pytest.mark.real_mirror


@pytest.fixture
def facts():
    path = mirror("vllm")
    if path is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    pin = load_pin(REPO_ROOT / "pins", "vllm")
    snapshot = GitSource("vllm", path).snapshot(pin.commit)
    return extract_engine(
        ENGINES["vllm"],
        snapshot,
        commit_date=snapshot.commit_date,
        only={"registry_rows", "docs_table_rows", "docs_registry_findings"},
    )


def test_docs_rows_at_pin(facts):
    rows = facts.fact("docs_table_rows").records
    assert len(rows) == 323  # at 0231dd54 (2026-07-24)
    by_arch = {(r.path, r.architectures): r for r in rows}
    afmoe = by_arch[("docs/models/supported_models.md", ("AfmoeForCausalLM",))]
    assert (
        afmoe.section == "List of Text-only Language Models > Generative Models > Text Generation"
    )
    assert afmoe.example_hf_models == () and afmoe.features == ("LoRA=yes", "PP=yes")
    chatglm = by_arch[
        ("docs/models/supported_models.md", ("ChatGLMModel", "ChatGLMForConditionalGeneration"))
    ]
    assert "zai-org/chatglm2-6b" in chatglm.example_hf_models
    classify = by_arch[
        ("docs/models/pooling_models/classify.md", ("Qwen2ForSequenceClassification",))
    ]
    assert classify.architecture_marks == ("C",)
    assert classify.section == "Supported Models > Text-only Models"
    aria = by_arch[("docs/models/supported_models.md", ("AriaForConditionalGeneration",))]
    assert aria.inputs == "T + I^+"
    sections = {r.section for r in rows if r.path == "docs/models/supported_models.md"}
    assert "List of Multimodal Language Models > Generative Models > Transcription" in sections
    assert not [w for w in facts.warnings if w.fact == "docs_table_rows"]


def test_findings_at_pin(facts):
    found = {(f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records}
    kinds = [f.finding for f in found.values()]
    assert kinds.count("documented-not-registered") == 16
    assert kinds.count("registered-not-documented") == 87
    assert kinds.count("documented-other-spelling") == 0
    thinker = found[("documented-not-registered", "Qwen3OmniMoeThinkerForConditionalGeneration")]
    assert thinker.note == "closest registered name: Qwen3OmniMoeForConditionalGeneration"
    assert found[("documented-not-registered", "Qwen3Model")].note.startswith("docs mark it ^C")
    assert ("registered-not-documented", "TransformersForCausalLM") in found
    # the docs still list it; the registry moved it to _PREVIOUSLY_SUPPORTED_MODELS
    assert ("documented-not-registered", "MiniMaxVL01ForConditionalGeneration") in found
