"""SGLang supported-model pages in both layouts, and documented-vs-registered findings."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError
from apron.extractors.runner.base import extract_engine
from apron.extractors.sglang.docs_tables import family_keys
from apron.extractors.snapshot import MemorySnapshot
from tests.sglang_miniatures import (
    NEW_DOCS,
    NEW_GENERATIVE,
    OLD_DOCS,
    OLD_GENERATIVE,
    full_tree_2026,
    tree_2025,
)

SGLANG = ENGINES["sglang"]
DOC_FACTS = {"registry_rows", "docs_table_rows", "docs_registry_findings"}


def extract(files):
    return extract_engine(
        SGLANG, MemorySnapshot(files, engine="sglang"), commit_date="2026-01-01", only=DOC_FACTS
    )


def rows_by_family(facts):
    return {(r.path.rsplit("/", 1)[-1], r.family): r for r in facts.fact("docs_table_rows").records}


def test_old_layout_pipe_tables():
    facts = extract(tree_2025())
    rows = rows_by_family(facts)
    assert set(rows) == {
        ("generative_models.md", "DeepSeek (v2, v3/R1)"),
        ("generative_models.md", "Llama (2, 3.x)"),
        ("generative_models.md", "Qwen (2, 2.5)"),
        ("generative_models.md", "Persimmon (8B)"),
        ("generative_models.md", "Gemma"),
        ("multimodal_language_models.md", "DeepSeek-VL2"),
    }
    qwen = rows[("generative_models.md", "Qwen (2, 2.5)")]
    assert qwen.section == "Supported models"
    assert qwen.example_hf_ids == ("Qwen/Qwen2-7B", "Qwen/Qwen2.5-7B")
    assert rows[("multimodal_language_models.md", "DeepSeek-VL2")].other_columns == ("Notes=",)
    # the fenced search expression and the shell block are not tables or headings
    ragged = [(w.code, w.subject) for w in facts.warnings]
    assert ragged == [("ragged-row", "Gemma")]


def test_new_layout_mdx_html_tables():
    facts = extract(full_tree_2026())
    rows = rows_by_family(facts)
    assert {page for page, _ in rows} == {
        "generative_models.mdx",
        "multimodal_language_models.mdx",
        "reward_models.mdx",
    }
    assert rows[("generative_models.mdx", "Llama (2, 3.x)")].example_hf_ids == (
        "meta-llama/Llama-3.1-8B",
    )
    assert rows[("generative_models.mdx", "DeepSeek (v2, v3/R1)")].example_hf_ids == (
        "deepseek-ai/DeepSeek-R1",
    )
    notes = rows[("multimodal_language_models.mdx", "DeepSeek-VL2")].other_columns
    assert notes == ("Notes=Use --chat-template deepseek-vl2",)
    reward = rows[("reward_models.mdx", "Llama (3.1 Reward / LlamaForSequenceClassification)")]
    assert reward.architectures == ("LlamaForSequenceClassification",)
    assert ("ragged-row", "Gemma") in {(w.code, w.subject) for w in facts.warnings}
    # the page title lives in front matter, not a heading
    assert {r.section for r in facts.fact("docs_table_rows").records} == {"Supported models"}


def test_findings_in_both_directions_and_other_spelling():
    facts = extract(full_tree_2026())
    findings = {
        (f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records
    }
    spelled = findings[("documented-other-spelling", "Qwen2forCausalLM")]
    assert (
        spelled.registered_as == ("Qwen2ForCausalLM",) and spelled.match == "case-and-punctuation"
    )
    missing = findings[("documented-not-registered", "LlamaForSequenceClassification")]
    assert missing.match == "none" and missing.documented_in == (
        f"{NEW_DOCS}/reward_models.mdx § Supported models",
    )
    # family rows cover registered names by normalized prefix (Llama -> LlamaForCausalLM)
    assert ("registered-not-documented", "LlamaForCausalLM") not in findings
    assert ("registered-not-documented", "Phi3ForCausalLM") in findings
    assert findings[("registered-not-documented", "QuantMixtralForCausalLM")].note == (
        "group: mixtral_quant"
    )


def test_family_without_registered_architecture_is_a_finding():
    facts = extract(tree_2025())
    findings = {
        (f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records
    }
    persimmon = findings[("documented-not-registered", "Persimmon (8B)")]
    assert persimmon.match == "family-prefix" and "persimmon" in persimmon.note


@pytest.mark.parametrize(
    ("family", "keys"),
    [
        ("DeepSeek (v1, v2, v3/R1)", ("deepseek",)),
        ("Command-R (Cohere)", ("commandr", "command", "cohere")),
        ("IBM Granite 4.0 (Hybrid, Dense)", ("ibmgranite40", "ibm", "granite")),
        ("E5 (Llama/Mistral based)", ("llama", "mistral")),
    ],
)
def test_family_keys(family, keys):
    assert family_keys(family) == keys


def test_missing_pages_and_headings_are_errors():
    tree = {k: v for k, v in tree_2025().items() if "docs/" not in k}
    with pytest.raises(MissingPathError) as err:
        extract(tree)
    assert f"{NEW_DOCS}/generative_models.mdx" in str(err.value)
    assert f"{OLD_DOCS}/generative_models.md" in str(err.value)

    no_multimodal = {k: v for k, v in tree_2025().items() if "multimodal" not in k}
    with pytest.raises(AnchorError) as err:
        extract(no_multimodal)
    assert f"{OLD_DOCS}/multimodal_language_models.md" in str(err.value)

    renamed = {
        **tree_2025(),
        f"{OLD_DOCS}/generative_models.md": OLD_GENERATIVE.replace(
            "## Supported models", "## Models we run"
        ),
    }
    with pytest.raises(AnchorError) as err:
        extract(renamed)
    assert err.value.anchor == "heading: Supported models"

    no_table = {
        **full_tree_2026(),
        f"{NEW_DOCS}/generative_models.mdx": NEW_GENERATIVE.split("<table")[0],
    }
    with pytest.raises(AnchorError) as err:
        extract(no_table)
    assert err.value.anchor == "table under heading: Supported models"
