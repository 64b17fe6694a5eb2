"""Calculator impact of a bump: `apron` over the impact samples, before and after, in words.

Both sides run in this process on their own directory: the committed `generated/`, and a copy
with the rendered files of the bump laid over it. apron's strict loader reads each directory
on its own (no import path edits), so the calculator sees exactly the constraints it would see
after the pull request is merged. A change is said in words, grouped: "vLLM KV tokens on 80 GiB:
unknown for dense models (falcon-7b, llama-3.1-8b, ...): FlashAttentionBackend.get_preferred_
block_size is not evaluated"."""

from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from apron.constraints import load_constraints
from apron.errors import ConstraintsError
from apron.extractors.report.conformance import ConformanceOutcome, compare_with_records
from apron.planning.impact import PREDICTION, ImpactFigure, sample_figures

NAMED_SAMPLES = 4  # samples a change names before "and N more"
REASON_CAP = 240  # characters of one reason in the verdict


@dataclass(frozen=True)
class ImpactChange:
    sample: str
    family: str
    engine: str
    figure: str
    tp: int
    before: str
    after: str
    reason: str  # what apron says now that it did not say before (its unknown reason, a note)

    @property
    def field(self) -> str:
        at = f" at tp {self.tp}" if self.tp > 1 else ""
        return f"{self.engine} {self.figure}{at}"


def _unknown(value: str) -> str:
    """A missing figure reads "unknown", never "None"."""
    return "unknown" if value in ("None", "") else value


def _new_reason(before: str, after: str) -> str:
    """The parts of apron's explanation that are new after the bump."""
    old = {part.strip() for part in before.split("; ")}
    fresh = [part.strip() for part in after.split("; ") if part.strip() not in old]
    return "; ".join(p for p in fresh if p)


def compare(before: list[ImpactFigure], after: list[ImpactFigure]) -> list[ImpactChange]:
    """Every figure whose value differs, in sample, engine, figure and tp order."""
    old = {f.key: f for f in before}
    new = {f.key: f for f in after}
    changes = []
    for key in sorted(old.keys() | new.keys(), key=lambda k: (k[0], k[1], k[3], k[2])):
        a, b = old.get(key), new.get(key)
        value_a = a.value if a is not None else "-"
        value_b = b.value if b is not None else "-"
        if value_a == value_b:
            continue
        shown = a or b  # the sample as it was (a model that stops being MLA is an MLA model)
        assert shown is not None
        changes.append(
            ImpactChange(
                sample=key[0],
                family=shown.family,
                engine=key[1],
                figure=key[2],
                tp=key[3],
                before=value_a,
                after=value_b,
                reason=_new_reason(a.reason if a else "", b.reason if b else "")
                or (b.reason if b is not None and value_b == "unknown" else ""),
            )
        )
    return changes


@dataclass
class CalculatorImpact:
    """What the bump does to apron's figures: the changes (None when the calculator could not
    run; `note` says why), the figures before, and how apron compares with the engine's own
    measurements at the new commit."""

    changes: list[ImpactChange] | None
    note: str = ""
    figures: list[ImpactFigure] = field(default_factory=list)  # before: the samples as they were
    conformance: ConformanceOutcome | None = None


def calculator_impact(
    paths, rendered: dict[str, str], engine: str = "", commit: str = ""
) -> CalculatorImpact:
    """apron on the impact samples with the committed generated/ and with the bump's, and with
    the bump's on the engine's records of `commit` (when `engine` is given)."""
    with tempfile.TemporaryDirectory(prefix="apron-impact-") as tmp:
        after = Path(tmp) / "generated"
        shutil.copytree(paths.generated, after, ignore=shutil.ignore_patterns("__pycache__"))
        for relative, text in rendered.items():
            target = after / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        try:
            new_constraints = load_constraints(after)
            before_figures = sample_figures(load_constraints(paths.generated))
            after_figures = sample_figures(new_constraints)
        except ConstraintsError as err:
            return CalculatorImpact(None, f"the calculator did not run ({err})")
        conformance = (
            compare_with_records(paths.root, engine, commit, new_constraints) if engine else None
        )
    return CalculatorImpact(compare(before_figures, after_figures), "", before_figures, conformance)


# ------------------------------------------------------------------ in words


