"""The bump body for a real three-month vLLM range (APRON_MIRROR_VLLM; skipped when unset):
every added architecture named (the drafts apart), every change of the rules the calculator
reads listed, none cut (the new KV-head alias `num_attention_groups`, the MLA model type and
gates), the body past one page to hold them and saying so, `score_type`'s arrival one line, and
no reading lost. And the range from b1c1fe35, where upstream commented out
MLPSpeculatorPreTrainedModel's row: a removal, not a reading lost."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from apron.extractors.commands.bump import plan_bump
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.report.pr_body import (
    HARD_BODY_BUDGET,
    READABLE_BODY,
    github_length,
    render_pr_body,
)
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import REPO_ROOT, mirror, write_pin

pytestmark = pytest.mark.real_mirror

OLD = "6290470843c131681e3e1318ae71070a34f33225"  # 2026-03-01
NEW = "9aaf83ef502fc37bc647f6e474314d48ba36cd1c"  # 2026-05-19


def cut_rules(body: str) -> list[str]:
    """The kinds the calculator reads whose <details> block says "and N more"."""
    blocks = body.split("<summary>")[1:]
    return [
        b.split("</summary>")[0]
        for b in blocks
        if "(read by the calculator)" in b.split("</summary>")[0]
        and "\n- and " in b.split("</details>")[0]
    ]


def test_the_march_to_may_2026_body_lists_every_rule_the_calculator_reads(tmp_path):
    source = mirror("vllm")
    if source is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    project = ProjectPaths(tmp_path / "p")
    project.pins.mkdir(parents=True)
    project.generated.mkdir()
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", OLD, "2026-03-01")
    run(ENGINES["vllm"], project, commit=None, source=source)
    plan = plan_bump(
        ENGINES["vllm"], project, to=NEW, source=source, allow_shrink=True, with_impact=False
    )
    body = render_pr_body(plan)
    # every change of the rules the calculator reads does not fit in one page with the verdict:
    # the body grows past it, says so, and cuts none of them
    assert READABLE_BODY == 16_384 < github_length(body) <= HARD_BODY_BUDGET
    assert "> **Longer than one page:**" in body
    assert cut_rules(body) == []
    verdict = body.split("vLLM gains 44 architectures (")[1]
    served = verdict.split(") and 15 drafts or speculative heads (")[0].split(", ")
    drafts = verdict.split(") and 15 drafts or speculative heads (")[1].split("), loses none")[0]
    assert len(served) == 44 and "DeepseekV4ForCausalLM" in served and "Gemma4ForCausalLM" in served
    assert len(drafts.split(", ")) == 15 and "DeepSeekV4MTPModel" in drafts.split(", ")
    # every change of the rules the calculator reads, item by item
    assert "- +num_attention_groups (position 5)\n" in body
    assert "- +deepseek_v4\n" in body
    assert "- +main, when 'compress_ratios' in hparams: requires head_dim is not None\n" in body
    assert "- -main, when always: requires kv_lora_rank is not None\n" in body
    assert "- `score_type` new on 248 rows: 238 'bi-encoder', 10 'cross-encoder'" in body
    assert plan.readings_lost == []  # three months of real upstream change: no false alarm
    assert "Truncated** at GitHub" not in body  # the caps made it fit, not the last-resort cut


def test_a_row_commented_out_upstream_is_a_removal_not_a_reading_lost(tmp_path):
    # b1c1fe35 -> 9aaf83ef: registry.py keeps `# "MLPSpeculatorPreTrainedModel": (...)`
    source = mirror("vllm")
    if source is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    project = ProjectPaths(tmp_path / "p")
    project.pins.mkdir(parents=True)
    project.generated.mkdir()
    old = "b1c1fe35a599cfd3c0404702c65c2381b025bc6a"  # 2025-07-01
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", old, "2025-07-01")
    run(ENGINES["vllm"], project, commit=None, source=source)
    plan = plan_bump(
        ENGINES["vllm"], project, to=NEW, source=source, allow_shrink=True, with_impact=False
    )
    assert plan.readings_lost == []
    removed = [d for d in plan.diff.facts if d.fact == "registry_rows"][0].removed
    assert "MLPSpeculatorPreTrainedModel" in {r.architecture for r in removed}
    body = render_pr_body(plan)  # ten months: the rules whole, the body past one page
    assert "> **Longer than one page:**" in body and cut_rules(body) == []
    assert github_length(body) <= HARD_BODY_BUDGET


PIN = "0231dd5467c61dca76f66269b6298a43772b3519"  # the vLLM pin, 2026-07-24
LATER = "6adad08767583f52eb4d2122111af0bf638ed5e6"  # 2026-08-14 (the jsboige/vllm fork has it)


def test_the_august_2026_bump_says_what_the_calculator_loses_and_why(tmp_path):
    source = mirror("vllm")
    if source is None:
        pytest.skip("APRON_MIRROR_VLLM is not set")
    known = subprocess.run(
        ["git", "-C", source, "cat-file", "-e", f"{LATER}^{{commit}}"], capture_output=True
    )
    if known.returncode != 0:
        pytest.skip(f"APRON_MIRROR_VLLM has no commit {LATER[:12]} (the jsboige/vllm fork has)")
    project = ProjectPaths(tmp_path / "p")
    shutil.copytree(REPO_ROOT / "generated", project.generated)
    shutil.copytree(REPO_ROOT / "pins", project.pins)
    plan = plan_bump(ENGINES["vllm"], project, to=LATER, source=source, allow_shrink=True)
    body = render_pr_body(plan)
    verdict = next(line for line in body.splitlines() if line.startswith("**Verdict:**"))
    # vLLM's capacity: unknown for dense models, because FLASH_ATTN's block size is not read
    phrase = next(p for p in verdict.split("; ") if "KV tokens on 80 GiB" in p)
    assert ": unknown for dense models" in phrase
    assert phrase.endswith("vLLM's default block size of FLASH_ATTN is no longer read")
    # Nemotron-H's state moves, because its state hooks are no longer read
    assert (
        "vLLM for 1 hybrid model (nemotron-h-8b-base-8k): state per sequence 97.4 MiB "
        "(102,137,856 B) -> 49.4 MiB (51,806,208 B): vLLM's recurrent state dtype of "
        "NemotronHForCausalLM and vLLM's recurrent state shape of NemotronHForCausalLM are no "
        "longer read" in verdict
    )
    assert "renames 1 (ExaoneMoEForCausalLM -> ExaoneMoeForCausalLM)" in verdict
    assert github_length(body) <= READABLE_BODY  # one page: every rule fits with the verdict
    assert cut_rules(body) == []
