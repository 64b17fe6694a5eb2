"""The family x engine table: families derived from each engine's facts by the stated rules."""

from __future__ import annotations

from apron.extractors.engines import ENGINES
from apron.extractors.llamacpp.families import llamacpp_families
from apron.extractors.llamacpp.records import HfArchitecture
from apron.extractors.records import EngineFacts, FactKind, FactResult, Record
from apron.extractors.report import families
from apron.extractors.sglang.families import sglang_families
from apron.extractors.vllm.families import vllm_families
from apron.extractors.vllm.records import MlaModelType, ModelClassFlags, RegistryRow

REGISTRY = "vllm/model_executor/models/registry.py"


def _kind(engine: str, name: str):
    return next(k for k in ENGINES[engine].fact_kinds if k.name == name)


def _facts(engine: str, **records) -> EngineFacts:
    return EngineFacts(
        engine=engine,
        commit="0" * 40,
        commit_date="2026-01-01",
        upstream_url="https://example.invalid",
        facts=tuple(FactResult(_kind(engine, n), tuple(r), ()) for n, r in records.items()),
        warnings=(),
    )


def _flags(architecture: str, **values) -> ModelClassFlags:
    defaults = {
        name: False
        for name in ModelClassFlags.model_fields
        if name.startswith(("is_", "supports_", "has_", "requires_"))
    }
    defaults.update(
        attn_type="decoder",
        default_seq_pooling_type="LAST",
        default_tok_pooling_type="ALL",
        score_type="bi-encoder",
    )
    defaults.update(values)
    return ModelClassFlags(
        architecture=architecture,
        class_name=architecture,
        resolved_class=f"vllm.m.{architecture}",
        status="resolved",
        class_mro=(),
        path="vllm/model_executor/models/m.py",
        symbol=architecture,
        **defaults,
    )


def _row(architecture: str, section: str = "Decoder-only") -> RegistryRow:
    return RegistryRow(
        architecture=architecture,
        task_group="text-generation",
        module="m",
        class_name=architecture,
        section=section,
        dict_name="_TEXT_GENERATION_MODELS",
        also_in=(),
        path=REGISTRY,
    )


VLLM_FLAGS = [
    _flags("LlamaForCausalLM", is_text_generation_model=True),
    _flags("LlamaModel", is_text_generation_model=True),
    _flags("DeepseekV3ForCausalLM", is_text_generation_model=True),
    _flags("JambaForCausalLM", is_text_generation_model=True, is_hybrid=True, has_inner_state=True),
    _flags(
        "MambaForCausalLM",
        is_text_generation_model=True,
        is_attention_free=True,
        has_inner_state=True,
    ),
    _flags("BertModel", is_pooling_model=True, default_seq_pooling_type="CLS"),
    _flags("BertForSequenceClassification", is_pooling_model=True, score_type="cross-encoder"),
    _flags("ColBERTModel", is_pooling_model=True, score_type="late-interaction"),
    _flags("ModernBertModel"),  # neither generates nor pools: vLLM converts it
    _flags(
        "WhisperForConditionalGeneration", is_text_generation_model=True, supports_multimodal=True
    ),
]


def vllm_facts():
    rows = [
        _row(f.architecture)
        for f in VLLM_FLAGS
        if f.architecture != "WhisperForConditionalGeneration"
    ]
    rows.append(_row("WhisperForConditionalGeneration", "Encoder-decoder"))
    rows.append(
        _row("LlamaModel").model_copy(
            update={"dict_name": "_EMBEDDING_MODELS", "class_name": "LlamaForCausalLM"}
        )
    )
    mla = [
        MlaModelType(scope="main", model_type="deepseek_v3", path="c.py", symbol="is_deepseek_mla")
    ]
    return _facts("vllm", registry_rows=rows, model_class_flags=VLLM_FLAGS, mla_model_types=mla)


def members(cells, family):
    return sorted(cells[family].members)


def test_vllm_families_follow_the_class_flags():
    cells = vllm_families(vllm_facts())
    assert members(cells, "dense") == ["LlamaForCausalLM"]
    assert members(cells, "MLA") == ["DeepseekV3ForCausalLM"]
    assert members(cells, "hybrid attention+SSM") == ["JambaForCausalLM"]
    assert members(cells, "SSM") == ["MambaForCausalLM"]
    assert members(cells, "pooling") == ["BertModel", "LlamaModel", "ModernBertModel"]
    assert members(cells, "cross-encoder") == ["BertForSequenceClassification"]
    assert members(cells, "late interaction") == ["ColBERTModel"]
    assert members(cells, "encoder-decoder") == ["WhisperForConditionalGeneration"]
    assert members(cells, "multimodal") == ["WhisperForConditionalGeneration"]
    assert cells["sliding window"].no_rule.startswith("no per-architecture rule")
    assert cells["hybrid attention+SSM"].traces == {
        f"{REGISTRY} _ModelInfo.from_model_cls is_hybrid"
    }


def _hf(architecture, gguf, properties=(), model_type="text"):
    return HfArchitecture(
        architecture=architecture,
        model_type=model_type,
        converter_class="X",
        model_arch=gguf.upper(),
        model_arch_from="X",
        converter_mro=("X",),
        gguf_arch=gguf,
        llm_arch=f"LLM_ARCH_{gguf.upper()}",
        runtime_gguf_archs=(),
        properties=tuple(properties),
        resolution="resolved",
        path="conversion/x.py",
        symbol="X",
    )


