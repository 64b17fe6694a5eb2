"""Readings lost: a bump whose new extraction drops a row whose key is still in the file, or
turns a value into unknown, says so first in the body and exits with its own code (4)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.bump import READINGS_LOST_EXIT, plan_bump, render_pr_body
from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.report.readings_lost import code_only
from tests.conftest import write_pin
from tests.vllm_miniatures import (
    MODELS_CONFIG_PATH,
    MODELS_CONFIG_V1,
    REGISTRY_PATH,
    REGISTRY_V1,
    tree_v1,
)

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
runner = CliRunner()

# The row is still there, in a shape the registry reader cannot read (a call, not a tuple).
UNREADABLE_ROW = REGISTRY_V1.replace(
    '"DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),',
    '"DeepseekV3ForCausalLM": _row("deepseek_v2", "DeepseekV3ForCausalLM"),',
)
# The row is gone from the file: a real removal, not a lost reading.
REMOVED_ROW = REGISTRY_V1.replace(
    '    "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),\n', ""
)
# The row is commented out (vLLM b1c1fe35 -> 9aaf83ef did so to MLPSpeculatorPreTrainedModel):
# the key survives only in a comment, so it is a removal.
COMMENTED_ROW = REGISTRY_V1.replace(
    '    "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),\n',
    '    # "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),\n',
)
# The key survives only in a docstring: a string that is not code.
DOCSTRING_ROW = (
    REMOVED_ROW + '\n\ndef _note():\n    """DeepseekV3ForCausalLM moved out of tree."""\n'
)

# The default is a call: the reader records `unknown` where it read float32.
UNREADABLE_DEFAULT = MODELS_CONFIG_V1.replace("cls.DEFAULT_MAMBA_SSM_CACHE_DTYPE", "pick_default()")


@pytest.fixture
def bump_to(project, make_repo, monkeypatch):
    def make(changed: dict[str, str]):
        repo, shas = make_repo(
            [
                (tree_v1(), "v1", "2026-03-02T10:00:00+00:00"),
                (changed, "upstream edit", "2026-04-01T10:00:00+00:00"),
            ]
        )
        write_pin(project, "vllm", URL, shas[0], "2026-03-02")
        run(VLLM, project, commit=None, source=str(repo))
        monkeypatch.setenv("APRON_SOURCE_VLLM", str(repo))
        return plan_bump(VLLM, project, to=shas[1], source=None, with_impact=False), shas

    return make


def test_a_dropped_row_whose_key_is_still_in_the_file_is_a_lost_reading(bump_to):
    assert UNREADABLE_ROW != REGISTRY_V1
    plan, _ = bump_to({REGISTRY_PATH: UNREADABLE_ROW})
    dropped = [r for r in plan.readings_lost if r.kind == "dropped"]
    # the class flags are read for the registry's rows: they lose the row too
    assert [(r.fact, r.key) for r in dropped] == [
        ("registry_rows", "DeepseekV3ForCausalLM"),
        ("model_class_flags", "DeepseekV3ForCausalLM"),
    ]
    line = 1 + UNREADABLE_ROW[: UNREADABLE_ROW.index('"DeepseekV3ForCausalLM": _row')].count("\n")
    assert dropped[0].where == f"{REGISTRY_PATH} line {line}"
    assert dropped[0].line("vLLM") == (
        "vLLM: Registry rows: DeepseekV3ForCausalLM (text-generation) is no longer read, but its "
        f"key is still in the code at {REGISTRY_PATH} line {line} (`registry_rows`)"
    )
    body = render_pr_body(plan)
    assert body.index("## Readings lost") < body.index("DeepseekV3ForCausalLM")
    assert body.index("## Readings lost") < min(
        i
        for i in (body.find("\n### "), body.find("\n## ", body.index("## Readings lost") + 3))
        if i >= 0
    )


@pytest.mark.parametrize("registry", [REMOVED_ROW, COMMENTED_ROW, DOCSTRING_ROW])
def test_a_removed_row_is_a_removal_not_a_lost_reading(bump_to, registry):
    plan, _ = bump_to({REGISTRY_PATH: registry})
    assert plan.readings_lost == []
    assert "## Readings lost" not in render_pr_body(plan)


@pytest.mark.parametrize(
    ("path", "text", "line"),
    [
        ("a.py", 'x = 1  # "K"\n"""K"""\ny = "K"\n', 3),  # a comment and a docstring are not code
        ("a.cpp", "int k; // K\n/* K\n */ int K;\n", 3),
        ("a.md", "<!-- K\n-->\n| K |\n", 3),
    ],
)
def test_only_code_is_searched_for_a_key(path, text, line):
    code = code_only(path, text)
    assert len(code) == len(text) and code.count("\n") == text.count("\n")  # lines kept
    assert code.count("K") == 1 and code.splitlines()[line - 1].count("K") == 1


def test_a_value_turned_unknown_is_a_lost_reading(bump_to):
    plan, _ = bump_to({MODELS_CONFIG_PATH: UNREADABLE_DEFAULT})
    turned = [r for r in plan.readings_lost if r.kind == "turned unknown"]
    assert [(r.fact, r.key) for r in turned] == [
        ("mamba_ssm_dtype_defaults", "HybridForCausalLM"),
        ("mamba_ssm_dtype_defaults", "HybridVisionModel"),
    ]
    assert turned[0].detail == "it was 'float32', now unknown"


def test_bump_with_a_lost_reading_exits_4_and_still_writes_the_body(bump_to, project, tmp_path):
    plan, shas = bump_to({REGISTRY_PATH: UNREADABLE_ROW})
    root = str(project.root)
    body = tmp_path / "body.md"
    result = runner.invoke(
        app,
        ["bump", "--engine", "vllm", "--to", shas[1], "--pr-body", str(body), "--root", root],
    )
    assert result.exit_code == READINGS_LOST_EXIT == 4, result.output
    assert "readings lost" in result.output
    assert body.read_text().lstrip().startswith("#")
    assert "## Readings lost" in body.read_text()


def test_bump_without_lost_readings_exits_0(bump_to, project):
    plan, shas = bump_to({REGISTRY_PATH: REMOVED_ROW})
    root = str(project.root)
    result = runner.invoke(app, ["bump", "--engine", "vllm", "--to", shas[1], "--root", root])
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------ extract check, against generated/


def _dropping(row_name: str):
    """The vLLM registry reader, changed to drop one row it reads (an extractor regression)."""
    import importlib

    module = importlib.import_module("apron.extractors.vllm.registry_rows")  # the package's name is
    # the function

    def read(text: str, path: str):
        rows, warnings = module.registry_rows(text, path)
        return [r for r in rows if r.architecture != row_name], warnings

    return read


def test_check_lists_a_reading_an_extractor_change_lost_first_and_exits_5(
    project, make_repo, monkeypatch, tmp_path
):
    from apron.extractors.vllm import registry_facts  # the module whose adapter reads the registry

    repo, shas = make_repo([(tree_v1(), "v1", "2026-03-02T10:00:00+00:00")])
    write_pin(project, "vllm", URL, shas[0], "2026-03-02")
    run(VLLM, project, commit=None, source=str(repo))
    monkeypatch.setattr(registry_facts, "registry_rows", _dropping("DeepseekV3ForCausalLM"))
    monkeypatch.setenv("APRON_CACHE_DIR", str(tmp_path / "fresh-cache"))  # no cached facts
    result = runner.invoke(
        app, ["check", "--engine", "vllm", "--source", str(repo), "--root", str(project.root)]
    )
    assert result.exit_code == 5, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "vllm: differs: 2 readings lost (suspected misreads, not upstream changes):"
    )
    assert lines[1].startswith(
        "  Registry rows: DeepseekV3ForCausalLM (text-generation) is no longer read, but its key "
        f"is still in the code at {REGISTRY_PATH} line "
    )
    assert lines[2].startswith(
        "  Model-class flags: DeepseekV3ForCausalLM attn_type=decoder is no longer read, but"
    )
    assert lines[3].startswith("differs: ") and "vllm/registry_rows.py" in lines[3]


def test_check_of_a_plain_difference_exits_1_without_readings_lost(
    project, make_repo, monkeypatch, tmp_path
):
    repo, shas = make_repo([(tree_v1(), "v1", "2026-03-02T10:00:00+00:00")])
    write_pin(project, "vllm", URL, shas[0], "2026-03-02")
    run(VLLM, project, commit=None, source=str(repo))
    readme = project.generated / "vllm" / "README.md"
    readme.write_text(readme.read_text() + "\nan edit by hand\n")
    result = runner.invoke(
        app, ["check", "--engine", "vllm", "--source", str(repo), "--root", str(project.root)]
    )
    assert result.exit_code == 1, result.output
    assert "readings lost" not in result.output
    assert "differs: vllm/README.md" in result.output
