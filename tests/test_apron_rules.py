"""The generated constraints drive apron's answers: swap the rows and the answer changes.

vLLM rows come from the committed generated/vllm modules (or edited copies of them); SGLang,
llama.cpp and TensorRT-LLM rows are hand-built with the field names their generated modules use,
so these tests hold whichever engines are present in generated/."""

from __future__ import annotations

import json
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

import apron.constraints as constraints_module
from apron import plan
from apron.config import ModelConfig
from apron.constraints import (
    ArchitectureFact,
    ConstraintSet,
    EngineConstraints,
    load_constraints,
    load_engine,
)
from apron.engines.kv_head_scan import resolve_kv_heads
from apron.extractors.parsing.expressions import config_condition
from apron.extractors.parsing.python_ts import parse_python
from apron.extractors.serving import records as serving_records
from apron.extractors.serving.rule_fields import rule_fields
from apron.extractors.vllm import records
from apron.generated.schema import KvHeadAlias, KvHeadOverride, MlaModelType
from apron.generated.schema import MlaGate as MlaGateRow

SAMPLES = Path(__file__).resolve().parent.parent / "apron" / "samples"
GENERATED = Path(__file__).resolve().parent.parent / "generated"
CONVERTOR = "vllm/transformers_utils/model_arch_config_convertor.py"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / f"{name}.json").read_text())


def vllm() -> EngineConstraints:
    engine = load_engine("vllm")
    assert engine is not None, "generated/vllm is committed and must load"
    return engine


def with_vllm_fact(fact: str, rows: tuple) -> ConstraintSet:
    engine = vllm()
    return load_constraints().replace("vllm", engine._replace(facts={**engine.facts, fact: rows}))


def only(**engines: EngineConstraints | None) -> ConstraintSet:
    base = {name: None for name in constraints_module.ENGINES}
    return load_constraints()._replace(engines={**base, **engines})


def architecture_facts(engine: str) -> tuple[ArchitectureFact, ...]:
    """What generated/<engine>/__init__.py declares, from the engine package that renders it."""
    from apron.extractors.engines import ENGINES

    return tuple(
        ArchitectureFact(k.name, k.support.field, k.support.role)
        for k in ENGINES[engine].fact_kinds
        if k.support is not None
    )


def view(result, engine: str):
    return next(v for v in result.engines if v.engine == engine)


# -- swapping generated rows changes the answer ---------------------------------------------------


def test_adding_a_model_type_to_the_mla_list_makes_it_mla():
    config = sample("deepseek-v3")
    config["model_type"] = "my_latent_model"
    config["architectures"] = ["MyLatentForCausalLM"]  # in no engine's MLA set
    before = plan(config, context=1024)
    assert before.prediction.mechanism == "full_attention"
    extra = MlaModelType(
        scope="main",
        model_type="my_latent_model",
        path=CONVERTOR,
        symbol="ModelArchConfigConvertorBase.is_deepseek_mla",
    )
    swapped = with_vllm_fact("mla_model_types", (*vllm().rows("mla_model_types"), extra))
    after = plan(config, context=1024, constraints=swapped)
    assert after.prediction.mechanism == "mla_latent"
    assert after.prediction.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    assert view(after, "vllm").mechanism == "mla_latent"