def test_llamacpp_families_follow_the_class_sets():
    facts = _facts(
        "llamacpp",
        hf_architectures=[
            _hf("LlamaForCausalLM", "llama"),
            _hf("JambaForCausalLM", "jamba", ["llm_arch_is_hybrid"]),
            _hf("Rwkv7ForCausalLM", "rwkv7", ["llm_arch_is_recurrent"]),
            _hf("LLaDAModelLM", "llada", ["llm_arch_is_diffusion"]),
            _hf("LlavaForConditionalGeneration", "llama", model_type="mmproj"),
        ],
    )
    cells = llamacpp_families(facts)
    assert members(cells, "dense") == ["LlamaForCausalLM"]
    assert members(cells, "hybrid attention+SSM") == ["JambaForCausalLM"]
    assert members(cells, "recurrent") == ["Rwkv7ForCausalLM"]
    assert members(cells, "diffusion") == ["LLaDAModelLM"]
    assert members(cells, "multimodal") == ["LlavaForConditionalGeneration"]
    assert cells["MLA"].no_rule == "no MLA fact is extracted for llama.cpp"


def test_sglang_without_architecture_sets_degrades():
    cells = sglang_families(_facts("sglang", registry_rows=[]))
    assert cells["sliding window"].no_rule == "architecture_sets not extracted at this commit"
    assert cells["dense"].members == set()


def test_family_section_marks_absent_engines_and_opens_the_matrix():
    from apron.extractors.report.reviewer import render_matrix

    page = render_matrix({"vllm": vllm_facts()})
    lines = page.splitlines()
    families_at = lines.index("## Families")
    assert families_at < lines.index("## Matrix")
    ssm_row = next(line for line in lines if line.startswith("| SSM |"))
    # the count leads; the names are folded into <details>
    assert ssm_row.startswith("| SSM | **1** (vllm/model_executor/models/registry.py ")
    assert "<details><summary>names</summary>MambaForCausalLM</details> |" in ssm_row
    assert ssm_row.endswith("| ? | ? | ? |")
    assert "attn_type" not in next(line for line in lines if line.startswith("| BertModel |"))
    jamba = next(line for line in lines if line.startswith("| JambaForCausalLM |"))
    assert "[hybrid, inner state]" in jamba


class _SetRow(Record):
    """Shape of SGLang's architecture-set records (set name, architecture, polarity)."""

    set_name: str
    architecture: str
    member_returns: bool
    path: str
    symbol: str
    condition: str | None = None


def test_sglang_families_from_architecture_sets_when_present():
    rows = [
        _SetRow(set_name=name, architecture=arch, member_returns=returns, path="mc.py", symbol=name)
        for name, arch, returns in [
            ("is_hybrid_swa_model", "GptOssForCausalLM", True),
            ("is_multimodal_model", "Qwen2VLForConditionalGeneration", True),
            ("is_generation_model", "BertModel", False),
            ("is_encoder_decoder_model", "WhisperForConditionalGeneration", True),
            ("is_generation_model", "BertForSequenceClassification", False),
            ("is_cross_encoding_pooler_model", "BertForSequenceClassification", True),
        ]
    ]
    rows.append(
        _SetRow(
            set_name="is_hybrid_swa_model",
            architecture="LagunaForCausalLM",
            member_returns=True,
            path="mc.py",
            symbol="is_hybrid_swa_model",
            condition="getattr(config, 'sliding_window', None) is not None",
        )
    )
    sets = FactResult(
        FactKind("architecture_sets", "Architecture sets", _SetRow, ""), tuple(rows), ()
    )
    facts = _facts("sglang", registry_rows=[])
    facts = EngineFacts(**{**facts.__dict__, "facts": (*facts.facts, sets)})
    cells = sglang_families(facts)
    assert members(cells, "sliding window") == ["GptOssForCausalLM", "LagunaForCausalLM"]
    assert cells["sliding window"].conditional == {"LagunaForCausalLM"}
    assert "LagunaForCausalLM*" in families._cell_text(cells["sliding window"])
    assert members(cells, "pooling") == ["BertModel"]
    assert members(cells, "cross-encoder") == ["BertForSequenceClassification"]
    assert members(cells, "encoder-decoder") == ["WhisperForConditionalGeneration"]
    assert cells["sliding window"].traces == {"mc.py is_hybrid_swa_model"}


def test_the_family_renderer_names_no_engine():
    """Engine knowledge lives in each engine's package (its families.py, named in the report's
    extractors/report/engine_reports.py):
    the generic family modules hold no engine id as a string, and every engine with rules has
    both the function and the rules in words."""
    import ast
    from pathlib import Path

    from apron.extractors import family_cells
    from apron.extractors.report.engine_reports import ENGINE_REPORTS

    for module in (families, family_cells):
        name = Path(module.__file__).name
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        assert not strings & set(ENGINES), name
    for engine_id, hooks in ENGINE_REPORTS.items():
        assert (hooks.families is None) == (hooks.family_rules == ()), engine_id
    assert [e for e in ENGINES if ENGINE_REPORTS[e].families] == [
        "vllm",
        "sglang",
        "llamacpp",
        "trtllm",
    ]
