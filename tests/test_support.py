"""`extract support` over miniature repositories: yes (0), no (1), unknown (3) and errors (2),
by release tag and by commit, the previously-supported note, a release whose registry file sits
where no known layout looks (a precise reason, not a guess), and the llama.cpp judgement."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.support import answer_support
from apron.extractors.engines import ENGINES
from apron.extractors.git import GitSource
from apron.extractors.llamacpp.records import ArchName, ClassSetMember, HfArchitecture
from apron.extractors.llamacpp.support import judge
from apron.extractors.records import EngineFacts, FactResult
from tests.conftest import git, write_pin
from tests.test_releases import REGISTRY, registry

A, B, C = "LlamaForCausalLM", "MistralForCausalLM", "GptOssForCausalLM"


@pytest.fixture
def support_repo(make_repo):
    repo, shas = make_repo(
        [
            ({REGISTRY: registry([A, B])}, "init", "2025-01-01T00:00:00Z"),
            ({REGISTRY: registry([A, C], {B: "0.2.0"})}, "gpt-oss (#1)", "2025-01-02T00:00:00Z"),
            (
                {REGISTRY: None, "vllm/registry_elsewhere.py": registry([A, C])},
                "move the registry (#2)",
                "2025-01-03T00:00:00Z",
            ),
        ]
    )
    git(repo, "tag", "v0.1.0", shas[0])
    git(repo, "tag", "-a", "-m", "0.2.0", "v0.2.0", shas[1])
    git(repo, "tag", "v0.3.0", shas[2])
    return repo, shas


def _support(project, repo, *args: str):
    return CliRunner().invoke(
        app,
        ["support", "--engine", "vllm", "--source", str(repo), "--root", str(project.root), *args],
    )


def test_yes_no_by_release(support_repo, project):
    repo, shas = support_repo
    yes = _support(project, repo, "--arch", C, "--release", "v0.2.0")
    assert yes.exit_code == 0, yes.output
    assert yes.stdout.splitlines()[0] == f"vllm {C}: yes"
    assert f"at v0.2.0 ({shas[1]}), 2025-01-02" in yes.stdout
    assert f"decided by registry_rows: registered in {REGISTRY} _TEXT_GENERATION_MODELS" in (
        yes.stdout
    )
    no = _support(project, repo, "--arch", C, "--release", "v0.1.0")
    assert no.exit_code == 1, no.output
    assert no.stdout.splitlines()[0] == f"vllm {C}: no"


def test_no_with_the_previously_supported_note_as_json(support_repo, project):
    repo, shas = support_repo
    result = _support(project, repo, "--arch", B, "--commit", shas[1], "--json")
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert body["answer"] == "no" and body["commit"] == shas[1] and body["release"] is None
    assert body["decided_by"] == "registry_rows"
    assert body["notes"] == [
        "vLLM says: removed; vLLM lists it as previously supported up to 0.2.0"
    ]


def test_pin_is_the_default_and_class_facts_that_cannot_be_read_are_named(support_repo, project):
    repo, shas = support_repo
    write_pin(project, "vllm", f"file://{repo}", shas[1], "2025-01-02")
    result = _support(project, repo, "--arch", A, "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["commit"] == shas[1]
    # the miniature has no convertor file: the MLA list is unknown, said per fact
    assert "mla_model_types" in body["classes_unknown"]
    assert "is_deepseek_mla is not defined" in body["classes_unknown"]["mla_model_types"]


def test_moved_registry_is_unknown_with_the_paths_tried(support_repo, project):
    repo, _ = support_repo
    result = _support(project, repo, "--arch", C, "--release", "v0.3.0")
    assert result.exit_code == 3, result.output
    first, *rest = result.stdout.splitlines()
    assert first == f"vllm {C}: unknown"
    reason = "\n".join(rest)
    assert "vllm/model_executor/models/registry.py" in reason
    assert "vllm/models/registry.py" in reason and "_VLLM_MODELS" in reason


def test_errors_exit_2(support_repo, project):
    repo, _ = support_repo
    unknown_tag = _support(project, repo, "--arch", C, "--release", "v0.9.0")
    assert unknown_tag.exit_code == 2
    assert "the source has no tag 'v0.9.0'" in unknown_tag.output
    assert "nearest: v0.3.0, v0.2.0, v0.1.0" in unknown_tag.output
    bad_commit = _support(project, repo, "--arch", C, "--commit", "f" * 40)
    assert bad_commit.exit_code == 2 and "not found" in bad_commit.output
    both = _support(project, repo, "--arch", C, "--commit", "f" * 40, "--release", "v0.1.0")
    assert both.exit_code == 2 and "not both" in both.output
    gone = _support(project, repo.parent / "nowhere", "--arch", C, "--release", "v0.1.0")
    assert gone.exit_code == 2 and "does not exist" in gone.output


def test_answer_support_names_the_release_commit(support_repo, tmp_path):
    repo, shas = support_repo
    with GitSource("vllm", str(repo), cache_dir=tmp_path / "c") as source:
        answer = answer_support(ENGINES["vllm"], source, C, "", release="v0.2.0")
    assert (answer.answer, answer.commit.sha, answer.release) == ("yes", shas[1], "v0.2.0")
    assert answer.exit_code == 0


def _hf(model_type: str, resolution: str = "resolved") -> HfArchitecture:
    return HfArchitecture(
        architecture="FooForCausalLM",
        model_type=model_type,
        converter_class="FooModel",
        model_arch="FOO" if resolution == "resolved" else "",
        model_arch_from="FooModel",
        converter_mro=("FooModel",),
        gguf_arch="foo",
        llm_arch="LLM_ARCH_FOO",
        runtime_gguf_archs=(),
        properties=("llm_arch_is_hybrid",),
        resolution=resolution,
        path="convert_hf_to_gguf.py",
        symbol="FooModel",
    )


def _facts(hf_rows, names=(), members=()) -> EngineFacts:
    kinds = {k.name: k for k in ENGINES["llamacpp"].fact_kinds}
    found = {"hf_architectures": hf_rows, "arch_names": names, "class_set_members": members}
    return EngineFacts(
        engine="llamacpp",
        commit="0" * 40,
        commit_date="2026-01-01",
        upstream_url="https://example.invalid",
        facts=tuple(FactResult(kinds[n], tuple(r), ()) for n, r in found.items()),
        warnings=(),
    )


FOO_NAME = ArchName(
    arch="LLM_ARCH_FOO",
    gguf_name="foo",
    in_enum=True,
    preprocessor_condition="",
    path="src/llama-arch.cpp",
    symbol="LLM_ARCH_NAMES",
)
FOO_HYBRID = ClassSetMember(
    predicate="llm_arch_is_hybrid",
    arch="LLM_ARCH_FOO",
    gguf_name="foo",
    via="listed",
    path="src/llama-arch.cpp",
    symbol="llm_arch_is_hybrid",
)


@pytest.mark.parametrize(
    ("facts", "arch", "answer", "words", "classes"),
    [
        (_facts([_hf("text")]), "FooForCausalLM", "yes", "loads as LLM_ARCH_FOO", ("hybrid",)),
        (
            _facts([_hf("mmproj"), _hf("text", "no model_arch")]),
            "FooForCausalLM",
            "unknown",
            "join to an LLM_ARCH_* stops",
            (),
        ),
        (_facts([_hf("mmproj")]), "FooForCausalLM", "no", "only for a multimodal projector", ()),
        (_facts([]), "FooForCausalLM", "no", "does not register it", ()),
        (
            _facts([], [FOO_NAME], [FOO_HYBRID]),
            "foo",
            "yes",
            "names GGUF architecture 'foo' (LLM_ARCH_FOO)",
            ("hybrid",),
        ),
        (_facts([], [FOO_NAME]), "LLM_ARCH_FOO", "yes", "general.architecture", ()),
        (_facts([], [FOO_NAME]), "bar", "no", "LLM_ARCH_NAMES does not name it", ()),
    ],
)
def test_llamacpp_judge(facts, arch, answer, words, classes):
    found, fact, why, assigned = judge(facts, arch)
    assert found == answer and words in why and assigned == classes
    assert fact == ("arch_names" if "LLM_ARCH_NAMES names" in why else "hf_architectures") or (
        fact == "hf_architectures, arch_names" and found == "no"
    )
