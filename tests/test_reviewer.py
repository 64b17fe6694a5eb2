"""Reviewer pages: the cross-engine matrix and the index, from records."""

from __future__ import annotations

import dataclasses

import pytest

from apron.extractors.records import EngineFacts, FactKind, FactResult
from apron.extractors.report.reviewer import (
    mla_disagreements,
    model_type_guess,
    render_index,
    render_matrix,
)
from apron.extractors.sglang.records import (
    SglangExplicitMha,
    SglangMlaArchitecture,
    SglangRegistryRow,
)
from apron.extractors.trtllm.records import TrtllmFeatureCell, TrtllmRegisteredArchitecture
from apron.extractors.vllm.records import MlaModelType, RegistryRow


def facts(engine, *results):
    return EngineFacts(
        engine=engine,
        commit=engine[0] * 40,
        commit_date="2026-01-01",
        upstream_url="https://example.invalid",
        warnings=(),
        facts=tuple(
            FactResult(FactKind(name, name, type(rows[0]), ""), tuple(rows), ())
            for name, rows in results
        ),
    )


VLLM = facts(
    "vllm",
    (
        "registry_rows",
        [
            RegistryRow(
                architecture="DeepseekV4ForCausalLM",
                task_group="text-generation",
                module="vllm.models.deepseek_v4",
                class_name="DeepseekV4ForCausalLM",
                section="Decoder-only",
                dict_name="_TEXT_GENERATION_MODELS",
                also_in=(),
                path="vllm/model_executor/models/registry.py",
            )
        ],
    ),
    (
        "mla_model_types",
        [MlaModelType(scope="main", model_type="deepseek_v4", path="p", symbol="s")],
    ),
)
SGLANG = facts(
    "sglang",
    (
        "registry_rows",
        [
            SglangRegistryRow(
                architecture=a,
                module=m,
                entry_name=a,
                class_name=a,
                resolved_via="local class",
                class_path="x",
                also_in=(),
                import_error="",
                path=f"python/sglang/srt/models/{m}.py",
            )
            for a, m in [
                ("DeepseekV4ForCausalLM", "deepseek_v4"),
                ("MiniCPM3ForCausalLM", "minicpm3"),
            ]
        ],
    ),
    (
        "mla_architectures",
        [
            SglangMlaArchitecture(
                architecture="MiniCPM3ForCausalLM",
                branch=2,
                conditional=False,
                path="c.py",
                symbol="s",
            )
        ],
    ),
    (
        "explicit_mha_architectures",
        [
            SglangExplicitMha(
                architecture="DeepseekV4ForCausalLM",
                branch=1,
                mla_fields_read=("compress_ratios",),
                path="c.py",
                symbol="s",
            )
        ],
    ),
)
TRTLLM = facts(
    "trtllm",
    (
        "registry_rows",
        [
            TrtllmRegisteredArchitecture(
                architecture="DeepseekV4ForCausalLM",
                class_name="DeepseekV4ForCausalLM",
                module="modeling_deepseekv4",
                also_in=(),
                path="tensorrt_llm/_torch/models/modeling_deepseekv4.py",
            )
        ],
    ),
    (
        "feature_matrix",
        [
            TrtllmFeatureCell(
                matrix="m",
                architecture="DeepseekV4ForCausalLM",
                feature="Sliding Window Attention",
                status="Yes",
                raw="Yes",
                notes=(),
                row_notes=("only supported on Blackwell GPUs (SM100+)",),
                path="docs/source/models/supported-models.md",
            )
        ],
    ),
)


@pytest.mark.parametrize(
    ("architecture", "guess"),
    [
        ("DeepseekV4ForCausalLM", "deepseek_v4"),
        ("Glm4MoeLiteForCausalLM", "glm4_moe_lite"),
        ("PanguUltraMoEForCausalLM", "pangu_ultra_moe"),
        ("LongcatFlashForCausalLM", "longcat_flash"),
    ],
)
def test_model_type_guess(architecture, guess):
    assert model_type_guess(architecture) == guess


