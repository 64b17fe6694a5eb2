"""Against a real vLLM checkout (APRON_MIRROR_VLLM); skipped when it is not set."""

from __future__ import annotations

import shutil

import pytest

from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.pins import load_pin
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import REPO_ROOT, mirror

pytestmark = pytest.mark.real_mirror

PIN = "0231dd5467c61dca76f66269b6298a43772b3519"  # 2026-07-24


@pytest.fixture
def vllm_mirror():
    path = mirror("vllm")
    if path is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    return path


def test_extract_at_pin_matches_committed_generated(tmp_path, vllm_mirror):
    project = ProjectPaths(tmp_path / "p")
    (project.root).mkdir()
    shutil.copytree(REPO_ROOT / "pins", project.pins)
    (project.generated / "vllm").mkdir(parents=True)
    assert load_pin(project.pins, "vllm").commit == PIN
    result = run(ENGINES["vllm"], project, commit=None, source=vllm_mirror)
    committed = REPO_ROOT / "generated" / "vllm"
    for path in sorted((project.generated / "vllm").iterdir()):
        assert path.read_text() == (committed / path.name).read_text(), path.name
    facts = result.facts
    mla = {r.model_type for r in facts.fact("mla_model_types").records if r.scope == "main"}
    assert {"deepseek_v3", "deepseek_v4", "kimi_k2", "glm_moe_dsa", "bailing_hybrid"} <= mla
    assert {"bailing_hybrid_mtp", "longcat_flash_ngram"} <= mla  # new since 2026-05-19
    aliases = [r.key for r in facts.fact("kv_head_aliases").records]
    assert aliases == [
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
        "multi_query_group_num",
        "num_attention_groups",
    ]
    registry = {r.architecture: r for r in facts.fact("registry_rows").records}
    assert registry["WhisperForConditionalGeneration"].section == "Encoder-decoder"
    assert registry["DeepseekV4ForCausalLM"].module == "vllm.models.deepseek_v4"
    # moved to _PREVIOUSLY_SUPPORTED_MODELS between 2026-05-19 and the pin: no longer registered
    assert not {"AquilaForCausalLM", "BaichuanForCausalLM", "BambaForCausalLM"} & registry.keys()
    assert registry["Olmo2ForCausalLM"].task_group == "transformers-supported"
    overrides = {r.model_type for r in facts.fact("kv_head_overrides").records}
    assert "moss_audio" in overrides


def test_structured_rules_at_pin(tmp_path, vllm_mirror):
    """The structured fields of the pin's rules, checked by hand against the convertor source."""
    project = ProjectPaths(tmp_path / "p")
    project.root.mkdir()
    shutil.copytree(REPO_ROOT / "pins", project.pins)
    project.generated.mkdir()
    facts = run(ENGINES["vllm"], project, commit=None, source=vllm_mirror, write=False).facts
    overrides = {r.model_type: r for r in facts.fact("kv_head_overrides").records}
    falcon = overrides["falcon"]
    assert falcon.when == (
        "and",
        ("not", ("hpget", "new_decoder_architecture", False)),
        ("hpget", "multi_query", False),
    )
    assert (falcon.gives_constant, falcon.otherwise) == (1, "base scan")
    dbrx = overrides["dbrx"]
    assert (dbrx.kind, dbrx.gives_key, dbrx.otherwise_key) == (
        "reads",
        "attn_config.kv_n_heads",
        "num_attention_heads",
    )
    assert overrides["nemotron-nas"].derived_from == "block_configs"
    gates = {g.when: g for g in facts.fact("mla_gates").records}
    has = "'compress_ratios' in hparams"
    assert gates[has].condition == ("has", "compress_ratios")
    assert gates[has].requires_non_null == ("head_dim",)
    assert gates[f"not ({has})"].requires_non_null == ("kv_lora_rank",)


def test_older_layouts_extract(tmp_path, vllm_mirror):
    """mid-2025 (vllm/config.py), 2025-08..09 (vllm/config/__init__.py) and late-2025
    (vllm/config/model.py) layouts, with the inline "*" rule and its exclusion as fields."""
    project = ProjectPaths(tmp_path / "p")
    project.root.mkdir()
    shutil.copytree(REPO_ROOT / "pins", project.pins)
    project.generated.mkdir()
    pin = load_pin(project.pins, "vllm")
    assert pin.commit
    for commit, path in [
        ("7f280d69c98e560427d2cbc9c3c3c13a83510dca", "vllm/config.py"),
        ("55602bb2e695108e35501dfcd5890e7664c31495", "vllm/config/__init__.py"),
        ("eaf81485eda13efc10e1c38f4094978eae04e77f", "vllm/config/model.py"),
    ]:
        result = run(ENGINES["vllm"], project, commit=commit, source=vllm_mirror, write=False)
        overrides = result.facts.fact("kv_head_overrides").records
        assert {s.path for s in result.facts.fact("kv_head_overrides").sources} == {path}
        words = "1 when hparams.get('multi_query', False)"
        assert ("*", words) in {(r.model_type, r.rule) for r in overrides}
        star = next(r for r in overrides if r.rule == words)
        assert star.when == ("hpget", "multi_query", False)
        falcons = ("list", ("str", "falcon"), ("str", "RefinedWeb"), ("str", "RefinedWebModel"))
        assert star.excludes == (
            "and",
            ("in", ("hpget", "model_type"), falcons),
            ("hpget", "new_decoder_architecture", False),
        )
        assert not [r for r in overrides if r.kind == "opaque"], commit