def test_an_edited_copy_of_generated_drives_the_answer(tmp_path):
    copy = tmp_path / "generated"
    shutil.copytree(GENERATED, copy, ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "vllm" / "mla_model_types.py"
    lines = module.read_text().splitlines(keepends=True)
    module.write_text("".join(line for line in lines if 'model_type="deepseek_v3"' not in line))
    edited = load_constraints(copy)  # read from that directory alone, next to the installed one
    result = plan(sample("deepseek-v3"), context=1024, constraints=only(vllm=edited.get("vllm")))
    assert result.prediction.mechanism == "full_attention"
    assert view(result, "vllm").kv_bytes_per_token == 61 * 128 * (192 + 128) * 2
    unpatched = plan(sample("deepseek-v3"), context=1024, constraints=only(vllm=vllm()))
    assert unpatched.prediction.mechanism == "mla_latent"


def test_alias_order_decides_which_key_wins():
    config = {
        "model_type": "x",
        "num_hidden_layers": 1,
        "head_dim": 64,
        "num_kv_heads": 4,
        "num_key_value_heads": 8,
    }
    model = ModelConfig(config, "t")
    assert resolve_kv_heads(model, vllm())[0].count == 4  # num_kv_heads is scanned first
    reordered = (
        KvHeadAlias(0, "num_key_value_heads", CONVERTOR, "s"),
        KvHeadAlias(1, "num_kv_heads", CONVERTOR, "s"),
    )
    engine = vllm()._replace(facts={**vllm().facts, "kv_head_aliases": reordered})
    assert resolve_kv_heads(model, engine)[0].count == 8


def test_without_generated_vllm_the_kv_heads_are_unknown():
    result = plan(sample("llama-3.1-8b"), context=10, constraints=only())
    assert result.prediction.kv_bytes_per_token is None
    assert "generated/vllm has none" in result.kv_heads.unknown[0]
    assert all(v.status == "constraints absent" for v in result.engines)
    assert all(s.status == "constraints absent" for s in result.support)
    assert any("no generated engine constraints" in n for n in result.notes)


def test_load_engine_of_an_absent_engine_is_none():
    assert load_engine("no_such_engine") is None


def test_rows_missing_fields_fail_loudly():
    Row = namedtuple("Row", "model_type")
    engine = vllm()._replace(
        facts={**vllm().facts, "kv_head_overrides": (Row("llama"),), "mla_gates": ()}
    )
    with pytest.raises(AttributeError, match="rule_order"):  # never read as "no rule"
        plan(
            sample("llama-3.1-8b"),
            context=10,
            constraints=load_constraints().replace("vllm", engine),
        )


# -- per-model_type overrides, as their structured fields say --------------------------------------

MULTI_QUERY = ("hpget", "multi_query", False)  # getattr(cfg, "multi_query", False)
FALCON_WHEN = ("and", ("not", ("hpget", "new_decoder_architecture", False)), MULTI_QUERY)
STAR_EXCLUDES = (
    "and",
    ("in", ("hpget", "model_type"), ("list", ("str", "m"), ("str", "other"))),
    ("hpget", "new_decoder_architecture", False),
)


def override(model_type: str, kind: str, order: int = 0, **given):
    """A generated-schema row built through the extractor record (which renders `rule`)."""
    record = serving_records.KvHeadOverride(
        model_type=model_type,
        rule_order=order,
        convertor_class="C",
        **rule_fields(kind, **given),
        path=CONVERTOR,
        symbol="C.get_total",
    )
    return KvHeadOverride(**record.model_dump())


@pytest.mark.parametrize(
    ("rule_row", "config", "expected"),
    [
        (override("m", "constant", gives=("constant", "", 0)), {}, 0),
        (override("m", "constant", gives=("constant", "", 3)), {"num_key_value_heads": 8}, 3),
        (
            override(
                "m",
                "reads",
                gives=("key", "attn_config.kv_n_heads", None),
                otherwise=("key", "num_attention_heads", None),
            ),
            {"attn_config": {"kv_n_heads": 2}, "num_attention_heads": 16},
            2,
        ),
        (
            override(
                "m",
                "reads",
                gives=("key", "attn_config.kv_n_heads", None),
                otherwise=("key", "num_attention_heads", None),
            ),
            {"attn_config": {}, "num_attention_heads": 16},
            16,
        ),
        (
            override("m", "reads", gives=("key", "encoder.n_heads", None)),
            {"encoder": {"n_heads": 6}},
            6,
        ),
        (override("m", "reads", gives=("key", "encoder.n_heads", None)), {}, None),
        (
            override(
                "m",
                "conditional",
                when=FALCON_WHEN,
                gives=("constant", "", 1),
                otherwise=("base scan", "", None),
            ),
            {"multi_query": True, "new_decoder_architecture": False, "num_kv_heads": 9},
            1,
        ),
        (
            override(
                "m",
                "conditional",
                when=FALCON_WHEN,
                gives=("constant", "", 1),
                otherwise=("base scan", "", None),
            ),
            {"multi_query": True, "new_decoder_architecture": True, "num_kv_heads": 9},
            9,
        ),
        # an absent flag reads as false (getattr(cfg, flag, False)): base scan
        (
            override(
                "m",
                "conditional",
                when=FALCON_WHEN,
                gives=("constant", "", 1),
                otherwise=("base scan", "", None),
            ),
            {"num_key_value_heads": 4},
            4,
        ),
        # a condition the extractor could not structure ("or") is opaque: unknown
        (
            override("m", "opaque", reason="1 when has compress_ratios or multi_query"),
            {"num_key_value_heads": 4},
            None,
        ),
        (
            override("m", "opaque", reason="see x.py::C.get_total"),
            {"num_key_value_heads": 4},
            None,
        ),
        (override("m", "opaque", reason="returns self.foo()"), {"num_key_value_heads": 4}, None),
        # older layouts: "*" rules apply to every model type except `excludes`
        (
            override(
                "*",
                "conditional",
                when=MULTI_QUERY,
                gives=("constant", "", 1),
                excludes=STAR_EXCLUDES,
            ),
            {"multi_query": True, "new_decoder_architecture": True, "num_key_value_heads": 4},
            4,
        ),
        (
            override(
                "*",
                "conditional",
                when=MULTI_QUERY,
                gives=("constant", "", 1),
                excludes=STAR_EXCLUDES,
            ),
            {"multi_query": True, "num_key_value_heads": 4},
            1,
        ),
        # no else branch: a failing condition falls through to the next rule, then the scan
        (
            override(
                "*",
                "conditional",
                when=MULTI_QUERY,
                gives=("constant", "", 1),
                excludes=STAR_EXCLUDES,
            ),
            {"num_key_value_heads": 4},
            4,
        ),
        # a key test on model_type reads the top-level model_type
        (
            override(
                "*",
                "conditional",
                when=("==", ("hpget", "model_type"), ("str", "m")),
                gives=("key", "n_kv", None),
            ),
            {"n_kv": 5, "num_key_value_heads": 4},
            5,
        ),
        (
            override(
                "*",
                "conditional",
                when=("not", ("in", ("hpget", "model_type"), ("list", ("str", "m"), ("str", "x")))),
                gives=("key", "n_kv", None),
            ),
            {"n_kv": 5, "num_key_value_heads": 4},
            4,
        ),
    ],
)
def test_override_rules(rule_row, config, expected):
    engine = vllm()._replace(facts={**vllm().facts, "kv_head_overrides": (rule_row,)})
    model = ModelConfig({"model_type": "m", **config}, "t")
    heads, _ = resolve_kv_heads(model, engine)
    assert heads.count == expected
    if expected is None:
        assert heads.unknown


def test_nemotron_nas_block_configs_give_per_layer_heads():
    config = {
        "architectures": ["DeciLMForCausalLM"],
        "model_type": "nemotron-nas",
        "num_hidden_layers": 3,
        "num_attention_heads": 64,
        "hidden_size": 8192,
        "block_configs": [
            {"attention": {"n_heads_in_group": 8, "no_op": False}},
            {"attention": {"no_op": True}},
            {"attention": {"n_heads_in_group": 4}},
        ],
    }
    result = plan(config, context=10)
    # 64 // 8 = 8, no_op = 0, 64 // 4 = 16 KV heads; head_dim = 8192 / 64 = 128
    # per token = (8 + 0 + 16) x (128 + 128) x 2 B = 12,288 B
    assert result.kv_heads.per_layer == (8, 0, 16)
    assert result.prediction.kv_bytes_per_token == (8 + 0 + 16) * 256 * 2 == 12_288


def test_nemotron_nas_missing_group_is_unknown():
    config = {
        "model_type": "nemotron-nas",
        "num_hidden_layers": 1,
        "num_attention_heads": 64,
        "block_configs": [{"attention": {}}],
    }
    heads, _ = resolve_kv_heads(ModelConfig(config, "t"), vllm())
    assert not heads.known and "n_heads_in_group" in heads.missing[0]


def test_alias_key_present_but_null_is_unknown():
    config = {
        "model_type": "x",
        "num_hidden_layers": 1,
        "head_dim": 8,
        "num_kv_heads": None,
        "num_key_value_heads": 4,
    }
    heads, engine_heads = resolve_kv_heads(ModelConfig(config, "t"), vllm())
    assert heads.count is None and engine_heads.count is None
    assert "num_kv_heads is present but None" in heads.unknown[0]


# -- other engines, with the field names of their generated modules --------------------------------

SglMla = namedtuple("SglMla", "architecture branch conditional path symbol")
SglCondRow = namedtuple("SglCondRow", "architecture expression rule path symbol")


def SglCond(architecture, expression, path, symbol):  # noqa: N802
    """An mla_conditions row whose rule the one builder makes from its code."""
    (statement,) = parse_python(f"x = ({expression})\n", "c.py").named_children
    value = statement.named_children[0].child_by_field_name("right")
    return SglCondRow(
        architecture=architecture,
        expression=expression,
        rule=config_condition(value),
        path=path,
        symbol=symbol,
    )


KV_LORA_RANK_SET = 'getattr(self.hf_text_config, "kv_lora_rank", None) is not None'


SglMha = namedtuple("SglMha", "architecture branch mla_fields_read path symbol")
SglReg = namedtuple(
    "SglReg", "architecture module entry_name class_name resolved_via class_path also_in path"
)
CHAIN = "python/sglang/srt/configs/model_config.py"


SGLANG_KV_SCAN = tuple(
    KvHeadAlias(i, key, CHAIN, "ModelConfig.get_total_num_kv_heads")
    for i, key in enumerate(("n_head_kv", "num_kv_heads", "num_key_value_heads"))
)


def sglang(*, mla=(), conditions=(), mha=(), registry=(), sets=()) -> EngineConstraints:
    return EngineConstraints(
        engine="sglang",
        commit="c" * 40,
        commit_date="2026-08-11",
        upstream="https://example.invalid",
        facts={
            "mla_architectures": tuple(mla),
            "mla_conditions": tuple(conditions),
            "explicit_mha_architectures": tuple(mha),
            "registry_rows": tuple(registry),
            "architecture_sets": tuple(sets),
            "kv_head_aliases": SGLANG_KV_SCAN,
        },
        architecture_facts=architecture_facts("sglang"),
    )


def test_sglang_architecture_set_makes_apron_predict_mla():
    config = sample("deepseek-v3")
    config["model_type"] = "my_latent_model"
    config["architectures"] = ["MyLatentForCausalLM"]
    engines = load_constraints().replace(
        "sglang",
        sglang(
            mla=[SglMla("MyLatentForCausalLM", 2, True, CHAIN, "ModelConfig.__init__")],
            conditions=[SglCond("MyLatentForCausalLM", KV_LORA_RANK_SET, CHAIN, "s")],
            registry=[
                SglReg(
                    "MyLatentForCausalLM",
                    "my_latent",
                    "MyLatentForCausalLM",
                    "MyLatentForCausalLM",
                    "class",
                    "python/sglang/srt/models/my_latent.py",
                    (),
                    "python/sglang/srt/models/my_latent.py",
                )
            ],
        ),
    )
    result = plan(config, context=1024, constraints=engines)
    assert result.prediction.mechanism == "mla_latent"
    assert any("SGLang" in n for n in result.notes)
    assert view(result, "sglang").mechanism == "mla_latent"
    assert view(result, "vllm").mechanism == "full_attention"
    assert view(result, "vllm").differs_from_prediction
    support = next(s for s in result.support if s.engine == "sglang")
    assert support.status == "registered" and support.entries[0].citation.commit == "c" * 40


def test_sglang_condition_failing_falls_through_to_mha():
    config = sample("deepseek-v3")
    config["kv_lora_rank"] = None
    engines = load_constraints().replace(
        "sglang",
        sglang(
            mla=[SglMla("DeepseekV3ForCausalLM", 1, True, CHAIN, "s")],
            conditions=[SglCond("DeepseekV3ForCausalLM", KV_LORA_RANK_SET, CHAIN, "s")],
        ),
    )
    result = plan(config, context=8, constraints=engines)
    sgl = view(result, "sglang")
    assert sgl.mechanism == "full_attention"
    assert any("condition fails" in n for n in sgl.notes)


def test_sglang_explicit_mha_where_vllm_says_mla():
    config = sample("deepseek-v3")
    engines = load_constraints().replace(
        "sglang", sglang(mha=[SglMha("DeepseekV3ForCausalLM", 1, ("kv_lora_rank",), CHAIN, "s")])
    )
    result = plan(config, context=8, constraints=engines)
    assert result.prediction.mechanism == "mla_latent"  # vLLM's rule still says MLA
    sgl = view(result, "sglang")
    assert sgl.mechanism == "full_attention" and sgl.differs_from_prediction
    assert any("MHA explicitly" in n for n in sgl.notes)


HfArch = namedtuple(
    "HfArch",
    "architecture model_type converter_class model_arch "
    "model_arch_from gguf_arch llm_arch runtime_gguf_archs properties resolution "
    "path symbol",
)


def llamacpp(*rows) -> EngineConstraints:
    return EngineConstraints(
        engine="llamacpp",
        commit="d" * 40,
        commit_date="2026-05-16",
        upstream="https://example.invalid",
        facts={"hf_architectures": tuple(rows), "sliding_window": ()},
        architecture_facts=architecture_facts("llamacpp"),
    )


def test_llamacpp_hybrid_flag_is_reported_and_used():
    config = {
        "architectures": ["FalconH1ForCausalLM"],
        "model_type": "falcon_h1",
        "num_hidden_layers": 44,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "mamba_n_heads": None,  # null: FalconH1Config's default would fill it
    }
    row = HfArch(
        "FalconH1ForCausalLM",
        "text",
        "FalconH1Model",
        "FALCON_H1",
        "FalconH1Model",
        "falcon-h1",
        "LLM_ARCH_FALCON_H1",
        (),
        ("llm_arch_is_hybrid",),
        "resolved",
        "conversion/falcon_h1.py",
        "FalconH1Model",
    )
    result = plan(
        config, context=8, constraints=load_constraints().replace("llamacpp", llamacpp(row))
    )
    lcpp = view(result, "llamacpp")
    assert lcpp.status == "constraints used" and lcpp.mechanism is None
    assert any("classes it as hybrid" in n for n in lcpp.notes)
    # Falcon-H1 is a parallel hybrid: attention and Mamba2 in every layer, so KV on all 44
    # layers = 44 x 2 x (128 + 128) x 2 B; the state lacks its Mamba2 fields: unknown, named
    assert result.prediction.mechanism == "hybrid_ssm"
    assert result.prediction.kv_bytes_per_token == 44 * 2 * 256 * 2 == 45_056
    assert result.prediction.state_bytes_per_sequence is None
    # FalconH1Config's mamba_d_head is "auto" (mamba_d_ssm // mamba_n_heads): with no head count
    # the head size vLLM's hook passes to mamba2_state_shape cannot be known
    assert "mamba_d_head" in result.prediction.missing
    support = next(s for s in result.support if s.engine == "llamacpp")
    assert support.status == "registered"


def test_llamacpp_diffusion_flag_makes_it_unsupported():
    config = {
        "architectures": ["LLaDAModelLM"],
        "model_type": "llada",
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "head_dim": 8,
    }
    row = HfArch(
        "LLaDAModelLM",
        "text",
        "LLaDAModel",
        "LLADA",
        "LLaDAModel",
        "llada",
        "LLM_ARCH_LLADA",
        (),
        ("llm_arch_is_diffusion",),
        "resolved",
        "p",
        "s",
    )
    result = plan(
        config, context=8, constraints=load_constraints().replace("llamacpp", llamacpp(row))
    )
    assert result.prediction.mechanism == "unsupported"
    assert "diffusion" in result.prediction.unknown[0]


def test_llamacpp_not_converted():
    result = plan(
        sample("llama-3.1-8b"),
        context=8,
        constraints=load_constraints().replace("llamacpp", llamacpp()),
    )
    assert any("registers no" in n for n in view(result, "llamacpp").notes)
    assert next(s for s in result.support if s.engine == "llamacpp").status == "not registered"


def test_every_answer_cites_the_commits_used():
    result = plan(sample("llama-3.1-8b"), context=8)
    stamps = {s.engine: s for s in result.constraints}
    assert stamps["vllm"].present and len(stamps["vllm"].commit) == 40
    assert result.label == "prediction"
    assert all(c.commit == stamps["vllm"].commit for c in result.kv_heads.citations)
    registry = next(s for s in result.support if s.engine == "vllm")
    assert registry.status == "registered"
    entry = registry.entries[0]
    assert entry.citation.path == "vllm/model_executor/models/registry.py"
    assert entry.citation.symbol.startswith("_")  # the dict the row sits in
    assert "text-generation" in entry.task_group


# -- the real generated modules of the other engines, when they are present -----------------------


def test_real_sglang_lists_minicpm3_as_mla_where_vllm_does_not():
    sglang_engine = load_engine("sglang")
    if sglang_engine is None or not any(
        r.architecture == "MiniCPM3ForCausalLM" for r in sglang_engine.rows("mla_architectures")
    ):
        pytest.skip("generated/sglang absent or without MiniCPM3 in its MLA set")
    config = {
        "architectures": ["MiniCPM3ForCausalLM"],
        "model_type": "minicpm3",
        "num_hidden_layers": 62,
        "hidden_size": 2560,
        "num_attention_heads": 40,
        "num_key_value_heads": 40,
        "q_lora_rank": 768,
        "kv_lora_rank": 256,
        "qk_nope_head_dim": 64,
        "qk_rope_head_dim": 32,
        "v_head_dim": 64,
        "max_position_embeddings": 32768,
    }
    result = plan(config, context=32768)
    # SGLang: MLA latent = 62 x (256 + 32) x 2 B = 35,712 B/token
    assert result.prediction.mechanism == "mla_latent"
    assert view(result, "sglang").kv_bytes_per_token == 62 * (256 + 32) * 2 == 35_712
    # vLLM: minicpm3 is not in its list -> full attention, 62 x 40 x (96 + 64) x 2 = 793,600 B
    assert view(result, "vllm").kv_bytes_per_token == 62 * 40 * (64 + 32 + 64) * 2 == 793_600
    assert view(result, "vllm").differs_from_prediction


def test_real_llamacpp_classes_jamba_hybrid_and_mamba2_recurrent():
    engine = load_engine("llamacpp")
    if engine is None:
        pytest.skip("generated/llamacpp absent")
    jamba = view(plan(sample("jamba-v0.1"), context=8), "llamacpp")
    mamba = view(plan(sample("mamba-codestral-7b"), context=8), "llamacpp")
    assert "hybrid" in jamba.flags and "recurrent" in mamba.flags
    assert jamba.commit == engine.commit


TrtReg = namedtuple("TrtReg", "architecture class_name module also_in path")
TrtModel = namedtuple(
    "TrtModel",
    "section architecture architecture_notes model model_notes hf_examples example_notes path",
)
TrtCell = namedtuple("TrtCell", "matrix architecture feature status raw notes row_notes path")
PAGE = "docs/source/models/supported-models.md"


def trtllm(*, registry=(), models=(), cells=()) -> EngineConstraints:
    return EngineConstraints(
        engine="trtllm",
        commit="e" * 40,
        commit_date="2026-09-01",
        upstream="https://example.invalid",
        facts={
            "registry_rows": tuple(registry),
            "supported_models": tuple(models),
            "feature_matrix": tuple(cells),
        },
        architecture_facts=architecture_facts("trtllm"),
    )


def test_trtllm_documented_constraints_and_window_support():
    arch = "Gemma3ForConditionalGeneration"
    engines = load_constraints().replace(
        "trtllm",
        trtllm(
            registry=[
                TrtReg(
                    arch,
                    "Gemma3VLM",
                    "modeling_gemma3vl",
                    (),
                    "tensorrt_llm/_torch/models/modeling_gemma3vl.py",
                )
            ],
            models=[
                TrtModel(
                    "Multimodal",
                    arch,
                    ("[^2] only supported on Blackwell GPUs (SM100+)",),
                    "Gemma 3",
                    (),
                    ("google/gemma-3-27b-it",),
                    (),
                    PAGE,
                )
            ],
            cells=[
                TrtCell(
                    "Model-Feature Support Matrix",
                    arch,
                    "Sliding Window Attention",
                    "no",
                    "No",
                    (),
                    (),
                    PAGE,
                ),
                TrtCell(
                    "Model-Feature Support Matrix",
                    arch,
                    "Chunked Prefill",
                    "yes",
                    "Yes",
                    ("[^1] Chunked Prefill for MLA can only be enabled on SM90/SM100",),
                    (),
                    PAGE,
                ),
            ],
        ),
    )
    result = plan(sample("gemma-3-27b"), context=32768, constraints=engines)
    trt = view(result, "trtllm")
    assert trt.status == "constraints used" and trt.commit == "e" * 40
    assert any("Sliding Window Attention no" in n for n in trt.notes)
    assert any("expect the naive" in n for n in trt.notes)
    assert any("Blackwell" in n for n in trt.notes)
    support = next(s for s in result.support if s.engine == "trtllm")
    assert support.status == "registered"
    kinds = [e.kind for e in support.entries]
    assert kinds.count("feature_matrix") == 1  # the matrix's cells fold into one entry
    matrix = next(e for e in support.entries if e.kind == "feature_matrix")
    assert "Sliding Window Attention no" in matrix.detail
    assert any("SM90" in c for c in matrix.constraints)
    models_entry = next(e for e in support.entries if e.kind == "supported_models")
    assert models_entry.citation.path == PAGE and "Blackwell" in models_entry.constraints[0]


def test_an_engine_module_of_an_unknown_shape_does_not_take_the_plan_down():
    Odd = namedtuple("Odd", "architecture branch conditional path symbol")
    broken = sglang(mla=[Odd("DeepseekV3ForCausalLM", "not-a-number", False, "p", "s")])
    result = plan(
        sample("deepseek-v3"), context=8, constraints=load_constraints().replace("sglang", broken)
    )
    sgl = view(result, "sglang")
    assert sgl.mechanism is None and any(
        "could not interpret generated/sglang" in n for n in sgl.notes
    )
    assert result.prediction.mechanism == "mla_latent"  # vLLM's rule still answers


@pytest.mark.parametrize(
    ("default", "config", "expected"),
    [
        ("True", {}, True),  # getattr(cfg, "use_mla", True): absent reads as true
        ("True", {"use_mla": False}, False),
        ("True", {"use_mla": 1}, True),
        ("False", {}, False),
        (None, {}, None),  # no default: SGLang's read would raise, so apron does not know
        (None, {"use_mla": True}, True),
    ],
)
def test_sglang_condition_uses_its_truth_when_absent(default, config, expected):
    from apron.engines.sglang import mla_decision

    arch = "DeepseekVL2ForCausalLM"
    read_default = f", {default}" if default is not None else ""
    engine = sglang(
        mla=[SglMla(arch, 5, True, CHAIN, "s")],
        conditions=[
            SglCond(arch, f'getattr(self.hf_text_config, "use_mla"{read_default})', CHAIN, "s")
        ],
    )
    decision = mla_decision(ModelConfig({"architectures": [arch], **config}, "t"), engine)
    assert decision is not None and decision.is_mla is expected


def gate(scope: str, condition: tuple, requires: tuple, other: tuple = ()):
    record = records.MlaGate(
        scope=scope,
        condition=condition,
        requires_non_null=requires,
        other_conditions=other,
        path=CONVERTOR,
        symbol="B.is_deepseek_mla",
    )
    return MlaGateRow(**record.model_dump())


V4_GATES = (
    gate("main", ("has", "compress_ratios"), ("head_dim",)),
    gate("main", ("not", ("has", "compress_ratios")), ("kv_lora_rank",)),
)


@pytest.mark.parametrize(
    ("gates", "config", "expected"),
    [
        (V4_GATES, {"kv_lora_rank": 512}, True),
        (V4_GATES, {"kv_lora_rank": None}, False),
        (V4_GATES, {"compress_ratios": [1], "kv_lora_rank": 512}, False),  # needs head_dim
        (V4_GATES, {"compress_ratios": [1], "head_dim": 512}, True),
        ((gate("main", (), ("kv_lora_rank",)),), {"kv_lora_rank": 8}, True),
        ((gate("main", (), ("kv_lora_rank",), ("opaque: x",)),), {"kv_lora_rank": 8}, None),
        (  # a condition on what this apron does not have (a name no environment gives)
            (MlaGateRow("main", "?", ("<", "n_unread", 1), (), (), CONVERTOR, "B"),),
            {},
            None,
        ),
    ],
)
def test_mla_gates_evaluate_their_condition(gates, config, expected):
    from apron.engines.vllm import mla_decision

    engine = vllm()._replace(facts={**vllm().facts, "mla_gates": gates})
    # deepseek_v4 (vLLM's DeepseekV4Config sets no head_dim; transformers' DeepseekV3Config
    # derives head_dim = qk_rope_head_dim, which would always satisfy the gate)
    decision = mla_decision(ModelConfig({"model_type": "deepseek_v4", **config}, "t"), engine)
    assert decision is not None and decision.is_mla is expected
