"""The bump body for a real three-month vLLM range (APRON_MIRROR_VLLM; skipped when unset):
at most 16,384 characters, every added architecture named, `score_type`'s arrival one line,
and no reading lost."""

from __future__ import annotations

import pytest

from apron.extractors.commands.bump import plan_bump
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.report.pr_body import READABLE_BODY, github_length, render_pr_body
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import mirror, write_pin

pytestmark = pytest.mark.real_mirror

OLD = "6290470843c131681e3e1318ae71070a34f33225"  # 2026-03-01
NEW = "9aaf83ef502fc37bc647f6e474314d48ba36cd1c"  # 2026-05-19


def test_the_march_to_may_2026_body_reads_in_one_page(tmp_path):
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
    assert github_length(body) <= READABLE_BODY == 16_384
    verdict = body.split("**Verdict:** vLLM gains 59 architectures (")[1].split(") and loses none")[
        0
    ]
    names = verdict.split(", ")
    assert len(names) == 59 and "DeepseekV4ForCausalLM" in names and "Gemma4ForCausalLM" in names
    assert "- `score_type` new on 248 rows: 238 'bi-encoder', 10 'cross-encoder'" in body
    assert plan.readings_lost == []  # three months of real upstream change: no false alarm
    assert "Truncated** at GitHub" not in body  # the caps made it fit, not the last-resort cut
