"""The bump pull-request body: snapshots of three real shapes rebuilt from miniatures (a long
range, a layout refactor, re-keyed rows), the size limit, and the parts it is made of."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apron.extractors.commands.bump import BumpPlan, plan_bump
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.pins import Pin
from apron.extractors.records import EngineFacts, ExtractionWarning, FactKind, FactResult, Record
from apron.extractors.report.diff import (
    EngineDiff,
    FactDiff,
    diff_engine,
    markup_only_reasons,
    pair_rekeyed,
    plain_text,
)
from apron.extractors.report.impact import CalculatorImpact, ImpactChange
from apron.extractors.report.pr_body import (
    BODY_BUDGET,
    GITHUB_BODY_LIMIT,
    HARD_BODY_BUDGET,
    BodyLinks,
    architecture_changes,
    fact_items,
    feature_flips,
    github_length,
    move_line,
    move_patterns,
    render_full_diff,
    render_pr_body,
    render_pr_title,
    shown,
    warning_text,
)
from apron.extractors.report.readings_lost import LostReading
from apron.extractors.vllm.records import ModelClassFlags, RegistryRow, VllmDocsRow
from apron.planning.impact import ImpactFigure
from tests import llamacpp_miniatures as llama
from tests import vllm_miniatures as vllm
from tests.conftest import assert_snapshot, write_pin
from tests.vllm_serving_miniatures import MODEL_CONFIG_TP_METHODS, serving_files


def bump_body(project, make_repo, monkeypatch, engine_id, url, commits, links=None):
    repo, shas = make_repo(commits)
    write_pin(project, engine_id, url, shas[0], commits[0][2][:10])
    run(ENGINES[engine_id], project, commit=None, source=str(repo))
    monkeypatch.setenv(f"APRON_SOURCE_{engine_id.upper()}", str(repo))
    plan = plan_bump(ENGINES[engine_id], project, to=shas[-1], source=None, with_impact=False)
    return plan, render_pr_body(plan, links or BodyLinks()), shas


# ------------------------------------------------------------------ three real shapes

MANY = 70  # registry rows a long range adds: more than one kind's cap

DOCS_WITH_REFERENCE_LINKS = """# Supported Models

## List of Text-only Language Models

### Generative Models

| Architecture | Models | Example HF Models | [LoRA][lora-adapter] | [PP][distributed-serving] | V1 |
|---|---|---|---|---|---|
| `LlamaForCausalLM` | Llama 3 | `meta-llama/Meta-Llama-3-8B` | ✅︎ | ✅︎ | ✅︎ |
| `DeepseekV3ForCausalLM` | DeepSeek-V3 | `deepseek-ai/DeepSeek-V3` | ✅︎ | ✅︎ | ✅︎ |

## List of Multimodal Language Models

