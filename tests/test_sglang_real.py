"""Against a real SGLang checkout (APRON_MIRROR_SGLANG); skipped when it is not set."""

from __future__ import annotations

import shutil

import pytest

from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.runner.pipeline import ProjectPaths
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
    conditions = {(c.architecture, c.rule) for c in facts.fact("mla_conditions").records}
    assert conditions == {
        ("PixtralForConditionalGeneration", ("!=", ("hpget", "hf_text_config.kv_lora_rank"), None)),
        ("DeepseekVL2ForCausalLM", ("hpget", "hf_text_config.use_mla", True)),
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


# read by hand from model_config.py at the pin (is_hybrid_swa_model's hybrid_swa_archs set,
# MIMO_V2_MODEL_ARCHS spread in; "*" is the hf_text_config.is_hybrid_swa opt-in)
HYBRID_SWA_AT_PIN = {
    "*",
    "Llama4ForConditionalGeneration",
    "DeepseekV4ForCausalLM",
    "DeepseekV4ForCausalLMNextN",
    "DeepseekV4ForCausalLMDSpark",
    "GptOssForCausalLM",
    "MiMoV2ForCausalLM",
    "MiMoV2FlashForCausalLM",
    "MiMoV2MTP",
    "Step3p5ForCausalLM",
    "Step3p5MTP",
    "Step3p7ForConditionalGeneration",
    "Gemma4ForCausalLM",
    "Gemma4ForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration",
    "LagunaForCausalLM",
    "MellumForCausalLM",
    "MuseGlimmerForCausalLM",
    "MuseGlimmerForConditionalGeneration",
    "InklingForConditionalGeneration",
    "InklingForConditionalGenerationMTP",
    "UnlimitedOCRForCausalLM",
}


def test_architecture_sets_and_kv_rule_at_pin(project, sglang_mirror):
    facts = run(ENGINES["sglang"], project, commit=None, source=sglang_mirror, write=False).facts
    sets: dict[str, dict[str, object]] = {}
    for row in facts.fact("architecture_sets").records:
        sets.setdefault(row.set_name, {})[row.architecture] = row
    assert set(sets["is_hybrid_swa_model"]) == HYBRID_SWA_AT_PIN
    assert "Gemma3ForConditionalGeneration" not in sets["is_hybrid_swa_model"]
    assert "Gemma3ForCausalLM" not in sets["is_hybrid_swa_model"]
    laguna = sets["is_hybrid_swa_model"]["LagunaForCausalLM"]
    assert laguna.condition_rule == ("hpget", "hf_text_config.sliding_window", 0)
    mimo = sets["ModelConfig.__init__.MIMO_V2_MULTIMODAL_ARCHS"]["MiMoV2ForCausalLM"]
    assert mimo.condition_rule == (
        "not",
        ("and", ("has", "hf_config.vision_config"), ("has", "hf_config.audio_config")),
    )
    assert sets["is_hybrid_swa_model"]["MiMoV2FlashForCausalLM"].via == "*MIMO_V2_MODEL_ARCHS"
    assert set(sets["ModelConfig.is_hybrid_swa_compress"]) == {
        "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM",
        "MiMoV2MTP",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "InklingForConditionalGeneration",
        "InklingForConditionalGenerationMTP",
        "Gemma4UnifiedForConditionalGeneration",
    }
    assert len(sets["is_multimodal_model"]) == 70
    assert len(sets["is_generation_model"]) == 18
    assert {r.member_returns for r in sets["is_generation_model"].values()} == {False}
    assert set(sets["is_encoder_decoder_model"]) == {
        "WhisperForConditionalGeneration",
        "MllamaForConditionalGeneration",
        "MossVLForConditionalGeneration",
    }
    assert set(sets["is_audio_model"]) == {
        "WhisperForConditionalGeneration",
        "Qwen3ASRForConditionalGeneration",
    }
    assert set(sets["is_local_attention_model"]) == {"Llama4ForConditionalGeneration"}
    assert len(sets["is_deepseek_dsa"]) == 9
    assert set(sets["is_nemotron_h"]) == {
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "NemotronHForCausalLMMTP",
    }
    assert set(sets["is_piecewise_cuda_graph_disabled_model"]) == {
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForCausalLMNextN",
        "DeepseekV4ForCausalLMDSpark",
        "Qwen3NextForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "LLaDAModelLM",
    }
    assert len(sets["is_multimodal_chunked_prefill_supported"]) == 6
    assert [r.key for r in facts.fact("kv_head_aliases").records] == [
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
        "multi_query_group_num",
        "num_attention_groups",
    ]
    hybrid = {(r.function, r.config_class): r for r in facts.fact("hybrid_config_classes").records}
    mambaish = {c: r for (f, c), r in hybrid.items() if f == "mambaish_config"}
    assert {"NemotronHConfig", "FalconH1Config", "Qwen3NextConfig", "KimiLinearConfig"} <= set(
        mambaish
    )
    assert mambaish["NemotronHConfig"].model_type == "nemotron_h"
    assert mambaish["BailingHybridConfig"].via == "hybrid_lightning_config()"
    assert hybrid[("hybrid_gdn_config", "Qwen3_5TextConfig")].via == "Qwen3NextConfig"
    assert len(mambaish) == 24
    codes = {(w.code, w.subject) for w in facts.warnings}
    assert ("run-time-registry", "mambaish_config") in codes
    assert ("exception-branch", "mamba2_config: NemotronHConfig") in codes
    stale = {s for c, s in codes if c == "set-member-not-registered"}
    assert stale == {"Grok1AForCausalLM", "Grok1VForCausalLM", "LLaDAModelLM"}
    assert [(r.model_type, r.kind) for r in facts.fact("kv_head_overrides").records] == [
        ("*", "conditional"),
        ("mpt", "reads"),
        ("dbrx", "reads"),
        ("nemotron-nas", "opaque"),
    ]
