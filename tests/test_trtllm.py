"""TensorRT-LLM on miniatures: @register_auto_model, the supported-models page with its
footnotes in both tables, ragged rows, unknown cells, findings. No real checkout exists here."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES, engine_by_id
from apron.extractors.errors import AnchorError, MissingPathError
from apron.extractors.parsing.markdown import parse_document
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot
from apron.extractors.trtllm.docs_tables import architecture_table, feature_matrices
from apron.extractors.trtllm.registry import arch_index, import_order, registered_architectures
from tests.trtllm_miniatures import MODELS, PAGE, PAGE_PATH, tree

TRTLLM = ENGINES["trtllm"]
AUTODEPLOY = "[^5] Supported via the AutoDeploy backend."
BLACKWELL = "[^11] DeepSeek-V4 is only supported on Blackwell GPUs (SM100+)."


@pytest.fixture(scope="module")
def facts():
    return extract_engine(TRTLLM, MemorySnapshot(tree(), engine="trtllm"), commit_date="2026-01-01")


def test_engine_is_registered_under_its_aliases():
    assert engine_by_id("tensorrt-llm") is TRTLLM and TRTLLM.engine_id == "trtllm"


def test_registered_string_and_class_are_both_recorded(facts):
    rows = {r.architecture: r for r in facts.fact("registry_rows").records}
    assert set(rows) == {
        "LlamaForCausalLM",
        "Llama4ForConditionalGeneration",
        "DeciLMForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "GlmMoeDsaForCausalLM",
        "Qwen3ForCausalLM",
        "HunYuanDenseV1ForCausalLM",
        "SeedOssForCausalLM",
        "SiglipVisionModel",
        "Qwen3NextForCausalLM",
    }
    assert rows["DeciLMForCausalLM"].class_name == "NemotronNASForCausalLM"
    assert rows["DeciLMForCausalLM"].module == "modeling_nemotron_nas"
    assert rows["GlmMoeDsaForCausalLM"].class_name == "DeepseekV3ForCausalLM"
    assert rows["Qwen3ForCausalLM"].class_name == "Qwen3ForCausalLM"  # call form
    # only modeling_*.py directly in the models folder is read
    modules = ("utils", "llama", "nemotron_nas", "deepseekv3", "qwen3", "hunyuan_dense")
    modules += ("seedoss", "siglip", "a_legacy", "qwen3_next")
    assert {s.path for s in facts.fact("registry_rows").sources} == {
        *(f"{MODELS}/modeling_{m}.py" for m in modules),
        f"{MODELS}/_arch_index.py",
        f"{MODELS}/__init__.py",
    }
    assert rows["SiglipVisionModel"].component == "vision-encoder"
    assert rows["LlamaForCausalLM"].component == ""


def test_duplicate_and_unparsed_registrations_are_warnings():
    texts = {
        f"{MODELS}/modeling_a.py": '@register_auto_model("DeciLMForCausalLM")\nclass NVSmall: pass\n',
        f"{MODELS}/modeling_b.py": '@register_auto_model("DeciLMForCausalLM")\nclass NAS: pass\n'
        "@register_auto_model(NAME)\nclass Other: pass\n",
    }
    rows, warnings = registered_architectures(texts)
    assert [(r.architecture, r.class_name, r.also_in) for r in rows] == [
        ("DeciLMForCausalLM", "NVSmall", ("modeling_b.NAS",))
    ]
    assert sorted(w.code for w in warnings) == ["duplicate-architecture", "unparsed-registration"]


def test_architecture_table_keeps_footnotes_on_their_cells(facts):
    rows = {r.architecture: r for r in facts.fact("supported_models").records}
    assert rows["DeepSeekV2ForCausalLM"].architecture_notes == (AUTODEPLOY,)
    assert rows["DeepseekV4ForCausalLM"].architecture_notes == (BLACKWELL,)
    gemma = rows["Gemma4ForConditionalGeneration"]
    assert gemma.architecture_notes == ()
    assert gemma.hf_examples == ("google/gemma-4-E2B-it", "google/gemma-4-26B-A4B-it")
    assert gemma.example_notes == (
        "google/gemma-4-26B-A4B-it: [^6] Also supports text-only inference via the AutoDeploy "
        "backend.",
    )
    assert rows["DeciLMForCausalLM"].model == "Nemotron"
    assert {r.section for r in rows.values()} == {"Supported Models"}


def test_ragged_row_is_recorded_with_a_warning(facts):
    rows = {r.architecture: r for r in facts.fact("supported_models").records}
    assert rows["Qwen3ForCausalLM"].hf_examples == ()
    ragged = [w for w in facts.warnings if w.code == "ragged-row"]
    assert [(w.fact, w.subject) for w in ragged] == [("supported_models", "Qwen3ForCausalLM")]
    assert "row has 2 cells, the header has 3" in ragged[0].message


def test_feature_matrix_cells_with_footnotes(facts):
    cells = {(c.matrix, c.architecture, c.feature): c for c in facts.fact("feature_matrix").records}
    key = "Model-Feature Support Matrix (Key Models)"
    chunked = cells[(key, "DeepseekV3ForCausalLM", "Chunked Prefill")]
    assert chunked.status == "yes" and chunked.raw == "Yes"
    assert chunked.notes == (
        "[^1] Chunked Prefill for MLA can only be enabled on SM90/SM100/SM103/SM120.",
    )
    reuse = cells[(key, "DeepseekV3ForCausalLM", "KV Cache Reuse")]
    assert reuse.notes[0].startswith("[^2] KV cache reuse for MLA")
    v4 = cells[(key, "DeepseekV4ForCausalLM", "KV Cache Reuse")]
    assert v4.status == "untested" and v4.row_notes == (BLACKWELL,) and v4.notes == ()
    assert cells[(key, "DeepseekV3ForCausalLM", "Sliding Window Attention")].status == "n/a"
    # an unknown value is kept, flagged, and warned about on its row
    partly = cells[(key, "Qwen3NextForCausalLM", "Chunked Prefill")]
    assert partly.status == "unknown" and partly.raw == "Partly"
    assert ("unknown-cell-value", "Qwen3NextForCausalLM") in {
        (w.code, w.subject) for w in facts.warnings
    }


def test_multimodal_matrix_text_column_and_written_names(facts):
    cells = {(c.matrix, c.architecture, c.feature): c for c in facts.fact("feature_matrix").records}
    key = "Multimodal Feature Support Matrix (PyTorch Backend)"
    modality = cells[(key, "Gemma4ForConditionalGeneration", "Modality")]
    assert modality.status == "text" and modality.raw == "L + I + V + A"
    assert modality.notes == ("[^9] Audio modality only supported on E2B/E4B variants.",)
    vila = cells[(key, "LlavaLlamaModel", "CUDA Graph")]
    assert vila.row_notes == ("written as `LlavaLlamaModel (VILA)`",)
    # the visual-generation tables are not architecture tables
    assert not any(c.matrix.startswith("Feature Matrix") for c in cells.values())


def test_dangling_and_duplicate_footnotes_are_row_warnings(facts):
    warned = {(w.subject, w.message) for w in facts.warnings if w.code == "footnote"}
    assert (
        "Qwen3NextForCausalLM",
        "Sliding Window Attention: footnote reference [^4] has no definition on the page",
    ) in warned
    duplicate = [m for s, m in warned if s == "Qwen3NextForCausalLM" and "defined 2 times" in m]
    assert duplicate and "Qwen3-Next-80B-A3B" in duplicate[0]
    cells = {(c.architecture, c.feature): c for c in facts.fact("feature_matrix").records}
    assert cells[("Qwen3NextForCausalLM", "Sliding Window Attention")].raw == "No"
    assert (
        cells[("Qwen3NextForCausalLM", "Overlap Scheduler")]
        .row_notes[0]
        .startswith("[^3] Qwen3-Next-80B-A3B")
    )


def test_findings(facts):
    found = {(f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records}
    v2 = found[("documented-not-registered", "DeepSeekV2ForCausalLM")]
    assert AUTODEPLOY in v2.note and "closest registered name: DeepseekV32ForCausalLM" in v2.note
    assert ("documented-not-registered", "Qwen3NextForCausalLM") not in found
    assert ("registered-not-documented", "GlmMoeDsaForCausalLM") in found
    assert ("registered-not-documented", "DeciLMForCausalLM") not in found


def test_class_name_on_the_page_pairs_with_the_string_its_class_registers(facts):
    found = {(f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records}
    nas = found[("documented-other-spelling", "NemotronNASForCausalLM")]
    assert (nas.match, nas.registered_as) == ("class-name", ("DeciLMForCausalLM",))
    assert "closest" not in nas.note
    assert ("documented-not-registered", "NemotronNASForCausalLM") not in found


def test_spelling_variants_a_version_token_apart_are_paired(facts):
    found = {(f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records}
    hunyuan = found[("documented-other-spelling", "HunYuanDenseForCausalLM")]
    assert (hunyuan.match, hunyuan.registered_as) == (
        "version-token",
        ("HunYuanDenseV1ForCausalLM",),
    )
    assert ("registered-not-documented", "HunYuanDenseV1ForCausalLM") not in found
    # a model generation number is not a version token: V2 does not pair with V3 or V32
    assert ("documented-not-registered", "DeepSeekV2ForCausalLM") in found


def test_autodeploy_only_rows_that_the_pytorch_backend_registers_are_flagged(facts):
    found = {(f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records}
    flagged = {a for f, a in found if f == "documented-autodeploy-only-registered"}
    assert flagged == {"SeedOssForCausalLM", "HunYuanDenseForCausalLM"}
    seed = found[("documented-autodeploy-only-registered", "SeedOssForCausalLM")]
    assert seed.registered_in == (f"{MODELS}/modeling_seedoss.py: SeedOssForCausalLM",)
    assert AUTODEPLOY in seed.note
    hunyuan = found[("documented-autodeploy-only-registered", "HunYuanDenseForCausalLM")]
    assert hunyuan.registered_as == ("HunYuanDenseV1ForCausalLM",)
    # DeepSeekV2 is AutoDeploy-only and not registered: no flag, only the plain finding
    assert ("documented-autodeploy-only-registered", "DeepSeekV2ForCausalLM") not in found


def test_vision_encoders_are_not_reported_as_undocumented(facts):
    found = {(f.finding, f.architecture) for f in facts.fact("docs_registry_findings").records}
    assert ("registered-not-documented", "SiglipVisionModel") not in found


def test_visual_generation_section_is_skipped_with_a_warning(facts):
    skipped = {w.subject: w for w in facts.warnings if w.code == "skipped-section"}
    assert set(skipped) == {
        "Visual Generation Models > Supported Models",
        "Visual Generation Models > Supported Models > Feature Matrix",
    }
    models = {r.architecture for r in facts.fact("supported_models").records}
    assert "black-forest-labs/FLUX.1-dev" not in models and "FLUX.1" not in models


def test_duplicate_registration_is_resolved_by_the_arch_index(facts):
    rows = {r.architecture: r for r in facts.fact("registry_rows").records}
    qwen3_next = rows["Qwen3NextForCausalLM"]
    assert (qwen3_next.module, qwen3_next.also_in) == (
        "modeling_qwen3_next",
        ("modeling_a_legacy.Qwen3NextLegacy",),
    )
    assert qwen3_next.resolved_by == "MODEL_ARCH_TO_MODULE in _arch_index.py"
    codes = {(w.code, w.subject) for w in facts.warnings}
    assert ("index-not-registered", "PhantomForCausalLM") in codes
    assert ("not-in-index", "SeedOssForCausalLM") in codes
    assert ("not-in-index", "LlamaForCausalLM") not in codes


def test_duplicate_registration_without_an_index_follows_the_init_import_order():
    init = "import transformers\n\nfrom .modeling_b import NAS\nfrom .modeling_a import NVSmall\n"
    order = import_order(init, f"{MODELS}/__init__.py")
    assert order == ["modeling_b", "modeling_a"]
    texts = {
        f"{MODELS}/modeling_a.py": '@register_auto_model("DeciLMForCausalLM")\nclass NVSmall: pass\n',
        f"{MODELS}/modeling_b.py": '@register_auto_model("DeciLMForCausalLM")\nclass NAS: pass\n',
    }
    rows, warnings = registered_architectures(texts, order=order)
    assert [(r.module, r.also_in) for r in rows] == [("modeling_a", ("modeling_b.NAS",))]
    assert "imports last" in rows[0].resolved_by
    assert "the engine uses modeling_a.NVSmall" in warnings[0].message


def test_arch_index_without_its_dict_is_an_error():
    with pytest.raises(AnchorError) as err:
        arch_index("MODEL_CLASS_TO_MODULE = {}\n", f"{MODELS}/_arch_index.py")
    assert err.value.anchor == "MODEL_ARCH_TO_MODULE = {...}"


def test_missing_page_heading_and_tables_are_errors():
    with pytest.raises(MissingPathError) as err:
        extract_engine(
            TRTLLM,
            MemorySnapshot({k: v for k, v in tree().items() if k != PAGE_PATH}, engine="trtllm"),
            commit_date="2026-01-01",
        )
    assert PAGE_PATH in str(err.value) and "engine: trtllm" in str(err.value)
    with pytest.raises(MissingPathError) as err:
        extract_engine(
            TRTLLM, MemorySnapshot({PAGE_PATH: PAGE}, engine="trtllm"), commit_date="2026-01-01"
        )
    assert f"{MODELS}/modeling_*.py" in str(err.value)

    no_matrix = parse_document(PAGE.replace("Model-Feature Support Matrix", "Features"), PAGE_PATH)
    with pytest.raises(AnchorError) as err:
        feature_matrices(no_matrix)
    assert err.value.anchor == "heading: Model-Feature Support Matrix"
    renamed = parse_document(PAGE.replace("| Architecture ", "| Arch "), PAGE_PATH)
    with pytest.raises(AnchorError) as err:
        architecture_table(renamed)
    assert err.value.anchor == "table under heading: Supported Models"


def test_each_example_keeps_its_own_footnotes():
    page = """# Supported Models