| Architecture | Models | Inputs | Example HF Models | [LoRA][lora-adapter] | V1 |
|---|---|---|---|---|---|
| `LlavaForConditionalGeneration` | LLaVA-1.5 | T + I | `llava-hf/llava-1.5-7b-hf` | | ✅︎ |
"""


def long_range_tree() -> dict[str, str]:
    extra = "".join(
        f'    "Made{n:02d}ForCausalLM": ("made{n:02d}", "Made{n:02d}ForCausalLM"),\n'
        for n in range(MANY)
    )
    registry = vllm.REGISTRY_V2.replace(
        "    # [Encoder-decoder]\n", extra + "    # [Encoder-decoder]\n", 1
    )
    docs = vllm.DOCS_V1
    return {
        vllm.CONVERTOR_PATH: vllm.CONVERTOR_V2,
        vllm.REGISTRY_PATH: registry,
        vllm.DOCS_PATH: docs,
    }


def test_long_range_body_is_capped_and_says_so(project, make_repo, monkeypatch):
    links = BodyLinks(
        full_diff_path="full-diff.md",
        full_diff_url="https://github.com/o/r/actions/runs/1",
    )
    plan, body, shas = bump_body(
        project,
        make_repo,
        monkeypatch,
        "vllm",
        "https://github.com/vllm-project/vllm",
        [
            (
                {**vllm.tree_v1(), vllm.DOCS_PATH: DOCS_WITH_REFERENCE_LINKS},
                "v1",
                "2025-07-01T10:00:00+00:00",
            ),
            (long_range_tree(), "a year later", "2026-07-24T10:00:00+00:00"),
        ],
        links,
    )
    assert_snapshot("bump_body_long_range.md", body, shas)
    assert body.index("**Verdict:**") < body.index("## Summary") < body.index("## Details")
    assert "Registry rows +71, −1, ~1" in body  # the verdict line
    # every added architecture is named in the verdict, though the details are capped at 40
    verdict_line = next(line for line in body.splitlines() if line.startswith("**Verdict:**"))
    gained, lost = architecture_changes(plan)
    assert len(gained) == 71 and lost == ["LlavaForConditionalGeneration"]
    assert verdict_line.startswith(
        "**Verdict:** the calculator's figures were not computed; vLLM gains 71 architectures ("
        + ", ".join(gained)
        + "), loses 1 architecture (LlavaForConditionalGeneration); rules the calculator reads: "
        "MLA model types +1; "
    )
    assert "Made69ForCausalLM" in verdict_line
    # the large kinds are cut, the rules the calculator reads listed whole; never "1 more"
    cut = [int(n) for n in re.findall(r"- and (\d+) more \(\1 added; in the full semantic", body)]
    assert cut and all(n > 1 for n in cut)  # the large kinds, never "1 more"
    assert "- and 1 more" not in body
    assert "- +num_attention_groups (position 4)" in body
    assert (
        "> **Truncated:** this body lists every change of the rules the calculator reads and the "
        "first items of the larger kinds; " in body
    )
    assert "2 rows differ only in markup (dropped column `V1`: 2, link syntax: 2)" in body
    assert "LlavaForConditionalGeneration',): features LoRA no -> yes" in body
    full = render_full_diff(plan)
    assert all(f"+Made{n:02d}ForCausalLM (text-generation)" in full for n in range(MANY))
    assert "and 33 more" not in full


def test_layout_refactor_body_names_the_real_changes(project, make_repo, monkeypatch):
    plan, body, shas = bump_body(
        project,
        make_repo,
        monkeypatch,
        "llamacpp",
        "https://github.com/ggml-org/llama.cpp",
        [
            (llama.tree_v1(), "one script", "2026-05-15T10:00:00+00:00"),
            (llama.tree_v2(), "split the converter", "2026-05-16T10:00:00+00:00"),
        ],
    )
    assert_snapshot("bump_body_layout_refactor.md", body, shas)
    assert (
        "HF architecture -> GGUF architecture rows moved from `convert_hf_to_gguf.py` to "
        "`conversion/*.py`; what they say is unchanged" in body
    )
    assert "path 'convert_hf_to_gguf.py'" not in body  # no per-row move lines
    assert (
        "Only the header changed (new blob SHAs of the files read; the facts are the same): "
        "Architecture names, Memory per architecture (create_memory), Layer filters and reuse "
        "(create_memory), Recurrent layers per architecture." in body
    )
    assert "~Qwen3NextForCausalLM text: properties +llm_arch_supports_rs_rollback; moved " in body
    # the hparams loader moves too (one switch -> one load_arch_hparams per class): its steps
    # are listed as the statements they are, 40 of them, in a folded <details>
    assert len(body.splitlines()) < 160


def rekeyed_old_tree() -> dict[str, str | None]:
    """The inline ModelConfig layout: rules in one function, no convertor classes."""
    return {
        vllm.CONFIG_SINGLE_PATH: vllm.MODEL_CONFIG_OLD + MODEL_CONFIG_TP_METHODS,
        vllm.MODELS_CONFIG_PATH: vllm.MODELS_CONFIG_V1,
        **vllm.interface_files(),
        **serving_files(),
        vllm.REGISTRY_PATH: vllm.REGISTRY_V1,
        vllm.DOCS_PATH: vllm.DOCS_V1,
        vllm.POOLING_DOCS_PATH: vllm.POOLING_DOCS_V1,
    }


def test_rekeyed_rows_are_one_change_each(project, make_repo, monkeypatch):
    plan, body, shas = bump_body(
        project,
        make_repo,
        monkeypatch,
        "vllm",
        "https://github.com/vllm-project/vllm",
        [
            (rekeyed_old_tree(), "inline rules", "2025-07-01T10:00:00+00:00"),
            (
                {**vllm.tree_v1(), vllm.CONFIG_SINGLE_PATH: None},
                "rules move to convertor classes",
                "2025-12-01T10:00:00+00:00",
            ),
        ],
    )
    assert_snapshot("bump_body_rekeyed.md", body, shas)
    assert "+fallback" not in body and "-fallback" not in body
    assert "- ~fallback num_attention_heads: expression " in body
    assert "- ~mpt: reads attn_config.kv_n_heads, else num_attention_heads: key rule_order" in body
    assert "-mpt:" not in body and "+mpt:" not in body


# ------------------------------------------------------------------ first extraction


def test_first_extraction_is_not_a_diff(project, make_repo, monkeypatch):
    repo, shas = make_repo([(vllm.tree_v1(), "v1", "2026-03-02T10:00:00+00:00")])
    write_pin(project, "vllm", "https://github.com/vllm-project/vllm", shas[0], "2026-03-02")
    monkeypatch.setenv("APRON_SOURCE_VLLM", str(repo))
    plan = plan_bump(ENGINES["vllm"], project, to=shas[0], source=None, with_impact=False)
    links = BodyLinks(tree_url="https://github.com/o/r/blob/apron/bump-vllm")
    body = render_pr_body(plan, links)
    assert plan.diff.first_extraction
    assert body.startswith("## vLLM: first extraction\n")
    assert "| old |" not in body and "Compare:" not in body
    assert (
        "[`generated/vllm/README.md`](https://github.com/o/r/blob/apron/bump-vllm/"
        "generated/vllm/README.md)" in body
    )
    assert "| MLA model types | 3 |" in body and "| Registry rows | 10 |" in body
    assert "+deepseek_v2" not in body  # facts are counted, not listed as additions
    assert render_pr_title(plan).startswith(f"First extraction of vLLM at {shas[0][:12]}")


# ------------------------------------------------------------------ the size limit

REGISTRY = FactKind("registry_rows", "Registry rows", RegistryRow, "rows")
PIN_OLD = Pin(url="https://github.com/vllm-project/vllm", commit="a" * 40, date="2026-01-01")
PIN_NEW = Pin(url="https://github.com/vllm-project/vllm", commit="b" * 40, date="2026-02-01")


def registry_row(name: str, task: str = "text-generation", path: str = "r.py") -> RegistryRow:
    return RegistryRow(
        architecture=name,
        task_group=task,
        module="m",
        class_name=name,
        section="",
        dict_name="_D",
        also_in=(),
        path=path,
    )


def synthetic_plan(diff: EngineDiff, impact=None, warnings=()) -> BumpPlan:
    facts = EngineFacts("vllm", "b" * 40, "2026-02-01", PIN_NEW.url, (), tuple(warnings))
    return BumpPlan(
        engine=ENGINES["vllm"],
        old_pin=PIN_OLD,
        new_pin=PIN_NEW,
        old_facts=facts,
        new_facts=facts,
        diff=diff,
        shrinks=[],
        accepted_shrink=False,
        impact=impact,
    )


names = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
    min_size=1,
    max_size=300,
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(  # every input at its largest, always run
    added=[f"Arch{n}ForCausalLM" * 15 for n in range(200)],
    removed=1000,
    kinds=40,
    impact_rows=400,
    warning_count=300,
    first=False,
    changed=300,
)
@given(
    added=st.lists(names, max_size=200, unique=True),
    removed=st.integers(0, 1000),
    kinds=st.integers(1, 40),
    impact_rows=st.integers(0, 400),
    warning_count=st.integers(0, 300),
    first=st.booleans(),
    changed=st.integers(0, 300),
)
def test_body_never_exceeds_the_github_limit(
    added, removed, kinds, impact_rows, warning_count, first, changed
):
    rows = tuple(registry_row(n) for n in added)
    gone = tuple(registry_row(f"Gone{n}ForCausalLM" * 5) for n in range(removed))
    # the same rows in every kind: built once, shared (records are immutable)
    changed_rows = tuple(
        (registry_row(f"C{n}"), registry_row(f"C{n}", task="embedding")) for n in range(changed)
    )
    moved_rows = tuple(
        (registry_row(f"M{n}", path=f"a{n}.py"), registry_row(f"M{n}", path=f"b/{n}.py"))
        for n in range(changed)
    )
    facts = tuple(
        FactDiff(
            fact=f"kind{k}",
            title=f"Kind {k} " + "x" * 200,
            added=rows,
            removed=gone,
            changed=changed_rows,
            moved=moved_rows,
            old_count=removed,
            new_count=len(rows),
        )
        for k in range(kinds)
    )
    warnings = tuple(
        ExtractionWarning(
            fact="registry_rows",
            code="shadowed",
            subject=f"S{n}",
            message="m" * 1000,
            path="p",
            symbol="s",
        )
        for n in range(warning_count)
    )
    impact = CalculatorImpact(
        [
            ImpactChange(
                f"sample{n}", "dense models", "vLLM", "KV heads", 1, "unknown", "8" * 500, ""
            )
            for n in range(impact_rows)
        ]
    )
    diff = EngineDiff(facts=facts, warnings_added=warnings, first_extraction=first)
    plan = synthetic_plan(diff, impact, warnings)
    body = render_pr_body(plan, BodyLinks(full_diff_url="https://example.org/run/1"))
    assert github_length(body) <= BODY_BUDGET < GITHUB_BODY_LIMIT - 900  # room for a notice
    shown_all = all(body.count(f"- +{r.label()}\n") >= kinds for r in rows) and all(
        body.count(f"- -{r.label()}\n") >= kinds for r in gone
    )
    if not first and not shown_all:
        assert "**Truncated" in body  # whatever is left out is said


def test_body_limit_is_measured_in_utf16_units():
    emoji = "🚀"  # one character, two UTF-16 code units
    assert github_length(emoji) == 2
    rows = tuple(registry_row(emoji * 2000 + str(n)) for n in range(40))
    diff = EngineDiff(facts=(FactDiff("registry_rows", "Registry rows", added=rows),))
    body = render_pr_body(synthetic_plan(diff), limit=20_000)
    assert github_length(body) <= 20_000
    assert "Truncated" in body


# ------------------------------------------------------------------ the parts


@pytest.mark.parametrize(
    ("old_features", "new_features", "expected"),
    [
        (("[LoRA][lora-adapter]=yes",), ("LoRA=yes",), ("link syntax",)),
        (("[LoRA](x.md)=yes", "V1=yes"), ("LoRA=yes",), ("dropped column `V1`", "link syntax")),
        (("LoRA=yes", "V1=yes"), ("LoRA=yes",), ("dropped column `V1`",)),
        (("LoRA=yes",), ("LoRA=no",), ()),  # a real change
        (("LoRA=yes",), ("LoRA=yes", "PP=no"), ()),  # a new column says something
    ],
)
def test_markup_only_docs_rows(old_features, new_features, expected):
    def row(features):
        return VllmDocsRow(
            path="docs/models/supported_models.md",
            section="S",
            architectures=("A",),
            architecture_marks=(),
            models="A",
            inputs="",
            example_hf_models=(),
            features=features,
            other_columns=(),
            notes=(),
        )

    assert markup_only_reasons(row(old_features), row(new_features)) == expected


def test_plain_text_drops_link_and_code_syntax():
    assert plain_text("[LoRA][lora-adapter]") == "LoRA"
    assert plain_text("[PP](../serving/parallelism.md)") == "PP"
    assert plain_text("`Qwen2Model`  **new**") == "Qwen2Model new"


class NumberedRule(Record):
    """A rule keyed by its position, like vLLM's KV-head overrides."""

    KEY: ClassVar[tuple[str, ...]] = ("model_type", "rule_order")

    model_type: str
    rule_order: int
    rule: str
    path: str

    def label(self) -> str:
        return f"{self.model_type}: {self.rule}"


