"""The bump pull-request body: snapshots of three real shapes rebuilt from miniatures (a long
range, a layout refactor, re-keyed rows), the size limit, and the parts it is made of."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
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
from apron.extractors.report.impact import ImpactChange
from apron.extractors.report.pr_body import (
    BODY_BUDGET,
    GITHUB_BODY_LIMIT,
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
from apron.extractors.vllm.records import ModelClassFlags, RegistryRow, VllmDocsRow
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
        "**Verdict:** vLLM gains 71 architectures (" + ", ".join(gained) + ") and loses 1 "
        "architecture (LlavaForConditionalGeneration); MLA model types +1;"
    )
    assert "Made69ForCausalLM" in verdict_line
    assert "- and 31 more (31 added; in the full semantic diff)" in body
    assert (
        "> **Truncated:** this body shows at most 40 additions, 40 removals and 40 changes per "
        "fact kind; 94 more" in body
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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    facts = tuple(
        FactDiff(
            fact=f"kind{k}",
            title=f"Kind {k} " + "x" * 200,
            added=rows,
            removed=gone,
            changed=tuple(
                (registry_row(f"C{n}"), registry_row(f"C{n}", task="embedding"))
                for n in range(changed)
            ),
            moved=tuple(
                (registry_row(f"M{n}", path=f"a{n}.py"), registry_row(f"M{n}", path=f"b/{n}.py"))
                for n in range(changed)
            ),
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
    impact = [ImpactChange(f"sample{n}", "KV heads", "None", "8" * 500) for n in range(impact_rows)]
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
        synthetic_plan(diff, [ImpactChange("llama-7b", "KV heads", "None", "32")])
    )
    assert "| llama-7b | KV heads | unknown | 32 |" in body and "None" not in body


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
    lost = dataclasses.replace(plan, readings_lost=("num_kv_heads of DeepseekV3 configs",))
    text = render_pr_body(lost, BodyLinks())
    assert text.startswith("## Readings lost (1)\n\n> **1 suspected misread:** ")
    assert "\n- num_kv_heads of DeepseekV3 configs\n" in text.split("\n## ")[0]
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
        **flags,
    )
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
        synthetic_plan(diff_engine(old, new), impact=[]), old_facts=old, new_facts=new
    )
    body = render_pr_body(plan)
    verdict = next(line for line in body.splitlines() if line.startswith("**Verdict:**"))
    assert verdict.startswith(
        "**Verdict:** vLLM gains 1 architecture (D) and loses none; 3 gain EAGLE-3, 1 loses PP; "
    )
    assert verdict.endswith("the calculator's figures are unchanged on the 8 samples.")


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


@pytest.mark.parametrize(
    ("impact", "note", "clause"),
    [
        (None, "", "the calculator's figures were not computed"),
        (None, "the calculator did not run (boom)",
         "the calculator's figures were not computed (the calculator did not run (boom))"),
        ([], "", "the calculator's figures are unchanged on the 8 samples"),
        ([ImpactChange("jamba-v0.1", "KV/token", "16384", "32768"),
          ImpactChange("jamba-v0.1", "state", "1", "2"),
          ImpactChange("llama-7b", "KV heads", "None", "32")], "",
         "the calculator's figures change on 2 of the 8 samples "
         "(3 figures: jamba-v0.1: KV/token, state; llama-7b: KV heads)"),
    ],
)  # fmt: skip
def test_the_calculator_clause_in_words(impact, note, clause):
    # 8 samples: apron/samples holds 8 configs (apron.config.sample_names)
    from apron.config import sample_names

    assert len(sample_names()) == 8
    diff = EngineDiff(
        facts=(FactDiff("registry_rows", "Registry rows", added=(registry_row("A"),)),)
    )
    plan = dataclasses.replace(synthetic_plan(diff, impact), impact_note=note)
    body = render_pr_body(plan)
    assert f"; {clause}." in body


def test_a_class_that_now_resolves_is_said_so_not_as_a_lost_feature():
    # the unresolved cell says only "class unresolved"; resolved, A shows PP
    unresolved = class_flags("A").model_copy(update={"status": "unresolved"})
    old = facts_with("a" * 40, ["A"], [unresolved])
    new = facts_with("b" * 40, ["A"], [class_flags("A", supports_pp=True)])
    plan = dataclasses.replace(synthetic_plan(diff_engine(old, new)), old_facts=old, new_facts=new)
    assert feature_flips(plan) == ["1 class now resolves", "1 gains PP"]
    back = dataclasses.replace(plan, old_facts=new, new_facts=old)
    assert feature_flips(back) == ["1 class no longer resolves", "1 loses PP"]