def test_disagreements_list_direct_and_config_dependent_cases():
    rows = mla_disagreements({"vllm": VLLM, "sglang": SGLANG})
    assert rows == [
        ("DeepseekV4ForCausalLM", "deepseek_v4", "MLA", "MHA (explicit)"),
        ("MiniCPM3ForCausalLM", "mini_cpm3", "not in the MLA list", "MLA"),
    ]


def test_matrix_cells_and_top_section():
    text = render_matrix({"vllm": VLLM, "sglang": SGLANG, "trtllm": TRTLLM})
    top, matrix = text.split("## Matrix")
    assert "| DeepseekV4ForCausalLM | deepseek_v4 | MLA | MHA (explicit) |" in top
    row = next(line for line in matrix.splitlines() if line.startswith("| DeepseekV4ForCausalLM"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == (
        "registered: text-generation (Decoder-only) [MLA if model_type is "
        "deepseek_v4] (registry.py _TEXT_GENERATION_MODELS)"
    )
    # the columns follow the engine registry (extractors/engines/__init__.py): vLLM, SGLang, llama.cpp, ...
    assert cells[2] == "registered: deepseek_v4 [MHA (explicit)] (deepseek_v4.py EntryClass)"
    assert cells[3] == "?"  # no llama.cpp constraints
    assert cells[4] == (
        "registered*: DeepseekV4ForCausalLM: only supported on Blackwell GPUs "
        "(SM100+) [SWA Yes] (modeling_deepseekv4.py @register_auto_model)"
    )
    assert "No constraints extracted (every cell unknown): llama.cpp." in text
    assert ":" not in cells[1].rsplit("(", 1)[1]  # no line numbers in cells


def test_matrix_marks_not_registered():
    text = render_matrix({"vllm": VLLM, "sglang": SGLANG}).split("## Matrix")[1]
    row = next(line for line in text.splitlines() if line.startswith("| MiniCPM3ForCausalLM"))
    assert row.split("|")[2].strip() == "-"


def test_pages_are_deterministic():
    a = render_matrix({"sglang": SGLANG, "vllm": VLLM}) + render_index({"vllm": VLLM})
    b = render_matrix({"vllm": VLLM, "sglang": SGLANG}) + render_index({"vllm": VLLM})
    assert a == b


def test_mla_pairs_come_from_the_engine_reports_not_from_names(monkeypatch):
    from apron.extractors.report import reviewer
    from apron.extractors.report.engine_reports import ENGINE_REPORTS

    assert reviewer.mla_pairs({"vllm": VLLM, "sglang": SGLANG}) == [("sglang", "vllm")]
    # an engine that decides MLA by architecture joins the comparison through its report alone
    hooks = dataclasses.replace(
        ENGINE_REPORTS["trtllm"],
        mla_decided_by="architecture",
        mla_verdicts=lambda facts: {"MiniCPM3ForCausalLM": "MLA"},
    )
    monkeypatch.setitem(ENGINE_REPORTS, "trtllm", hooks)
    facts = {"vllm": VLLM, "sglang": SGLANG, "trtllm": TRTLLM}
    assert reviewer.mla_pairs(facts) == [("sglang", "vllm"), ("trtllm", "vllm")]
    assert mla_disagreements(facts, ("trtllm", "vllm")) == [
        ("MiniCPM3ForCausalLM", "mini_cpm3", "not in the MLA list", "MLA")
    ]
    text = render_matrix(facts)
    assert "### SGLang and vLLM" in text and "### TensorRT-LLM and vLLM" in text


def test_an_engine_report_with_half_an_mla_hook_fails_when_declared():
    from apron.extractors.report.engine_reports import EngineReport

    with pytest.raises(ValueError, match="given together"):
        EngineReport(mla_decided_by="architecture")