def _samples_in_words(samples: set[str], figures: list[ImpactFigure]) -> str:
    """The samples, a whole mechanism family by its name ("dense models"), else by name:
    "dense models and 2 hybrid models (jamba-v0.1, nemotron-h-8b-base-8k)"."""
    members: dict[str, set[str]] = defaultdict(set)
    family_of: dict[str, str] = {}
    for figure in figures:
        if figure.family:
            members[figure.family].add(figure.sample)
            family_of[figure.sample] = figure.family
    if samples >= set(family_of) and len(samples) > 1:
        return "every impact sample"
    parts = []
    for family in sorted({family_of.get(s, "") for s in samples}):
        mine = sorted(s for s in samples if family_of.get(s, "") == family)
        if family and set(mine) == members[family] and len(mine) > 1:
            parts.append(family)
            continue
        listed = ", ".join(mine[:NAMED_SAMPLES]) + (
            f", and {len(mine) - NAMED_SAMPLES} more" if len(mine) > NAMED_SAMPLES else ""
        )
        noun = family if len(mine) > 1 else family.removesuffix("s")
        parts.append(f"{len(mine)} {noun} ({listed})" if family else listed)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _names(record) -> set[str]:
    """The key strings of a record and their dotted parts (a class path names its class)."""
    found: set[str] = set()
    for value in record.identity():
        if isinstance(value, str):
            found |= {value, *value.split(".")}
    return found


def rule_changes(diff, calculator_facts) -> list[tuple[str, str, object]]:
    """(kind title, sign, record) of every item of the rules the calculator reads that the bump
    added, removed, renamed or changed."""
    found = []
    for delta in diff.facts if diff is not None else ():
        if delta.fact not in calculator_facts:
            continue
        found += [(delta.title, "+", r) for r in delta.added]
        found += [(delta.title, "-", r) for r in delta.removed]
        found += [(delta.title, "~", new) for _, new in (*delta.changed, *delta.renamed)]
    return found


def change_cause(
    change: ImpactChange, names: set[str], lost: list, rules: list, engine: str = ""
) -> str:
    """Why a figure moved: the readings the bump lost that apron's reason quotes, else those that
    name the sample's architecture ("vLLM's default block size of FLASH_ATTN is no longer
    read"); else the items of the rules the calculator reads that name its architecture or
    model_type ("MLA model types -deepseek_v3"); else, for a figure that became unknown, apron's
    own reason."""
    quoted = [r for r in lost if any(text in change.reason for text in r.texts)]
    readings = quoted or [r for r in lost if any(r.names(n) for n in names)]
    if readings:
        shorts = list(dict.fromkeys(r.short for r in readings))
        if engine:
            shorts = [
                f"{engine}'s {s.removeprefix('the ')}" if s.startswith("the ") else s
                for s in shorts
            ]
        verb = "is" if len(shorts) == 1 else "are"
        return " and ".join(shorts) + f" {verb} no longer read"
    named_rules = [f"{title} {sign}{r.label()}" for title, sign, r in rules if names & _names(r)]
    if named_rules:
        return " and ".join(dict.fromkeys(named_rules))
    return change.reason[:REASON_CAP] if change.after == "unknown" else ""


def impact_phrases(
    changes: list[ImpactChange],
    figures: list[ImpactFigure],
    lost: list | None = None,
    engine_first: str = "",
    rules: list | None = None,
) -> list[str]:
    """What moved, in words, one phrase per engine, kind of change and cause: "vLLM block size
    (tokens), KV tokens on 80 GiB: unknown for dense models ...: vLLM's default block size of
    FLASH_ATTN is no longer read"; the figures that moved on one sample with their values
    ("vLLM on deepseek-v3: mechanism mla_latent -> full_attention, ..."). The same change at tp 1
    and tp 8 is said once; `engine_first` (the bumped engine) comes first, then the phrases
    touching most samples."""
    names = {f.sample: set(f.architecture.split()) for f in figures}
    groups: dict[tuple, list[ImpactChange]] = defaultdict(list)
    for change in changes:
        change = replace(change, before=_unknown(change.before), after=_unknown(change.after))
        cause = change_cause(
            change, names.get(change.sample, set()), lost or [], rules or [], engine_first
        )
        if change.after == "unknown":
            key = (change.engine, "unknown", "", cause)
        elif change.before == "unknown":
            key = (change.engine, "known", "", cause)
        else:
            key = (change.engine, "value", change.sample, cause)
        groups[key].append(change)
    phrases = []

    def order(key: tuple) -> tuple:
        engine = key[0]
        samples = len({c.sample for c in groups[key]})
        rank = {"unknown": 0, "value": 1, "known": 2}[key[1]]
        return (engine != engine_first, -samples, engine == PREDICTION, rank, key)

    for key in sorted(groups, key=order):
        engine, kind, _, cause = key
        members = groups[key]
        speaker = "prediction" if engine == PREDICTION else engine
        because = f": {cause}" if cause else ""
        who = _samples_in_words({c.sample for c in members}, figures)
        if kind == "value":
            values = ", ".join(
                dict.fromkeys(f"{c.figure} {c.before} -> {c.after}" for c in members if c.tp == 1)
                or dict.fromkeys(f"{c.figure} {c.before} -> {c.after}" for c in members)
            )
            phrases.append(f"{speaker} for {who}: {values}{because}")
            continue
        listed = ", ".join(dict.fromkeys(c.figure for c in members))
        state = "unknown" if kind == "unknown" else "now known"
        phrases.append(f"{speaker} {listed}: {state} for {who}{because}")
    return phrases