def test_rekeyed_pairs_need_a_unique_match():
    def rule(model_type, order):
        return NumberedRule(model_type=model_type, rule_order=order, rule="reads x", path="p")

    assert pair_rekeyed([rule("mpt", 1)], [rule("mpt", 0)]) == [(rule("mpt", 1), rule("mpt", 0))]
    assert pair_rekeyed([rule("a", 1), rule("a", 2)], [rule("a", 0)]) == []  # ambiguous
    assert pair_rekeyed([rule("a", 1)], [rule("b", 0)]) == []


def test_moves_collapse_to_one_glob_line():
    pairs = tuple(
        (registry_row(f"A{n}", path="convert_hf_to_gguf.py"), registry_row(f"A{n}", path=p))
        for n, p in enumerate([f"conversion/m{k}.py" for k in range(6)])
    )
    (pattern,) = move_patterns(pairs)
    assert move_line("HF architecture", pattern) == (
        "6 HF architecture rows moved from `convert_hf_to_gguf.py` to `conversion/*.py`; "
        "what they say is unchanged"
    )


def test_a_few_distinct_moves_stay_exact():
    pairs = (
        (registry_row("A", path="a.py"), registry_row("A", path="b.py")),
        (registry_row("B", path="c.py"), registry_row("B", path="d.py")),
    )
    lines = [move_line("Registry", p) for p in move_patterns(pairs)]
    assert lines == [
        "1 Registry row moved from `a.py` to `b.py`; what it says is unchanged",
        "1 Registry row moved from `c.py` to `d.py`; what it says is unchanged",
    ]


