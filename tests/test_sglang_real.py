"""Against a real SGLang checkout (APRON_MIRROR_SGLANG); skipped when it is not set."""

from __future__ import annotations

import shutil

import pytest

from extractors.engines import ENGINES
from extractors.pipeline import ProjectPaths, run
from tests.conftest import REPO_ROOT, mirror

pytestmark = pytest.mark.real_mirror

# checked by hand against the if/elif chain in ModelConfig._derive_model_shapes at the pin
MLA_AT_PIN = {
    "DeepseekV2ForCausalLM",
    "DeepseekV32ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV3ForCausalLMNextN",
    "Glm4MoeLiteForCausalLM",
    "Glm4MoeLiteForCausalLMNextN",
    "GlmMoeDsaForCausalLM",
    "GlmMoeDsaForCausalLMNextN",
    "LongcatFlashForCausalLM",
    "LongcatFlashForCausalLMNextN",
    "DotsVLMForCausalLM",
    "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration",
    "MistralLarge3ForCausalLMEagle",
    "KimiK25ForConditionalGeneration",
    "Eagle3DeepseekV2ForCausalLM",
    "MiniCPM3ForCausalLM",
    "DeepseekVL2ForCausalLM",
    "KimiVLForConditionalGeneration",
    "KimiLinearForCausalLM",
    "KimiK3ForConditionalGeneration",
    "BailingMoeV2_5ForCausalLM",
    "BailingMoeForCausalLMNextN",
    "SarvamMLAForCausalLM",
}
# a commit of the same history that still has the 2025 docs layout (docs/supported_models/*.md)
OLD_DOCS_COMMIT = "f2e0048d0688e929803f109bb633b327a9fb3d2c"


@pytest.fixture
def sglang_mirror():
    path = mirror("sglang")
    if path is None:
        pytest.skip("APRON_MIRROR_SGLANG is not set")
    return path


@pytest.fixture
def project(tmp_path):
    project = ProjectPaths(tmp_path / "p")
    project.root.mkdir()
    shutil.copytree(REPO_ROOT / "pins", project.pins)
    (project.generated / "sglang").mkdir(parents=True)
    return project


def test_extract_at_pin_matches_committed_generated(project, sglang_mirror):
    result = run(ENGINES["sglang"], project, commit=None, source=sglang_mirror)
    committed = REPO_ROOT / "generated" / "sglang"
    for path in sorted((project.generated / "sglang").iterdir()):
        assert path.read_text() == (committed / path.name).read_text(), path.name
    facts = result.facts

    assert {r.architecture for r in facts.fact("mla_architectures").records} == MLA_AT_PIN
    conditions = {
        (c.architecture, c.field, c.check, c.default, c.when_absent)
        for c in facts.fact("mla_conditions").records
    }
    assert conditions == {
        ("PixtralForConditionalGeneration", "kv_lora_rank", "is not None", "None", False),
        ("DeepseekVL2ForCausalLM", "use_mla", "truthy", "True", True),
    }
    mha = {r.architecture: r for r in facts.fact("explicit_mha_architectures").records}
    assert set(mha) == {
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForCausalLMNextN",
        "DeepseekV4ForCausalLMDSpark",
        "Glm4MoeForCausalLMNextN",
    }
    assert "compress_ratios" in mha["DeepseekV4ForCausalLM"].mla_fields_read

    registry = {r.architecture: r for r in facts.fact("registry_rows").records}
    assert len(registry) == 245
    assert registry["DeepseekV32ForCausalLM"].module == "deepseek_v2"
    assert registry["Grok1ModelForCausalLM"].module == "grok"
    assert registry["Qwen2ForSequenceClassification"].module == "qwen2_classification"  # BOM file

    rows = {(r.path.rsplit("/", 1)[-1], r.family): r for r in facts.fact("docs_table_rows").records}
    deepseek = rows[("generative_models.mdx", "DeepSeek (v1, v2, v3/R1)")]
    assert deepseek.example_hf_ids == ("deepseek-ai/DeepSeek-R1",)
    assert len(facts.fact("docs_table_rows").records) == 106
    findings = {
        (f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records
    }
    typo = findings[("documented-not-registered", "InternLM2ForRewardMode")]
    assert typo.note == "closest registered name: InternLM2ForRewardModel"


def test_older_docs_layout_in_the_same_history(project, sglang_mirror):
    result = run(
        ENGINES["sglang"], project, commit=OLD_DOCS_COMMIT, source=sglang_mirror, write=False
    )
    docs = result.facts.fact("docs_table_rows")
    assert {s.path.rsplit("/", 1)[0] for s in docs.sources} == {"docs/supported_models"}
    assert len(docs.records) == 84
    mla = {r.architecture for r in result.facts.fact("mla_architectures").records}
    assert "MiniCPM3ForCausalLM" in mla and "SarvamMLAForCausalLM" not in mla
