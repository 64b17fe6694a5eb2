"""llama.cpp end to end: temp git repos -> extract -> generated/, across both layout switches;
and the real mirror (APRON_MIRROR_LLAMACPP) at the pin and at two older commits."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES, engine_by_id
from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import REPO_ROOT, mirror, write_pin
from tests.llamacpp_miniatures import ARCH_CPP, ARCH_CPP_V2, SCRIPT, tree_v1, tree_v2

LLAMACPP = ENGINES["llamacpp"]
UPSTREAM = "https://github.com/ggml-org/llama.cpp"


@pytest.fixture
def llamacpp_repo(make_repo):
    return make_repo(
        [
            (
                tree_v1(),
                "v1: one converter script, one hparams switch",
                "2026-05-01T10:00:00+00:00",
            ),
            (
                tree_v2(),
                "v2: conversion/ package, per-model loaders, rs_rollback (#2)",
                "2026-05-16T10:00:00+00:00",
            ),
        ]
    )


def generated_files(project):
    root = project.generated / "llamacpp"
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def test_engine_is_registered_with_its_aliases():
    assert engine_by_id("llama.cpp") is LLAMACPP and LLAMACPP.title == "llama.cpp"


def test_extract_two_commits_writes_deterministic_modules(project, llamacpp_repo):
    repo, shas = llamacpp_repo
    write_pin(project, "llamacpp", UPSTREAM, shas[0], "2026-05-01")
    first = run(LLAMACPP, project, commit=None, source=str(repo))
    assert first.facts.commit == shas[0] and first.facts.commit_date == "2026-05-01"
    files_v1 = generated_files(project)
    assert set(files_v1) == {
        "README.md",
        "constraints.json",
        "__init__.py",
        "warnings_found.py",
        "arch_names.py",
        "class_predicates.py",
        "class_set_listed.py",
        "class_set_members.py",
        "hf_architectures.py",
        "sliding_window.py",
        "hparams_formulas.py",
        "memory_rules.py",
        "memory_callbacks.py",
        "cache_sizes.py",
        "context_defaults.py",
        "ggml_type_sizes.py",
        "recurrent_layers.py",
        "gguf_writer_keys.py",
        "converter_hparams.py",
        "hparams_steps.py",
        "tensor_shapes.py",
        "limits.py",
    }
    module = files_v1["class_set_members.py"].decode()
    assert f"# commit: {shas[0]} (2026-05-01)" in module
    assert f"# source: {ARCH_CPP} @ blob " in module and str(repo) not in module
    readme = files_v1["README.md"].decode()
    assert (
        "| llm_arch_supports_sm_tensor | True | switch | False | True | listed architectures "
        "return false; default true |"
    ) in readme
    assert "absent at this commit: the function does not exist (not an empty set)" in readme
    assert "hf_architectures.py" in files_v1 and SCRIPT in files_v1["hf_architectures.py"].decode()

    # same commit again: byte-identical
    run(LLAMACPP, project, commit=None, source=str(repo))
    assert generated_files(project) == files_v1

    # the upgrade: both layouts switch, a predicate appears
    second = run(LLAMACPP, project, commit=shas[1], source=str(repo))
    delta = {d.fact: d for d in second.diff.facts}
    assert [r.identity() for r in delta["class_set_members"].added] == [
        ("llm_arch_is_diffusion", "LLM_ARCH_DREAM"),
        ("llm_arch_supports_rs_rollback", "LLM_ARCH_QWEN3NEXT"),
        ("llm_arch_supports_rs_rollback", "LLM_ARCH_TOYMODEL"),
    ]
    predicates = {r.predicate: r for r in second.facts.fact("class_predicates").records}
    assert predicates["llm_arch_supports_rs_rollback"].present
    hf = second.facts.fact("hf_architectures")
    assert {s.path for s in hf.sources} >= {
        "conversion/__init__.py",
        "conversion/llama.py",
        "gguf-py/gguf/constants.py",
    }
    swa = {r.arch: r for r in second.facts.fact("sliding_window").records}
    assert swa["LLM_ARCH_GEMMA2"].symbol == "llama_model_gemma2::load_arch_hparams"


def test_generated_modules_import_without_extractor_code(project, llamacpp_repo):
    repo, shas = llamacpp_repo
    write_pin(project, "llamacpp", UPSTREAM, shas[1])
    run(LLAMACPP, project, commit=None, source=str(repo))
    code = (
        # the temp project's generated/ answers for the apron.generated namespace
        "import sys, apron.generated as g\n"
        f"g.__path__.insert(0, {str(project.generated)!r})\n"
        "import apron.generated.llamacpp.class_set_members as m, apron.generated.llamacpp.hf_architectures as h\n"
        "hybrid = {r.arch for r in m.ROWS if r.predicate == 'llm_arch_is_hybrid'}\n"
        "assert hybrid == {'LLM_ARCH_JAMBA', 'LLM_ARCH_QWEN3NEXT'}, hybrid\n"
        "assert not any(k.startswith(('apron.extractors', 'libcst', 'tree_sitter', 'git')) for k in sys.modules)\n"
        "print(len(h.ROWS))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "13"


def test_bad_commit_fails_closed_and_leaves_generated_untouched(project, make_repo):
    broken = ARCH_CPP_V2.replace(
        "bool llm_arch_is_hybrid(const llm_arch & arch) {",
        "bool llm_arch_is_hybrid(const llm_arch & arch) { ((",
    )
    renamed = ARCH_CPP_V2.replace(
        "bool llm_arch_supports_sm_tensor(", "bool llm_arch_supports_split("
    )
    repo, shas = make_repo(
        [
            (tree_v2(), "good", "2026-05-16T10:00:00+00:00"),
            ({ARCH_CPP: broken}, "broken predicate", "2026-05-17T10:00:00+00:00"),
            ({ARCH_CPP: renamed}, "renamed predicate", "2026-05-18T10:00:00+00:00"),
        ]
    )
    write_pin(project, "llamacpp", UPSTREAM, shas[0])
    run(LLAMACPP, project, commit=None, source=str(repo))
    before = generated_files(project)
    with pytest.raises(ParseError) as err:
        run(LLAMACPP, project, commit=shas[1], source=str(repo))
    assert (err.value.engine, err.value.commit, err.value.paths, err.value.anchor) == (
        "llamacpp",
        shas[1],
        (ARCH_CPP,),
        "llm_arch_is_hybrid",
    )
    with pytest.raises(AnchorError) as err:
        run(LLAMACPP, project, commit=shas[2], source=str(repo))
    assert err.value.commit == shas[2] and err.value.anchor == "llm_arch_supports_sm_tensor"
    assert generated_files(project) == before


# ---------------------------------------------------------------- the real mirror

PIN = "0253fb21f595246f54c192fe8332f34173be251b"
BEFORE_RS_ROLLBACK = "b81c2cdd748dc2704d5989cf03936325554c12d3"  # 2026-05-16, parent of #22673
SCRIPT_LAYOUT = "cce09f0b2b37028caf6f549c976ba16b3e8703d8"  # 2026-05-12, before conversion/


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    path = mirror("llamacpp")
    if path is None:
        pytest.skip("APRON_MIRROR_LLAMACPP is not set")
    return path, tmp_path_factory.mktemp("llamacpp-cache")


def real_project(tmp_path) -> ProjectPaths:
    project = ProjectPaths(tmp_path / "p")
    project.root.mkdir()
    shutil.copytree(REPO_ROOT / "pins", project.pins)
    project.generated.mkdir()
    return project


@pytest.mark.real_mirror
def test_real_pin_matches_committed_generated_and_known_members(tmp_path, real):
    source, cache = real
    project = real_project(tmp_path)
    result = run(LLAMACPP, project, commit=None, source=source, cache_dir=cache)
    assert result.facts.commit == PIN
    committed = REPO_ROOT / "generated" / "llamacpp"
    for path in sorted((project.generated / "llamacpp").iterdir()):
        assert path.read_text() == (committed / path.name).read_text(), path.name
    facts = result.facts
    members: dict[str, set[str]] = {}
    for row in facts.fact("class_set_members").records:
        members.setdefault(row.predicate, set()).add(row.arch)
    listed_false = {
        r.arch
        for r in facts.fact("class_set_listed").records
        if r.predicate == "llm_arch_supports_sm_tensor" and not r.returns
    }
    assert {
        "LLM_ARCH_JAMBA",
        "LLM_ARCH_QWEN3NEXT",
        "LLM_ARCH_QWEN35",
        "LLM_ARCH_KIMI_LINEAR",
    } <= members["llm_arch_is_hybrid"]
    assert members["llm_arch_is_recurrent"] == {
        "LLM_ARCH_MAMBA",
        "LLM_ARCH_MAMBA2",
        "LLM_ARCH_RWKV6",
        "LLM_ARCH_RWKV6QWEN2",
        "LLM_ARCH_RWKV7",
        "LLM_ARCH_ARWKV7",
    }
    assert members["llm_arch_is_diffusion"] == {
        "LLM_ARCH_DREAM",
        "LLM_ARCH_LLADA",
        "LLM_ARCH_LLADA_MOE",
        "LLM_ARCH_RND1",
    }
    assert members["llm_arch_supports_rs_rollback"] == {"LLM_ARCH_QWEN35", "LLM_ARCH_QWEN35MOE"}
    assert {"LLM_ARCH_DEEPSEEK2", "LLM_ARCH_MAMBA", "LLM_ARCH_KIMI_LINEAR"} <= listed_false
    assert "LLM_ARCH_DEEPSEEK2" not in members["llm_arch_supports_sm_tensor"]
    assert "LLM_ARCH_LLAMA" in members["llm_arch_supports_sm_tensor"]
    names = {r.arch: r.gguf_name for r in facts.fact("arch_names").records}
    assert names["LLM_ARCH_OPENAI_MOE"] == "gpt-oss" and len(names) >= 120
    rows = facts.fact("hf_architectures").records
    by_hf = {(r.architecture, r.model_type): r for r in rows}
    assert by_hf[("Qwen3NextForCausalLM", "text")].properties[:1] == ("llm_arch_is_hybrid",)
    assert by_hf[("LlamaForCausalLM", "text")].llm_arch == "LLM_ARCH_LLAMA"
    assert by_hf[("DeepseekV3ForCausalLM", "text")].llm_arch == "LLM_ARCH_DEEPSEEK2"
    resolved = sum(r.resolution == "resolved" for r in rows)
    assert resolved / len(rows) >= 0.95
    swa = {r.arch: r for r in facts.fact("sliding_window").records}
    assert (swa["LLM_ARCH_GEMMA2"].swa_types, swa["LLM_ARCH_GEMMA2"].period_default) == (
        ("standard",),
        2,
    )
    assert swa["LLM_ARCH_LLAMA4"].swa_types == ("none", "chunked")


@pytest.mark.real_mirror
def test_real_older_commits_absent_predicate_and_script_layout(tmp_path, real):
    source, cache = real
    project = real_project(tmp_path)
    before = run(
        LLAMACPP, project, commit=BEFORE_RS_ROLLBACK, source=source, write=False, cache_dir=cache
    ).facts
    predicates = {r.predicate: r for r in before.fact("class_predicates").records}
    assert predicates["llm_arch_supports_rs_rollback"].present is False
    assert predicates["llm_arch_is_hybrid"].member_count == 12
    script = run(
        LLAMACPP, project, commit=SCRIPT_LAYOUT, source=source, write=False, cache_dir=cache
    ).facts
    rows = script.fact("hf_architectures").records
    assert {s.path for s in script.fact("hf_architectures").sources} == {
        "convert_hf_to_gguf.py",
        "gguf-py/gguf/constants.py",
        "src/llama-arch.cpp",
    }
    assert len(rows) >= 250 and sum(r.resolution == "resolved" for r in rows) / len(rows) >= 0.95
