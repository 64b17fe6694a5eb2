"""The reviewer's page per engine (`generated/<engine>/README.md`): short enough to read."""

from __future__ import annotations

import re
from pathlib import Path

from apron.extractors.report.engine_page import PAGE_LIMIT, render_engine_markdown
from apron.extractors.report.generated_files import all_current_facts
from apron.extractors.runner.pipeline import ProjectPaths

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"


def test_every_committed_engine_page_is_at_most_100000_characters():
    pages = sorted(GENERATED.glob("*/README.md"))
    assert {p.parent.name for p in pages} >= {"vllm", "sglang", "llamacpp"}
    assert PAGE_LIMIT == 100_000
    for page in pages:
        size = len(page.read_text(encoding="utf-8"))
        assert size <= PAGE_LIMIT, f"{page.relative_to(ROOT)} is {size} characters"


def test_vllm_page_opens_with_a_summary_and_shows_class_flags_as_tokens():
    facts = all_current_facts(ProjectPaths(ROOT))["vllm"]
    page = render_engine_markdown(facts, "vLLM")
    head = page.split("\n## ", 2)[1]
    assert head.startswith("Summary")
    assert f"- pin: `{facts.commit}` ({facts.commit_date})" in head
    assert "| [Model-class flags](#model-class-flags) | " in head
    assert "| family | architectures |" in head
    # the MRO and the long source lists stay in the module
    assert "class_mro |" not in page
    assert "vllm.model_executor.models.interfaces.SupportsPP" not in page
    assert re.search(
        r"Read from \d+ files \(listed with their blob SHAs in "
        r"`model_class_flags.py` `SOURCES`",
        page,
    )
    section = page.split("## Model-class flags", 1)[1].split("\n## ", 1)[0]
    assert "<details><summary>" in section
    assert "AXK1ForCausalLM [text_generation_model, pp, lora, eagle]" in section
    assert "`flags` (rows with each): " in section
