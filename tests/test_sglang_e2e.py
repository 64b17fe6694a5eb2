"""SGLang end to end: temp git repo (2025 docs layout, then 2026) -> pipeline.run -> generated/."""

from __future__ import annotations

import subprocess
import sys

import pytest

from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import MissingPathError
from tests.conftest import write_pin
from tests.sglang_miniatures import MODEL_CONFIG_PATH, NEW_DOCS, tree_2025, tree_2026

SGLANG = ENGINES["sglang"]
URL = "https://github.com/sgl-project/sglang"


@pytest.fixture
def sglang_repo(make_repo):
    return make_repo(
        [
            (tree_2025(), "2025: docs/supported_models/*.md", "2025-10-01T10:00:00+00:00"),
            (
                tree_2026(),
                "2026: docs moved to mdx, chain grows (#42)",
                "2026-08-11T10:00:00+00:00",
            ),
            ({MODEL_CONFIG_PATH: None}, "model_config.py moved away", "2026-09-01T10:00:00+00:00"),
        ],
        name="sglang",
    )


def generated_bytes(project):
    root = project.generated / "sglang"
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def test_extract_both_layouts_and_upgrade_diff(project, sglang_repo):
    repo, shas = sglang_repo
    write_pin(project, "sglang", URL, shas[0], "2025-10-01")
    first = run(SGLANG, project, commit=None, source=str(repo))
    docs_paths = {s.path for s in first.facts.fact("docs_table_rows").sources}
    assert docs_paths == {
        "docs/supported_models/generative_models.md",
        "docs/supported_models/multimodal_language_models.md",
    }
    mla = (project.generated / "sglang" / "mla_architectures.py").read_text()
    assert f"# commit: {shas[0]} (2025-10-01)" in mla
    assert '"MiniCPM3ForCausalLM"' in mla and "Pixtral" not in mla

    second = run(SGLANG, project, commit=shas[1], source=str(repo))
    assert {s.path for s in second.facts.fact("docs_table_rows").sources} == {
        f"{NEW_DOCS}/generative_models.mdx",
        f"{NEW_DOCS}/multimodal_language_models.mdx",
        f"{NEW_DOCS}/reward_models.mdx",
    }
    mla_diff = next(d for d in second.diff.facts if d.fact == "mla_architectures")
    added = {r.architecture for r in mla_diff.added}
    assert added == {
        "DeepseekV3ForCausalLMNextN",
        "PixtralForConditionalGeneration",
        "DeepseekVL2ForCausalLM",
    }
    mha = (project.generated / "sglang" / "explicit_mha_architectures.py").read_text()
    assert "DeepseekV4ForCausalLM" in mha and "compress_ratios" in mha
    readme = (project.generated / "sglang" / "README.md").read_text()
    assert "## Documented vs registered" in readme and str(repo) not in readme


def test_rerun_is_byte_identical_and_imports_without_extractors(project, sglang_repo):
    repo, shas = sglang_repo
    write_pin(project, "sglang", URL, shas[1])
    run(SGLANG, project, commit=None, source=str(repo))
    once = generated_bytes(project)
    run(SGLANG, project, commit=None, source=str(repo))
    assert generated_bytes(project) == once
    code = (
        # the temp project's generated/ answers for the apron.generated namespace
        "import sys, apron.generated as g\n"
        f"g.__path__.insert(0, {str(project.generated)!r})\n"
        "import apron.generated.sglang.mla_architectures as m, apron.generated.sglang.mla_conditions as c\n"
        "import apron.generated.sglang.registry_rows as r\n"
        "assert {x.architecture for x in c.ROWS} == "
        "{'PixtralForConditionalGeneration', 'DeepseekVL2ForCausalLM'}\n"
        "assert not any(k.startswith(('apron.extractors', 'libcst', 'tree_sitter', 'markdown_it')) "
        "for k in sys.modules)\n"
        "print(len(m.ROWS), len(r.ROWS))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["6", "8"]


def test_failed_extraction_leaves_generated_untouched(project, sglang_repo):
    repo, shas = sglang_repo
    write_pin(project, "sglang", URL, shas[1])
    run(SGLANG, project, commit=None, source=str(repo))
    before = generated_bytes(project)
    with pytest.raises(MissingPathError) as err:
        run(SGLANG, project, commit=shas[2], source=str(repo))
    message = str(err.value)
    assert MODEL_CONFIG_PATH in message and shas[2] in message and "engine: sglang" in message
    assert generated_bytes(project) == before