| Architecture | Model | HuggingFace Example |
| --- | --- | --- |
| `Gemma4ForConditionalGeneration` | Gemma 4 | `google/gemma-4-E2B-it`, `google/gemma-4-26B-A4B-it` [^6], `google/gemma-4-31B-it` [^6] [^7] |
| `LlamaForCausalLM` [^7] | Llama | [^6] `meta-llama/Llama-3.1-8B` |

[^6]: Also supports text-only inference via AutoDeploy.
[^7]: Blackwell only.
"""
    rows, warnings = architecture_table(parse_document(page, PAGE_PATH))
    notes = {r.architecture: r.example_notes for r in rows}
    assert notes["Gemma4ForConditionalGeneration"] == (
        "google/gemma-4-26B-A4B-it: [^6] Also supports text-only inference via AutoDeploy.",
        "google/gemma-4-31B-it: [^6] Also supports text-only inference via AutoDeploy.",
        "google/gemma-4-31B-it: [^7] Blackwell only.",
    )
    assert notes["LlamaForCausalLM"] == ("[^6] Also supports text-only inference via AutoDeploy.",)
    assert not [w for w in warnings if w.code == "footnote"]


def test_an_index_naming_another_module_is_a_warning():
    texts = {f"{MODELS}/modeling_b.py": '@register_auto_model("XForCausalLM")\nclass X: pass\n'}
    rows, warnings = registered_architectures(
        texts, index={"XForCausalLM": "modeling_a"}, index_path=f"{MODELS}/_arch_index.py"
    )
    assert [(r.module, r.resolved_by) for r in rows] == [("modeling_b", "")]
    assert [(w.code, w.subject, w.symbol) for w in warnings] == [
        ("index-disagrees", "XForCausalLM", "MODEL_ARCH_TO_MODULE")
    ]


def test_import_order_reads_conditional_imports_and_skips_absolute_ones():
    init = (
        "import transformers\n"
        "from tensorrt_llm.logger import logger\n"
        "from .modeling_b import B\n"
        "if transformers.__version__ >= '4.45.1':\n"
        "    from .modeling_a import A\n"
        "from .modeling_b import C\n"
    )
    assert import_order(init, f"{MODELS}/__init__.py") == ["modeling_b", "modeling_a"]