def test_moved_only_rows_are_not_changes():
    old = FactResult(REGISTRY, (registry_row("A", path="old.py"),), ())
    new = FactResult(REGISTRY, (registry_row("A", path="new.py"),), ())
    facts = [
        EngineFacts("vllm", c, "2026-01-01", "u", (r,), ()) for c, r in (("a", old), ("b", new))
    ]
    (delta,) = diff_engine(*facts).facts
    assert delta.changed == () and len(delta.moved) == 1 and delta.says_nothing_new


def test_warnings_carry_their_subject_and_moves_are_not_pairs():
    def warning(path, subject="Row A", message="row names no architecture"):
        return ExtractionWarning(
            fact="docs",
            code="no-architecture",
            subject=subject,
            message=message,
            path=path,
            symbol="t",
        )

    assert warning_text(warning("p")) == "[no-architecture] Row A: row names no architecture"
    assert warning_text(warning("p", "X", "X is shadowed")) == "[no-architecture] X is shadowed"
    old = EngineFacts("vllm", "a", "d", "u", (), (warning("convert.py"),))
    new = EngineFacts("vllm", "b", "d", "u", (), (warning("conversion/x.py"),))
    diff = diff_engine(old, new)
    assert diff.warnings_added == () and diff.warnings_removed == ()
    assert len(diff.warnings_moved) == 1


