"""`extract bump`, its guards, `extract check`, and the bump workflow."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.bump import plan_bump, render_pr_body, render_pr_title
from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import REPO_ROOT, assert_snapshot, git, write_pin
from tests.vllm_class_miniatures import MODEL_INFO, REGISTRY_IMPORTS
from tests.vllm_miniatures import (
    CONVERTOR_PATH,
    CONVERTOR_V2,
    REGISTRY_PATH,
    REGISTRY_V2,
    tree_v1,
)

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
runner = CliRunner()


@pytest.fixture
def upgrade(make_repo):
    tiny_registry = (
        "_TEXT_GENERATION_MODELS = {\n"
        '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n'
        '    "OpenVLAForActionPrediction": ("openvla", "OpenVLAForActionPrediction"),\n'
        "}\n\n_VLLM_MODELS = {\n    **_TEXT_GENERATION_MODELS,\n}\n"
        "_PREVIOUSLY_SUPPORTED_MODELS = {}\n_OOT_SUPPORTED_MODELS = {}\n"
    )
    tiny_registry = REGISTRY_IMPORTS + tiny_registry + MODEL_INFO
    return make_repo(
        [
            (tree_v1(), "v1", "2026-03-02T10:00:00+00:00"),
            (
                {CONVERTOR_PATH: CONVERTOR_V2, REGISTRY_PATH: REGISTRY_V2},
                "[Model] Kimi K2 as MLA, num_attention_groups alias (#4242)",
                "2026-04-01T10:00:00+00:00",
            ),
            (
                {REGISTRY_PATH: tiny_registry},
                "drop most of the registry",
                "2026-04-02T10:00:00+00:00",
            ),
        ]
    )


@pytest.fixture
def pinned(project, upgrade, monkeypatch):
    repo, shas = upgrade
    write_pin(project, "vllm", URL, shas[0], "2026-03-02")
    run(VLLM, project, commit=None, source=str(repo))
    monkeypatch.setenv("APRON_SOURCE_VLLM", str(repo))
    return project, repo, shas


def files(project: ProjectPaths) -> dict[str, bytes]:
    return {
        str(p.relative_to(project.root)): p.read_bytes()
        for root in (project.generated, project.pins)
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_bump_body_matches_snapshot(pinned):
    project, repo, shas = pinned
    plan = plan_bump(VLLM, project, to=shas[1], source=None, with_impact=False)
    assert_snapshot("bump_body_vllm.md", render_pr_body(plan), [shas[0], shas[1]])
    assert render_pr_title(plan).startswith(f"Bump vLLM to {shas[1][:12]} (2026-04-01): ")


def test_a_removed_row_says_vllm_lists_it_as_previously_supported(pinned):
    project, repo, shas = pinned
    plan = plan_bump(VLLM, project, to=shas[1], source=None, with_impact=False)
    body = render_pr_body(plan)
    assert (
        "- -LlavaForConditionalGeneration (multimodal): removed; vLLM lists it as previously "
        "supported up to 0.23.0" in body
    )
    assert "MotifForCausalLM" not in body  # listed at both commits, never a registry row
    kept = [line for line in body.splitlines() if "OpenVLAForActionPrediction" in line]
    assert kept and all("removed;" not in line for line in kept)


def test_bump_moves_pin_and_regenerates(pinned, tmp_path):
    project, repo, shas = pinned
    result = cli(
        "bump",
        "--engine",
        "vllm",
        "--to",
        shas[1],
        "--root",
        project.root,
        "--pr-title",
        tmp_path / "t.txt",
        "--pr-body",
        tmp_path / "b.md",
    )
    assert result.exit_code == 0, result.output
    assert f'commit = "{shas[1]}"' in (project.pins / "vllm.toml").read_text()
    assert 'date = "2026-04-01"' in (project.pins / "vllm.toml").read_text()
    assert '"kimi_k2"' in (project.generated / "vllm" / "mla_model_types.py").read_text()
    body = (tmp_path / "b.md").read_text()
    assert (
        "; vLLM gains 1 architecture (OpenVLAForActionPrediction), loses 1 "
        "architecture (LlavaForConditionalGeneration); rules the calculator reads: MLA model "
        "types +1; MLA gates +2, −1; KV-head alias scan +1;"
    ) in body
    assert "- +kimi_k2\n" in body
    assert "- +num_attention_groups (position 4)\n" in body
    assert "- +OpenVLAForActionPrediction (multimodal)" in body
    assert "## Calculator impact" in body


def test_noop_bump_writes_nothing_and_exits_3(pinned):
    project, repo, shas = pinned
    before = files(project)
    result = cli("bump", "--engine", "vllm", "--to", shas[0], "--root", project.root)
    assert result.exit_code == 3
    assert "nothing changed beyond the header" in result.output
    assert files(project) == before


def test_bump_defaults_to_the_source_head(pinned):
    project, repo, shas = pinned
    result = cli("bump", "--engine", "vllm", "--root", project.root, "--allow-shrink")
    assert result.exit_code == 0, result.output
    assert shas[2] in (project.pins / "vllm.toml").read_text()


def test_bump_to_a_branch_name(pinned):
    project, repo, shas = pinned
    result = cli(
        "bump", "--engine", "vllm", "--to", "main", "--root", project.root, "--allow-shrink"
    )
    assert result.exit_code == 0, result.output
    assert shas[2] in (project.pins / "vllm.toml").read_text()


def test_shrink_guard_stops_and_leaves_everything(pinned):
    project, repo, shas = pinned
    before = files(project)
    result = cli("bump", "--engine", "vllm", "--to", shas[2], "--root", project.root)
    assert result.exit_code == 2
    assert "registry_rows: 10 -> 2" in result.output
    assert "--allow-shrink" in result.output
    assert files(project) == before


def test_accepted_shrink_is_stated_at_the_top(pinned, tmp_path):
    project, repo, shas = pinned
    result = cli(
        "bump",
        "--engine",
        "vllm",
        "--to",
        shas[2],
        "--root",
        project.root,
        "--allow-shrink",
        "--pr-body",
        tmp_path / "b.md",
    )
    assert result.exit_code == 0, result.output
    body = (tmp_path / "b.md").read_text()
    assert body.startswith("> **Shrink accepted with --allow-shrink.**")
    assert "> - registry_rows: 10 -> 2" in body


def test_branch_gets_exactly_one_commit(pinned):
    project, repo, shas = pinned
    git(project.root, "init", "-q", "-b", "main")
    git(project.root, "add", "-A")
    git(project.root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    base = git(project.root, "rev-parse", "HEAD")
    result = cli(
        "bump",
        "--engine",
        "vllm",
        "--to",
        shas[1],
        "--root",
        project.root,
        "--branch",
        "apron/bump-vllm",
    )
    assert result.exit_code == 0, result.output
    assert git(project.root, "rev-parse", "--abbrev-ref", "HEAD") == "apron/bump-vllm"
    assert git(project.root, "rev-list", "--count", f"{base}..apron/bump-vllm") == "1"
    changed = git(project.root, "diff", "--name-only", base, "apron/bump-vllm").splitlines()
    assert "pins/vllm.toml" in changed
    assert all(p == "pins/vllm.toml" or p.startswith("generated/") for p in changed)
    assert git(project.root, "status", "--porcelain") == ""


def test_bump_rejects_a_ref_that_looks_like_an_option(pinned):
    project, repo, shas = pinned
    result = cli("bump", "--engine", "vllm", "--to", "--upload-pack=x", "--root", project.root)
    assert result.exit_code != 0


# ------------------------------------------------------------------ check


def test_check_passes_when_generated_matches(pinned):
    project, repo, shas = pinned
    result = cli("check", "--engine", "vllm", "--root", project.root)
    assert result.exit_code == 0, result.output
    assert f"vllm: ok: identical at {shas[0]}" in result.output


def test_check_fails_with_the_command_to_regenerate(pinned):
    project, repo, shas = pinned
    module = project.generated / "vllm" / "mla_model_types.py"
    module.write_text(module.read_text().replace("deepseek_v2", "deepseek_v9"))
    result = cli("check", "--engine", "vllm", "--root", project.root)
    assert result.exit_code == 1
    assert "vllm/mla_model_types.py" in result.output
    assert "regenerate with: extract --engine vllm" in result.output


def test_check_without_a_source_is_not_a_pass(pinned, monkeypatch, tmp_path):
    project, repo, shas = pinned
    monkeypatch.setenv("APRON_SOURCE_VLLM", str(tmp_path / "gone"))
    result = cli("check", "--engine", "vllm", "--root", project.root)
    assert result.exit_code == 4
    assert "not checked" in result.output and "this is not a pass" in result.output


def test_offline_rerender_of_the_committed_generated_modules():
    result = cli("check", "--offline", "--root", REPO_ROOT)
    assert result.exit_code == 0, result.output
    assert "re-renders byte for byte" in result.output


def test_offline_rerender_detects_a_hand_edit(pinned):
    project, repo, shas = pinned
    readme = project.generated / "vllm" / "README.md"
    readme.write_text(readme.read_text() + "hand edit\n")
    result = cli("check", "--offline", "--root", project.root)
    assert result.exit_code == 1
    assert "vllm/README.md" in result.output


# ------------------------------------------------------------------ calculator impact


def test_impact_lists_changed_figures(project, make_repo, tmp_path, monkeypatch):
    dropped = CONVERTOR_V2.replace('            "deepseek_v3",  # the big one\n', "")
    repo, shas = make_repo(
        [
            (tree_v1(), "v1", "2026-03-02T10:00:00+00:00"),
            (
                {CONVERTOR_PATH: dropped},
                "deepseek_v3 is no longer MLA",
                "2026-04-01T10:00:00+00:00",
            ),
        ]
    )
    write_pin(project, "vllm", URL, shas[0], "2026-03-02")
    run(VLLM, project, commit=None, source=str(repo))
    monkeypatch.setenv("APRON_SOURCE_VLLM", str(repo))
    result = cli(
        "bump",
        "--engine",
        "vllm",
        "--to",
        shas[1],
        "--root",
        project.root,
        "--pr-body",
        tmp_path / "b.md",
    )
    assert result.exit_code == 0, result.output
    body = (tmp_path / "b.md").read_text()
    impact = body.split("## Calculator impact")[1]
    # what moved, in words, with the rule that moved it; then the table
    assert (
        "- vLLM for 1 MLA model (deepseek-v3): KV at 32,768 tokens 2.14 GiB (2,302,672,896 B) -> "
        "152 GiB (163,745,628,160 B), KV bytes per token 68.6 KiB (70,272 B) -> 4.77 MiB "
        "(4,997,120 B)," in impact
    )
    assert "mechanism mla_latent -> full_attention" in impact
    # one line for vLLM's column (its capacity on 80 GiB included), one for the prediction
    assert impact.count(": MLA model types -deepseek_v3\n") == 2
    assert "KV tokens on 80 GiB 794,496 -> 11,168" in impact
    assert "sequences of 32,768 on 80 GiB 24 -> 0" in impact
    assert "| deepseek-v3 | vLLM mechanism | mla_latent | full_attention |" in impact
    assert "| deepseek-v3 | apron mechanism | mla_latent | full_attention |" in impact
    assert "llama-3.1-8b" not in impact  # unaffected samples are not listed
    verdict = next(line for line in body.splitlines() if line.startswith("**Verdict:**"))
    assert verdict.startswith(
        "**Verdict:** the calculator's figures move on 1 of the 21 impact samples: vLLM for 1 MLA "
        "model (deepseek-v3): KV at 32,768 tokens"
    )


def test_impact_compare_lists_every_changed_figure():
    from apron.extractors.report.impact import ImpactChange, compare
    from apron.planning.impact import ImpactFigure

    def figure(sample, what, value, reason=""):
        return ImpactFigure(
            sample=sample,
            family="dense models",
            architecture="A",
            engine="vLLM",
            figure=what,
            tp=1,
            value=value,
            reason=reason,
        )

    before = [figure("a", "x", "1"), figure("a", "y", "2", "r1"), figure("gone", "x", "1")]
    after = [figure("a", "x", "1"), figure("a", "y", "unknown", "r1; r2"), figure("new", "x", "5")]
    assert compare(before, after) == [
        ImpactChange("a", "dense models", "vLLM", "y", 1, "2", "unknown", "r2"),
        ImpactChange("gone", "dense models", "vLLM", "x", 1, "1", "-", ""),
        ImpactChange("new", "dense models", "vLLM", "x", 1, "-", "5", ""),
    ]
