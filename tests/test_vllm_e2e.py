"""vLLM end to end: temp git repos -> extract -> generated/, across an upgrade and a layout switch."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError
from tests.conftest import write_pin
from tests.vllm_class_miniatures import interface_files
from tests.vllm_miniatures import (
    CONFIG_SINGLE_PATH,
    CONVERTOR_PATH,
    CONVERTOR_V2,
    REGISTRY_PATH,
    REGISTRY_V2,
    tree_v1,
    tree_v2_old_layout,
)
from tests.vllm_serving_miniatures import serving_files

VLLM = ENGINES["vllm"]
runner = CliRunner()


@pytest.fixture
def vllm_repo(make_repo):
    return make_repo(
        [
            (tree_v1(), "v1: convertor layout", "2026-03-02T10:00:00+00:00"),
            (
                {CONVERTOR_PATH: CONVERTOR_V2, REGISTRY_PATH: REGISTRY_V2},
                "v2: kimi, aliases (#123)",
                "2026-04-01T10:00:00+00:00",
            ),
            (
                tree_v2_old_layout(),
                "v3: back to the single-file layout",
                "2026-05-01T10:00:00+00:00",
            ),
        ]
    )


def snapshot_files(project):
    root = project.generated
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def cli(*args):
    return runner.invoke(app, list(args))


def test_extract_writes_generated_modules_with_provenance(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0], "2026-03-02")
    result = run(VLLM, project, commit=None, source=str(repo))
    assert result.facts.commit == shas[0] and result.facts.commit_date == "2026-03-02"
    module = (project.generated / "vllm" / "mla_model_types.py").read_text()
    assert f"# commit: {shas[0]} (2026-03-02)" in module
    assert "# upstream: https://github.com/vllm-project/vllm" in module
    assert f"# source: {CONVERTOR_PATH} @ blob " in module
    assert str(repo) not in module  # no absolute paths in generated files
    readme = (project.generated / "vllm" / "README.md").read_text()
    assert "| architecture | task_group |" in readme


def test_generated_modules_import_without_extractor_code(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    code = (
        # the temp project's generated/ answers for the apron.generated namespace
        "import sys, apron.generated as g\n"
        f"g.__path__.insert(0, {str(project.generated)!r})\n"
        "import apron.generated.vllm.mla_model_types as m, apron.generated.vllm.registry_rows as r\n"
        "assert {x.model_type for x in m.ROWS} == {'deepseek_v2', 'deepseek_v3'}\n"
        "assert not any(k.startswith(('apron.extractors', 'libcst', 'tree_sitter', 'git')) for k in sys.modules)\n"
        "print(len(r.ROWS))\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "10"


def test_upgrade_diff_shows_what_changed(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    run(VLLM, project, commit=shas[0], source=str(repo))
    second = run(VLLM, project, commit=shas[1], source=str(repo))
    by_fact = {d.fact: d for d in second.diff.facts}
    assert [r.model_type for r in by_fact["mla_model_types"].added] == ["kimi_k2"]
    assert [r.key for r in by_fact["kv_head_aliases"].added] == ["num_attention_groups"]
    assert {r.architecture for r in by_fact["registry_rows"].added} == {
        "OpenVLAForActionPrediction"
    }
    assert {r.architecture for r in by_fact["registry_rows"].removed} == {
        "LlavaForConditionalGeneration"
    }
    moved = {
        old.architecture: (old.task_group, new.task_group)
        for old, new in by_fact["registry_rows"].changed
    }
    assert moved == {"Qwen2Model": ("embedding", "multimodal")}
    assert [r.model_type for r in by_fact["kv_head_overrides"].removed] == ["mpt"]
    gates = {(g.when, g.requires_non_null) for g in by_fact["mla_gates"].added}
    assert ("'compress_ratios' in hparams", ("head_dim",)) in gates


def test_layout_switch_to_single_file_config(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[1])
    run(VLLM, project, commit=shas[1], source=str(repo))
    third = run(VLLM, project, commit=shas[2], source=str(repo))
    overrides = third.facts.fact("kv_head_overrides")
    assert {s.path for s in overrides.sources} == {CONFIG_SINGLE_PATH}
    rules = {(r.model_type, r.rule) for r in overrides.records}
    assert (
        "*",
        "1 when hparams.get('multi_query', False)",
    ) in rules  # applies to every model type again
    by_fact = {d.fact: d for d in third.diff.facts}
    assert [r.model_type for r in by_fact["kv_head_overrides"].removed if r.model_type == "falcon"]


def test_two_runs_at_one_commit_are_byte_identical(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[1])
    run(VLLM, project, commit=None, source=str(repo))
    first = snapshot_files(project)
    run(VLLM, project, commit=None, source=str(repo))
    assert snapshot_files(project) == first
    again = run(VLLM, project, commit=None, source=str(repo))
    assert again.diff.empty


def test_failed_run_leaves_generated_untouched(project, make_repo):
    repo, shas = make_repo(
        [
            (tree_v1(), "good"),
            ({REGISTRY_PATH: None}, "registry moved away"),
            ({REGISTRY_PATH: REGISTRY_V2.replace("_VLLM_MODELS", "_ALL")}, "anchor renamed"),
            ({REGISTRY_PATH: REGISTRY_V2, CONVERTOR_PATH: "class Broken(:\n"}, "malformed python"),
        ]
    )
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    before = snapshot_files(project)
    with pytest.raises(MissingPathError) as missing:
        run(VLLM, project, commit=shas[1], source=str(repo))
    assert missing.value.paths == (
        "vllm/model_executor/models/registry.py",
        "vllm/models/registry.py",
    )
    assert (missing.value.engine, missing.value.commit) == ("vllm", shas[1])
    with pytest.raises(AnchorError) as anchor:
        run(VLLM, project, commit=shas[2], source=str(repo))
    assert anchor.value.anchor == "_VLLM_MODELS"
    with pytest.raises(Exception, match="does not parse as Python"):
        run(VLLM, project, commit=shas[3], source=str(repo))
    assert snapshot_files(project) == before


def test_layout_with_no_anchor_names_every_path_tried(project, make_repo):
    repo, shas = make_repo(
        [
            (
                {
                    **{p: t for p, t in tree_v1().items() if p.startswith("docs/")},
                    REGISTRY_PATH: REGISTRY_V2,
                    **interface_files(),
                    **serving_files(),
                    "vllm/config.py": "class ModelConfig:\n    x = 1\n",
                },
                "no convertor anchors",
            )
        ]
    )
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    with pytest.raises(AnchorError) as info:
        run(VLLM, project, commit=None, source=str(repo))
    assert info.value.paths == (
        CONVERTOR_PATH,
        "vllm/config/model.py",
        "vllm/config/__init__.py",
        CONFIG_SINGLE_PATH,
    )
    # the first convertor fact to run names the anchor in every layout
    assert info.value.anchor.startswith("ModelArchConfigConvertorBase.")
    assert " or ModelConfig." in info.value.anchor


# ------------------------------------------------------------------ CLI


def test_cli_success_prints_summary(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    result = cli("--engine", "vllm", "--source", str(repo), "--root", str(project.root))
    assert result.exit_code == 0, result.output
    assert "mla_model_types: 3 (new)" in result.output
    assert "registry_rows: 10 (new)" in result.output
    result = cli(
        "--engine", "vllm", "--commit", shas[1], "--source", str(repo), "--root", str(project.root)
    )
    assert result.exit_code == 0
    assert "mla_model_types: 4 (+1 against generated/)" in result.output


def test_cli_abbreviated_sha_resolves_from_local_source(project, vllm_repo):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    result = cli(
        "--engine",
        "vllm",
        "--commit",
        shas[1][:9],
        "--source",
        str(repo),
        "--root",
        str(project.root),
        "--dry-run",
    )
    assert result.exit_code == 0, result.output
    assert shas[1] in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "nosuch"], "unknown engine 'nosuch'"),
        (["--engine", "vllm", "--commit", "--upload-pack=touch"], "is not a hexadecimal SHA"),
        (["--engine", "vllm", "--commit", "zzzz"], "is not a hexadecimal SHA"),
        (
            ["--engine", "vllm", "--source", "ssh://host/repo"],
            "only https://, file:// and local paths",
        ),
        (["--engine", "vllm", "--commit", "a" * 40], "commit not found at the source"),
        (["--engine", "vllm", "--commit", "abcdef12"], "give the full 40-hex SHA"),
    ],
)
def test_cli_errors_exit_nonzero_with_one_message(project, vllm_repo, args, message):
    repo, shas = vllm_repo
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0])
    if "--source" not in args:
        args = [*args, "--source", str(repo)]
    result = cli(*args, "--root", str(project.root))
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (project.generated / "vllm").exists()


def test_cli_unreachable_source(project, tmp_path):
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", "a" * 40)
    result = cli(
        "--engine", "vllm", "--source", str(tmp_path / "nowhere"), "--root", str(project.root)
    )
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_cli_malformed_pin(project, vllm_repo):
    repo, _ = vllm_repo
    (project.pins / "vllm.toml").write_text('url = "ftp://x"\ncommit = "abc"\n')
    result = cli("--engine", "vllm", "--source", str(repo), "--root", str(project.root))
    assert result.exit_code == 2
    for part in (
        "must start with https:// or file://",
        "full 40-hex-digit SHA",
        "date: missing field",
    ):
        assert part in result.output


def test_engine_aliases_map_to_engine_ids():
    from apron.extractors.engines import ALIASES, engine_by_id

    assert ALIASES["llama.cpp"] == "llamacpp" and ALIASES["tensorrt-llm"] == "trtllm"
    assert engine_by_id("VLLM") is VLLM


def test_generated_package_is_importable_in_the_checkout():
    assert importlib.util.find_spec("apron.generated.vllm.mla_model_types") is not None
