"""TensorRT-LLM on miniatures: @register_auto_model, the supported-models page with its
footnotes in both tables, ragged rows, unknown cells, findings. No real checkout exists here."""

from __future__ import annotations

import pytest

from extractors.base import extract_engine
from extractors.engines import ENGINES, engine_by_id
from extractors.errors import AnchorError, MissingPathError
from extractors.parsing.markdown import parse_document
from extractors.snapshot import MemorySnapshot
from extractors.trtllm.docs_tables import architecture_table, feature_matrices
from extractors.trtllm.registry import registered_architectures
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
    }
    assert rows["DeciLMForCausalLM"].class_name == "NemotronNASForCausalLM"
    assert rows["DeciLMForCausalLM"].module == "modeling_nemotron_nas"
    assert rows["GlmMoeDsaForCausalLM"].class_name == "DeepseekV3ForCausalLM"
    assert rows["Qwen3ForCausalLM"].class_name == "Qwen3ForCausalLM"  # call form
    # only modeling_*.py directly in the models folder is read
    assert {s.path for s in facts.fact("registry_rows").sources} == {
        f"{MODELS}/modeling_{m}.py"
        for m in ("utils", "llama", "nemotron_nas", "deepseekv3", "qwen3")
    }


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
        "[^6] Also supports text-only inference via the AutoDeploy backend.",
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
    assert ("documented-not-registered", "Qwen3NextForCausalLM") in found
    assert ("registered-not-documented", "GlmMoeDsaForCausalLM") in found
    assert ("registered-not-documented", "DeciLMForCausalLM") not in found


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