def test_unknown_prints_as_unknown():
    assert shown("None") == "unknown" and shown("128") == "128"
    diff = EngineDiff(
        facts=(FactDiff("registry_rows", "Registry rows", added=(registry_row("A"),)),)
    )
    body = render_pr_body(
        synthetic_plan(diff, CalculatorImpact([change("llama-7b", "KV heads", "None", "32")]))
    )
    assert "| llama-7b | vLLM KV heads | unknown | 32 |" in body and "None" not in body


def test_readings_lost_come_first_in_the_body(project, make_repo, monkeypatch):
    plan, body, _ = bump_body(
        project,
        make_repo,
        monkeypatch,
        "vllm",
        "https://github.com/vllm-project/vllm",
        [
            (vllm.tree_v1(), "v1", "2025-07-01T10:00:00+00:00"),
            (long_range_tree(), "a year later", "2026-07-24T10:00:00+00:00"),
        ],
    )
    assert "Readings lost" not in body  # nothing given: no section
    reading = LostReading(
        fact="kv_head_aliases",
        kind="turned unknown",
        key="num_kv_heads",
        detail="it was 2, now unknown",
        what="the position of num_kv_heads in the KV-head scan",
        where="vllm/transformers_utils/model_arch_config_convertor.py line 12",
    )
    lost = dataclasses.replace(plan, readings_lost=[reading])
    text = render_pr_body(lost, BodyLinks())
    assert text.startswith("## Readings lost (1)\n\n> **1 suspected misread:** ")
    assert (
        "\n- vLLM's position of num_kv_heads in the KV-head scan is no longer read (it was 2, "
        "now unknown); still in the code at vllm/transformers_utils/model_arch_config_convertor.py"
        " line 12 (`kv_head_aliases`)\n" in text.split("\n## ")[0]
    )
    assert text.index("## Readings lost") < text.index("**Verdict:**")


class _ScoredClass(Record):
    """A class row with a field that arrives in a range and an MRO."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str
    score_type: str | None = None
    class_mro: tuple[str, ...] = ()
    path: str = "m.py"


def test_a_uniform_change_is_one_line_with_counts():
    def row(n: int, score: str | None = None, mro: tuple[str, ...] = ("A",)) -> _ScoredClass:
        return _ScoredClass(architecture=f"Arch{n:02d}", score_type=score, class_mro=mro)

    new_field = [(row(n), row(n, "bi-encoder" if n < 8 else "cross-encoder")) for n in range(12)]
    mro_only = [(row(n, "x"), row(n, "x", ("A", "B"))) for n in range(20, 31)]
    few = [(row(n, "x"), row(n, "y")) for n in range(40, 43)]  # under UNIFORM_MIN: listed
    delta = FactDiff("classes", "Classes", changed=(*new_field, *mro_only, *few))
    always, items = fact_items(delta, full=False)
    assert always == [
        "11 rows: class_mro +B; no other field changed",
        "`score_type` new on 12 rows: 8 'bi-encoder', 4 'cross-encoder'",
    ]
    assert items["changed"] == [f"~Arch{n}: score_type 'x' -> 'y'" for n in (40, 41, 42)]
    _, full = fact_items(delta, full=True)
    assert len(full["changed"]) == 26  # the full diff still lists every row
    # different MRO gains on many rows: counted per change, not one line per row
    mixed = [(row(n, "x"), row(n, "x", ("A", "B" if n % 3 else "C"))) for n in range(12)]
    always, items = fact_items(FactDiff("classes", "Classes", changed=tuple(mixed)), full=False)
    assert always == ["`class_mro` changes on 12 rows, no other field: 8 +B, 4 +C"]
    assert items["changed"] == []


# ------------------------------------------------------------------ verdict in words (issue 28)


def class_flags(name: str, **flags) -> ModelClassFlags:
    fields: dict = {f: None for f in ModelClassFlags.model_fields}
    fields.update(is_hybrid=False, is_attention_free=False)  # known: no "unknown:" word
    fields.update(
        architecture=name,
        class_name=name,
        resolved_class=f"m.{name}",
        status="resolved",
        attn_type="decoder",
        class_mro=(),
        path="m.py",
        symbol=name,
    )
    fields.update(flags)
    return ModelClassFlags(**fields)


def facts_with(commit: str, registry: list[str], flags: list[ModelClassFlags]) -> EngineFacts:
    kinds = {k.name: k for k in ENGINES["vllm"].fact_kinds}
    results = (
        FactResult(kinds["registry_rows"], tuple(registry_row(a) for a in registry), ()),
        FactResult(kinds["model_class_flags"], tuple(flags), ()),
    )
    return EngineFacts("vllm", commit, "2026-02-01", PIN_NEW.url, results, ())


def test_the_verdict_counts_the_features_that_flip():
    # A, B, C gain EAGLE-3; C loses PP; D is new (its flags are no flip); E keeps its flags
    old = facts_with(
        "a" * 40,
        ["A", "B", "C", "E"],
        [class_flags("A"), class_flags("B"), class_flags("C", supports_pp=True),
         class_flags("E", supports_lora=True)],
    )  # fmt: skip
    new = facts_with(
        "b" * 40,
        ["A", "B", "C", "D", "E"],
        [class_flags("A", supports_eagle3=True), class_flags("B", supports_eagle3=True),
         class_flags("C", supports_eagle3=True), class_flags("D", supports_eagle3=True),
         class_flags("E", supports_lora=True)],
    )  # fmt: skip
    plan = dataclasses.replace(
        synthetic_plan(diff_engine(old, new), impact=CalculatorImpact([])),
        old_facts=old,
        new_facts=new,
    )
    body = render_pr_body(plan)
    verdict = next(line for line in body.splitlines() if line.startswith("**Verdict:**"))
    assert verdict.startswith(
        "**Verdict:** the calculator's figures are unchanged on the 21 impact samples; vLLM gains "
        "1 architecture (D), loses none; 3 gain EAGLE-3, 1 loses PP; "
    )


def test_feature_phrases_are_capped():
    names = [f"M{n}" for n in range(8)]
    old = facts_with("a" * 40, names, [class_flags(n) for n in names])
    flag_names = ["supports_pp", "supports_lora", "supports_eagle", "supports_eagle3",
                  "supports_quant", "is_hybrid", "has_inner_state", "supports_multimodal"]  # fmt: skip
    new = facts_with(
        "b" * 40,
        names,
        [class_flags(n, **{f: True}) for n, f in zip(names, flag_names, strict=True)],
    )
    plan = dataclasses.replace(synthetic_plan(diff_engine(old, new)), old_facts=old, new_facts=new)
    phrases = feature_flips(plan)
    assert len(phrases) == 7 and phrases[-1] == "and 2 more feature changes"
    assert all(p.startswith("1 gains ") for p in phrases[:6])


def change(sample, figure, before, after, *, engine="vLLM", family="dense models", reason=""):
    return ImpactChange(sample, family, engine, figure, 1, before, after, reason)


def figure_of(sample, family):
    return ImpactFigure(
        sample=sample,
        family=family,
        architecture="",
        engine="vLLM",
        figure="KV heads",
        tp=1,
        value="8",
    )


IMPACT_SAMPLES = 21  # apron/samples (8) and apron/samples/impact (13)


@pytest.mark.parametrize(
    ("impact", "clause"),
    [
        (None, "the calculator's figures were not computed"),
        (CalculatorImpact(None, "the calculator did not run (boom)"),
         "the calculator's figures were not computed (the calculator did not run (boom))"),
        (CalculatorImpact([]), f"the calculator's figures are unchanged on the {IMPACT_SAMPLES} "
         "impact samples"),
        (CalculatorImpact(
            [change("jamba-v0.1", "state per sequence", "1 B", "2 B", family="hybrid models"),
             change("llama-7b", "KV tokens on 80 GiB", "471,856", "unknown",
                    reason="block size: FLASH_ATTN is not evaluated"),
             change("falcon-7b", "KV tokens on 80 GiB", "7,549,744", "unknown",
                    reason="block size: FLASH_ATTN is not evaluated")],
            figures=[figure_of("llama-7b", "dense models"), figure_of("falcon-7b", "dense models"),
                     figure_of("jamba-v0.1", "hybrid models"),
                     figure_of("mamba-codestral-7b", "recurrent models")]),
         f"the calculator's figures move on 3 of the {IMPACT_SAMPLES} impact samples: "
         "vLLM KV tokens on 80 GiB: unknown for dense models: block size: FLASH_ATTN is not "
         "evaluated; vLLM for 1 hybrid model (jamba-v0.1): state per sequence 1 B -> 2 B"),
    ],
)  # fmt: skip
def test_the_calculator_clause_in_words(impact, clause):
    from apron.planning.impact import impact_samples

    assert len(impact_samples()) == IMPACT_SAMPLES
    diff = EngineDiff(
        facts=(FactDiff("registry_rows", "Registry rows", added=(registry_row("A"),)),)
    )
    body = render_pr_body(synthetic_plan(diff, impact))
    assert f"**Verdict:** {clause};" in body


def test_a_class_that_now_resolves_is_said_so_not_as_a_lost_feature():
    # the unresolved cell says only "class unresolved"; resolved, A shows PP
    unresolved = class_flags("A").model_copy(update={"status": "unresolved"})
    old = facts_with("a" * 40, ["A"], [unresolved])
    new = facts_with("b" * 40, ["A"], [class_flags("A", supports_pp=True)])
    plan = dataclasses.replace(synthetic_plan(diff_engine(old, new)), old_facts=old, new_facts=new)
    assert feature_flips(plan) == ["1 class now resolves", "1 gains PP"]
    back = dataclasses.replace(plan, old_facts=new, new_facts=old)
    assert feature_flips(back) == ["1 class no longer resolves", "1 loses PP"]


# ------------------------------------------------------------------ renames, drafts, class_mro


def test_a_renamed_architecture_is_one_line_not_a_gain_and_a_loss():
    # vLLM 0231dd54 -> 6adad087: ExaoneMoEForCausalLM became ExaoneMoeForCausalLM, same module
    # and class; a draft arrives (speculative-decoding group) and a served model
    def row(name, task="text-generation", module="exaone_moe", cls="ExaoneMoeForCausalLM"):
        return registry_row(name, task).model_copy(update={"module": module, "class_name": cls})

    old = dataclasses.replace(
        facts_with("a" * 40, [], [class_flags("ExaoneMoEForCausalLM")]),
        facts=(
            FactResult(REGISTRY, (row("ExaoneMoEForCausalLM"),), ()),
            FactResult(
                {k.name: k for k in ENGINES["vllm"].fact_kinds}["model_class_flags"],
                (class_flags("ExaoneMoEForCausalLM"),),
                (),
            ),
        ),
    )
    new_rows = (
        row("ExaoneMoeForCausalLM"),
        row("ExaoneMoeMTP", "speculative-decoding", "exaone_moe_mtp", "ExaoneMoeMTP"),
        row("VaultGemmaForCausalLM", module="vaultgemma", cls="VaultGemmaForCausalLM"),
    )
    new = dataclasses.replace(
        old,
        commit="b" * 40,
        facts=(
            FactResult(REGISTRY, new_rows, ()),
            FactResult(
                old.facts[1].kind,
                tuple(class_flags(r.architecture) for r in new_rows),
                (),
            ),
        ),
    )
    diff = diff_engine(old, new)
    registry, flags = diff.facts
    assert [(o.architecture, n.architecture) for o, n in registry.renamed] == [
        ("ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM")
    ]
    assert [(o.architecture, n.architecture) for o, n in flags.renamed] == [
        ("ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM")
    ]
    plan = dataclasses.replace(
        synthetic_plan(diff, CalculatorImpact([])), old_facts=old, new_facts=new
    )
    verdict = next(
        line for line in render_pr_body(plan).splitlines() if line.startswith("**Verdict:**")
    )
    assert (
        "vLLM gains 1 architecture (VaultGemmaForCausalLM) and 1 draft or speculative head "
        "(ExaoneMoeMTP), loses none, renames 1 (ExaoneMoEForCausalLM -> ExaoneMoeForCausalLM)"
    ) in verdict
    assert "Registry rows +2, 1 renamed" in verdict
    full = render_full_diff(plan)
    assert "- ~ExaoneMoEForCausalLM -> ExaoneMoeForCausalLM: renamed\n" in full


def test_keys_that_differ_only_in_case_or_separators_are_renames():
    from apron.extractors.report.diff import pair_renamed
    from apron.extractors.vllm.records import MlaModelType

    def mla(model_type):
        return MlaModelType(scope="main", model_type=model_type, path="c.py", symbol="f")

    pairs = pair_renamed([mla("AXK1"), mla("qwen3_5")], [mla("axk1"), mla("qwen3.5"), mla("x")])
    assert [(o.model_type, n.model_type) for o, n in pairs] == [
        ("AXK1", "axk1"),
        ("qwen3_5", "qwen3.5"),
    ]
    # two candidates for one spelling: no rename, a loss and two gains
    assert pair_renamed([mla("a_b")], [mla("ab"), mla("a-b")]) == []


def test_class_mro_alone_stays_out_of_the_verdicts_counts():
    # 6adad087: 147 rows changed only class_mro; DiffusionGemma also lost PP
    names = [f"M{n}" for n in range(12)]
    old = facts_with("a" * 40, names, [class_flags(n) for n in names])
    new_flags = [class_flags(n, class_mro=("m.Base",)) for n in names]
    new_flags[0] = class_flags("M0", class_mro=("m.Base",), supports_pp=True)
    new = facts_with("b" * 40, names, new_flags)
    plan = dataclasses.replace(
        synthetic_plan(diff_engine(old, new), CalculatorImpact([])), old_facts=old, new_facts=new
    )
    body = render_pr_body(plan)
    verdict = next(line for line in body.splitlines() if line.startswith("**Verdict:**"))
    assert verdict.endswith("; 1 gains PP; Model-class flags ~1.")
    assert "| Model-class flags | 12 | 12 | 0 | 0 | 12 | 0 | 0 |" in body  # the table counts all
    assert "- 11 rows: class_mro +m.Base; no other field changed" in body


def test_state_calculators_and_formulas_are_shown_in_infix():
    from apron.extractors.llamacpp.records import HparamsFormula
    from apron.extractors.vllm.records import MambaStateCalculator

    def calculator(states):
        return MambaStateCalculator(
            calculator_class="MambaStateShapeCalculator",
            method="kda_state_shape",
            kind="kda",
            parameters=("tp_world_size", "conv_kernel_size", "num_spec"),
            defaults=(),
            states=states,
            state_names=(),
            assumes=(),
            status="read",
            path="m.py",
            symbol="MambaStateShapeCalculator.kda_state_shape",
        )

    split = ("call", "divide", "h", "tp_world_size")
    old = calculator(((("-", "conv_kernel_size", 1), split),))
    new = calculator(((("+", ("-", "conv_kernel_size", 1), "num_spec"), split),))
    from apron.extractors.report.pr_body import change_text

    assert change_text(old, new) == (
        "~MambaStateShapeCalculator kda_state_shape: states +(conv_kernel_size - 1 + num_spec, "
        "divide(h, tp_world_size)), -(conv_kernel_size - 1, divide(h, tp_world_size))"
    )

    def formula(value):
        return HparamsFormula(
            method="n_embd_r", branch=1, condition=(), value=value, unknown="", path="p", symbol="s"
        )

    assert change_text(formula(("*", "n_embd", "l")), formula(("*", "n_embd", ("-", "l", 1)))) == (
        "~n_embd_r 1: value n_embd * l -> n_embd * (l - 1)"
    )


def test_the_rules_the_calculator_reads_are_listed_whole_and_never_one_more():
    # a registry change large enough to be cut, and a KV-head alias the calculator reads
    from apron.extractors.serving.records import KvHeadAlias

    kinds = {k.name: k for k in ENGINES["vllm"].fact_kinds}
    alias = KvHeadAlias(position=5, key="num_attention_groups", path="c.py", symbol="f")
    rows = tuple(registry_row(f"Model{n:03d}ForCausalLM") for n in range(600))
    diff = EngineDiff(
        facts=(
            FactDiff("kv_head_aliases", kinds["kv_head_aliases"].title, added=(alias,)),
            FactDiff("registry_rows", "Registry rows", added=rows, new_count=600),
        )
    )
    body = render_pr_body(synthetic_plan(diff, CalculatorImpact([])))
    assert github_length(body) <= BODY_BUDGET
    assert "- +num_attention_groups (position 6)\n" in body
    assert "- and 1 more" not in body
    shown_rows = sum(1 for r in rows if f"- +{r.label()}\n" in body)
    left = 600 - shown_rows
    assert 0 < shown_rows < 600 and f"- and {left} more ({left} added;" in body
    # one more row would not have fitted
    assert github_length(body) + len(f"- +{rows[shown_rows].label()}\n") > BODY_BUDGET - 40


def test_rules_too_long_for_one_page_grow_the_body_and_are_never_cut():
    # b1c1fe35 -> 9aaf83ef's shape: ten months of the rules the calculator reads (here 900
    # KV-head aliases) and a verdict naming hundreds of architectures do not fit in one page
    from apron.extractors.serving.records import KvHeadAlias

    kinds = {k.name: k for k in ENGINES["vllm"].fact_kinds}
    aliases = tuple(
        KvHeadAlias(position=n, key=f"num_kv_groups_{n:04d}", path="c.py", symbol="f")
        for n in range(900)
    )
    rows = tuple(registry_row(f"Model{n:03d}ForCausalLM") for n in range(600))
    diff = EngineDiff(
        facts=(
            FactDiff("kv_head_aliases", kinds["kv_head_aliases"].title, added=aliases),
            FactDiff("registry_rows", "Registry rows", added=rows, new_count=600),
        )
    )
    body = render_pr_body(synthetic_plan(diff, CalculatorImpact([])))
    assert BODY_BUDGET < github_length(body) <= HARD_BODY_BUDGET
    assert all(f"- +num_kv_groups_{n:04d} (position {n + 1})\n" in body for n in range(900))
    assert "> **Longer than one page:** with the verdict, the changes of the rules the " in body
    assert "every change of the rules the calculator reads and the first items" in body
    # past GitHub's own limit even the rules are cut, and the notice says so
    short = render_pr_body(synthetic_plan(diff, CalculatorImpact([])), hard_limit=20_000)
    assert github_length(short) <= 20_000
    assert "the first items of every kind, even of the rules the calculator reads" in short
    assert "- and 1 more" not in short
