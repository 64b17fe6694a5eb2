"""The bump pull request's text: a body that fits GitHub's limit and leads with the answer,
and the full semantic diff that the workflow keeps beside it."""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass, replace

from apron.extractors.records import ExtractionWarning, Record
from apron.extractors.report.bump_plan import BumpPlan
from apron.extractors.report.conformance import SHOWN_DIFFERENCES
from apron.extractors.report.diff import (
    FactDiff,
    Pair,
    changed_fields,
    fact_fields_changed,
    markup_only_reasons,
    plain_text,
    provenance_fields,
    rekeyed_fields,
)
from apron.extractors.report.engine_reports import engine_report
from apron.extractors.report.impact import impact_phrases, rule_changes
from apron.planning.impact import IMPACT_CONTEXT, IMPACT_GPU_WORDS, IMPACT_TPS, IMPACT_WEIGHTS

GITHUB_BODY_LIMIT = 65_536  # characters (UTF-16 code units) GitHub accepts in a PR body
WORKFLOW_NOTICE_RESERVE = 1_000  # left for a notice the workflow puts on top (failed tests)
HARD_BODY_BUDGET = GITHUB_BODY_LIMIT - WORKFLOW_NOTICE_RESERVE
# What a reviewer reads: the caps tighten until the body fits (the verdict names every
# architecture added or removed whatever the cap); everything else is in the full diff.
READABLE_BODY = 16_384
BODY_BUDGET = min(READABLE_BODY, HARD_BODY_BUDGET)
WARNING_CAP = 20
IMPACT_CAP = 12  # rows of the impact table in the body (fewer when the body is long)
IMPACT_PHRASE_CAP = 20  # what-moved phrases of the impact section in the body
LINE_CAP = 400  # characters of one listed item
MOVE_PATTERN_LIMIT = 3  # more distinct moves than this in one kind are summarised as a glob
SOURCE_LIST_CAP = 8
OPEN_DETAILS_UP_TO = 8  # a kind with this few lines is shown unfolded


@dataclass(frozen=True)
class BodyLinks:
    """Where the reader finds what the body leaves out."""

    full_diff_path: str = ""  # the file `--full-diff` wrote
    full_diff_url: str = ""  # where the workflow keeps it (run page with artifact and summary)
    tree_url: str = ""  # the repository at the PR branch, for links to generated/ files


def github_length(text: str) -> int:
    """Length as GitHub counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def shown(value: str) -> str:
    """A calculator value for people: a missing figure is "unknown", never "None"."""
    return "unknown" if value in ("None", "") else value


def _clip(line: str, cap: int = LINE_CAP) -> str:
    return line if len(line) <= cap else line[: cap - 1] + "…"


# ------------------------------------------------------------------ one record change


def _as_columns(values: list[str]) -> dict[str, str] | None:
    """`("LoRA=yes", "PP=no")` as {column: value}; None unless every entry is one column."""
    pairs = [v.partition("=") for v in values]
    if not values or not all(sep for _, sep, _ in pairs):
        return None
    columns = {name: value for name, _, value in pairs}
    return columns if len(columns) == len(values) else None


def _tuple_change(name: str, before: tuple, after: tuple) -> str:
    old_plain = [plain_text(v) if isinstance(v, str) else repr(v) for v in before]
    new_plain = [plain_text(v) if isinstance(v, str) else repr(v) for v in after]
    old_columns, new_columns = _as_columns(old_plain), _as_columns(new_plain)
    if old_columns is not None and new_columns is not None:
        bits = [
            f"{c} {old_columns[c]} -> {v}"
            for c, v in new_columns.items()
            if c in old_columns and old_columns[c] != v
        ]
        bits += [f"+{c}={v}" for c, v in new_columns.items() if c not in old_columns]
        bits += [f"-{c}={v}" for c, v in old_columns.items() if c not in new_columns]
    else:
        bits = [f"+{v}" for v in new_plain if v not in old_plain]
        bits += [f"-{v}" for v in old_plain if v not in new_plain]
    if bits:
        return f"{name} " + ", ".join(bits)
    if old_plain == new_plain:
        return f"{name} markup only"
    return f"{name} reordered"


def _field_change(
    name: str, before: object, after: object, old: Record | None = None, new: Record | None = None
) -> str:
    """`name old -> new`; a field the records show for people (a formula in infix) as shown."""
    if old is not None and new is not None:
        shown_before, shown_after = old.shown(name), new.shown(name)
        if isinstance(shown_before, tuple) and isinstance(shown_after, tuple):
            return _tuple_change(name, shown_before, shown_after)
        if shown_before is not None and shown_after is not None:
            return f"{name} {shown_before} -> {shown_after}"
    if isinstance(before, tuple) and isinstance(after, tuple):
        return _tuple_change(name, before, after)
    if (
        isinstance(before, str)
        and isinstance(after, str)
        and plain_text(before) == plain_text(after)
    ):
        return f"{name} markup only"
    return f"{name} {repr(before)} -> {repr(after)}"


def change_text(old: Record, new: Record) -> str:
    """`~label: what changed`, naming a changed key and a move beside the fact fields."""
    before, after = old.model_dump(), new.model_dump()
    facts = fact_fields_changed(old, new)
    keys = set(rekeyed_fields(old, new))
    parts = [
        ("key " if name in keys else "")
        + _field_change(name, before.get(name), after.get(name), old, new)
        for name in facts
    ]
    moved = [n for n in changed_fields(old, new) if n not in facts]
    if "path" in moved:
        parts.append(f"moved `{before['path']}` -> `{after['path']}`")
    elif moved:
        parts.append("provenance " + ", ".join(moved) + " changed")
    if old.label() == new.label():
        label = new.label()
    elif old.KEY and old.identity() == new.identity():
        label = " ".join(str(v) for v in new.identity())
    else:
        label = f"{old.label()} -> {new.label()}"
    return f"~{label}: " + "; ".join(parts)


def renamed_text(old: Record, new: Record) -> str:
    """`~Old -> New: renamed`, and what else changed on the row."""
    facts = [n for n in fact_fields_changed(old, new) if n not in old.KEY]
    before, after = old.model_dump(), new.model_dump()
    rest = "; ".join(_field_change(n, before.get(n), after.get(n), old, new) for n in facts)
    names = " ".join(str(v) for v in old.identity()), " ".join(str(v) for v in new.identity())
    return f"~{names[0]} -> {names[1]}: renamed" + (f"; {rest}" if rest else "")


# ------------------------------------------------------------------ moves


@dataclass(frozen=True)
class MovePattern:
    count: int
    changes: tuple[tuple[str, str, str], ...]  # (field, old, new); values may be globs


def _glob(values: set[str]) -> str:
    if len(values) == 1:
        return next(iter(values))
    folders = {posixpath.dirname(v) for v in values}
    folder = posixpath.commonpath(list(folders)) if all(folders) else ""
    suffixes = {posixpath.splitext(v)[1] for v in values}
    suffix = suffixes.pop() if len(suffixes) == 1 else ""
    return (folder + "/" if folder else "") + "*" + suffix


def move_patterns(pairs: tuple[Pair, ...]) -> list[MovePattern]:
    """One pattern per kind of move; many distinct moves collapse to a glob (`conversion/*.py`)."""
    raw: list[tuple[tuple[str, str, str], ...]] = []
    for old, new in pairs:
        where = provenance_fields(old) | provenance_fields(new)
        raw.append(
            tuple(
                (n, str(getattr(old, n, "")), str(getattr(new, n, "")))
                for n in changed_fields(old, new)
                if n in where
            )
        )
    exact = Counter(raw)
    if len(exact) <= MOVE_PATTERN_LIMIT:
        return [MovePattern(n, changes) for changes, n in sorted(exact.items())]
    by_fields: dict[tuple[str, ...], list] = {}
    for changes in raw:
        by_fields.setdefault(tuple(c[0] for c in changes), []).append(changes)
    patterns = []
    for names, group in sorted(by_fields.items()):
        changes = tuple(
            (
                name,
                _glob({c[i][1] for c in group}),
                _glob({c[i][2] for c in group}),
            )
            for i, name in enumerate(names)
        )
        patterns.append(MovePattern(len(group), changes))
    return patterns


def move_line(title: str, pattern: MovePattern) -> str:
    bits = []
    for name, old, new in pattern.changes:
        if name == "path":
            bits.insert(0, f"moved from `{old}` to `{new}`")
        else:
            bits.append(f"{name} `{old}` -> `{new}`")
    rows = "row" if pattern.count == 1 else "rows"
    says = "what it says is unchanged" if pattern.count == 1 else "what they say is unchanged"
    return f"{pattern.count} {title} {rows} " + ", ".join(bits) + f"; {says}"


# ------------------------------------------------------------------ per-kind lines


def _counts(delta: FactDiff, *, with_moves: bool = True) -> str:
    bits = []
    if delta.added:
        bits.append(f"+{len(delta.added)}")
    if delta.removed:
        bits.append(f"−{len(delta.removed)}")
    if delta.changed:
        bits.append(f"~{len(delta.changed)}")
    if delta.renamed:
        bits.append(f"{len(delta.renamed)} renamed")
    if delta.reordered:
        bits.append("reordered")
    if delta.moved and with_moves:
        bits.append(f"{len(delta.moved)} moved")
    return ", ".join(bits)


def _markup_summary(markup: list[tuple[Pair, tuple[str, ...]]]) -> str:
    reasons = Counter(r for _, why in markup for r in why)
    listed = ", ".join(f"{reason}: {n}" for reason, n in sorted(reasons.items()))
    rows = "row differs" if len(markup) == 1 else "rows differ"
    return f"{len(markup)} {rows} only in markup ({listed}); what they say is unchanged"


def _removed_text(delta: FactDiff, record: Record) -> str:
    note = delta.removal_note(record)
    return f"-{record.label()}" + (f": {note}" if note else "")


UNIFORM_MIN = 10  # rows changing the same single field at once are one line with counts
UNIFORM_VALUES = 6  # values counted on that line before "and N more"


def _value_counts(values: list[str]) -> str:
    counts = Counter(values).most_common()
    counts.sort(key=lambda item: (-item[1], item[0]))
    shown_counts = ", ".join(f"{n} {v}" for v, n in counts[:UNIFORM_VALUES])
    more = len(counts) - UNIFORM_VALUES
    return shown_counts + (f", and {more} more values" if more > 0 else "")


def uniform_changes(delta: FactDiff, skip: set[int]) -> tuple[list[str], set[int]]:
    """Changes of one and the same field on at least UNIFORM_MIN rows, each group as one line
    with counts (a field new in the range, or an MRO-only change), and the pairs they cover."""
    groups: dict[tuple[str, bool], list[Pair]] = {}  # (field, new in the range)
    for pair in delta.changed:
        if id(pair) in skip or rekeyed_fields(*pair):
            continue
        fields = fact_fields_changed(*pair)
        if len(fields) == 1:
            new = getattr(pair[0], fields[0]) is None
            groups.setdefault((fields[0], new), []).append(pair)
    lines: list[str] = []
    covered: set[int] = set()
    for (name, _), pairs in sorted(groups.items()):
        if len(pairs) < UNIFORM_MIN:
            continue
        before = [getattr(old, name) for old, _ in pairs]
        after = [getattr(new, name) for _, new in pairs]
        if all(v is None for v in before):
            line = f"`{name}` new on {len(pairs)} rows: {_value_counts([repr(v) for v in after])}"
        else:
            texts = {_field_change(name, b, a) for b, a in zip(before, after, strict=True)}
            if len(texts) == 1:
                line = f"{len(pairs)} rows: {texts.pop()}; no other field changed"
            else:
                changes = [
                    _field_change(name, b, a).removeprefix(f"{name} ")
                    if isinstance(b, tuple)
                    else f"{b!r} -> {a!r}"
                    for b, a in zip(before, after, strict=True)
                ]
                line = f"`{name}` changes on {len(pairs)} rows, no other field: " + _value_counts(
                    changes
                )
        lines.append(_clip(line))
        covered |= {id(p) for p in pairs}
    return lines, covered


def fact_items(delta: FactDiff, *, full: bool) -> tuple[list[str], dict[str, list[str]]]:
    """(summary lines that are always shown, item lines per group that may be capped)."""
    markup = [(p, markup_only_reasons(*p)) for p in delta.changed]
    markup = [(p, why) for p, why in markup if why]
    markup_ids = {id(p) for p, _ in markup}
    always = []
    if markup:
        always.append(_markup_summary(markup))
    if not full:
        uniform, covered = uniform_changes(delta, markup_ids)
        always += uniform
        markup_ids |= covered
    if delta.reordered:
        always.append("order changed (order matters for this fact)")
    items = {
        "renamed": [renamed_text(*p) for p in delta.renamed],
        "added": [f"+{r.label()}" for r in delta.added],
        "removed": [_removed_text(delta, r) for r in delta.removed],
        "changed": [change_text(*p) for p in delta.changed if id(p) not in markup_ids],
    }
    if full:
        items["changed"] += [change_text(*p) for p, _ in markup]
        items["moved"] = [change_text(*p) for p in delta.moved]
    return always, items


# ------------------------------------------------------------------ sections


def _compare_url(plan: BumpPlan) -> str:
    base = plan.old_pin.url.removesuffix(".git")
    if base.startswith("https://github.com/"):
        return f"{base}/compare/{plan.old_pin.commit}...{plan.new_pin.commit}"
    return ""


def _link(text: str, relative: str, links: BodyLinks) -> str:
    if links.tree_url:
        return f"[`{text}`]({links.tree_url.rstrip('/')}/{relative})"
    return f"`{text}`"


FEATURE_PHRASES = 6  # feature flips the verdict names before "and N more"
UNRESOLVED = "class unresolved"  # the cell flag of a class the engine's reader could not resolve


IMPACT_PHRASES = 6  # what-moved phrases the verdict names before "and N more"


def _phrases(plan: BumpPlan) -> list[str]:
    impact = plan.impact
    assert impact is not None and impact.changes is not None
    rules = rule_changes(plan.diff, plan.engine.calculator_facts)
    return impact_phrases(
        impact.changes, impact.figures, plan.readings_lost, plan.engine.title, rules
    )


def _impact_summary(plan: BumpPlan) -> str:
    """What the calculator's figures do on the impact samples, in words: what moved, for which
    models, and why; then how apron compares with the engine's own measurements there."""
    impact = plan.impact
    if impact is None or impact.changes is None:
        note = f" ({impact.note})" if impact is not None and impact.note else ""
        return f"the calculator's figures were not computed{note}"
    from apron.planning.impact import impact_samples

    total = len(impact_samples())
    if not impact.changes:
        words = f"the calculator's figures are unchanged on the {total} impact samples"
    else:
        phrases = _phrases(plan)
        shown_phrases = phrases[:IMPACT_PHRASES]
        more = len(phrases) - len(shown_phrases)
        samples = len({c.sample for c in impact.changes})
        words = (
            f"the calculator's figures move on {samples} of the {total} impact samples: "
            + "; ".join(shown_phrases)
            + (f"; and {more} more (under Calculator impact)" if more else "")
        )
    if impact.conformance is not None:
        words += "; " + impact.conformance.words(plan.engine.title)
    return words


def feature_flips(plan: BumpPlan) -> list[str]:
    """The matrix features (the engine's cell flags: EAGLE-3, PP, hybrid, ...) that flip on
    architectures registered before and after, as counts: "3 gain EAGLE-3", "1 loses PP"."""
    cells = engine_report(plan.engine.engine_id).matrix_cells
    if cells is None or plan.old_facts is None:
        return []
    old, new = cells(plan.old_facts), cells(plan.new_facts)
    gains: Counter[str] = Counter()
    losses: Counter[str] = Counter()
    for architecture in set(old) & set(new):
        before, after = set(old[architecture].flags), set(new[architecture].flags)
        gains.update(after - before)
        losses.update(before - after)
    # a status, not a feature: an unresolved class that resolves gains its flags instead
    resolved, unresolved = losses.pop(UNRESOLVED, 0), gains.pop(UNRESOLVED, 0)
    flips = [(n, "gains" if n == 1 else "gain", w) for w, n in gains.items()]
    flips += [(n, "loses" if n == 1 else "lose", w) for w, n in losses.items()]
    if resolved:
        flips.append(
            (resolved, "", "class now resolves" if resolved == 1 else "classes now resolve")
        )
    if unresolved:
        flips.append(
            (
                unresolved,
                "",
                "class no longer resolves" if unresolved == 1 else "classes no longer resolve",
            )
        )
    flips.sort(key=lambda f: (bool(f[1]), -f[0], f[2], f[1]))  # a class resolving first
    phrases = [
        " ".join(part for part in (str(n), verb, word) if part)
        for n, verb, word in flips[:FEATURE_PHRASES]
    ]
    if len(flips) > FEATURE_PHRASES:
        phrases.append(f"and {len(flips) - FEATURE_PHRASES} more feature changes")
    return phrases


def _architecture_names(records: tuple[Record, ...], name: str) -> set[str]:
    names: set[str] = set()
    for record in records:
        value = getattr(record, name)
        names.update(value if isinstance(value, tuple) else (value,))
    return names


def _registry_deltas(plan: BumpPlan):
    kinds = {k.name: k for k in plan.engine.fact_kinds}
    for delta in plan.diff.facts:
        kind = kinds.get(delta.fact)
        if kind is not None and kind.support is not None and kind.support.role == "registry":
            yield delta, kind.support.field


def architecture_changes(plan: BumpPlan) -> tuple[list[str], list[str]]:
    """The architectures the engine's registry facts gained and lost, every one by name (a
    renamed one is neither)."""
    gained: set[str] = set()
    lost: set[str] = set()
    for delta, field in _registry_deltas(plan):
        gained |= _architecture_names(delta.added, field)
        lost |= _architecture_names(delta.removed, field)
    return sorted(gained - lost), sorted(lost - gained)


def architecture_renames(plan: BumpPlan) -> list[tuple[str, str]]:
    """(old name, new name) of every architecture the registry facts renamed."""
    found: set[tuple[str, str]] = set()
    for delta, field in _registry_deltas(plan):
        found |= {(str(getattr(o, field)), str(getattr(n, field))) for o, n in delta.renamed}
    return sorted(found)


def draft_names(plan: BumpPlan) -> set[str]:
    """The drafts and speculative heads the engine registers, before or after the bump."""
    drafts = engine_report(plan.engine.engine_id).draft_architectures
    if drafts is None:
        return set()
    found = set(drafts(plan.new_facts))
    if plan.old_facts is not None:
        found |= drafts(plan.old_facts)
    return found


def _named(names: list[str], noun: str, nouns: str) -> str:
    return f"{len(names)} {noun if len(names) == 1 else nouns} ({', '.join(names)})"


def _architectures_in_words(plan: BumpPlan) -> str:
    """ "vLLM gains 12 architectures (...) and 6 drafts or speculative heads (...), loses 2
    architectures (...) and renames 1 (Old -> New)": every name, the models people serve apart
    from the drafts."""
    gained, lost = architecture_changes(plan)
    renamed = architecture_renames(plan)
    if not gained and not lost and not renamed:
        return ""
    drafts = draft_names(plan)

    def listed(names: list[str]) -> str:
        served = [n for n in names if n not in drafts]
        heads = [n for n in names if n in drafts]
        bits = [_named(served, "architecture", "architectures")] if served else []
        if heads:
            bits.append(_named(heads, "draft or speculative head", "drafts or speculative heads"))
        return " and ".join(bits) if bits else "none"

    words = f"{plan.engine.title} gains {listed(gained)}, loses {listed(lost)}"
    if renamed:
        pairs = ", ".join(f"{old} -> {new}" for old, new in renamed)
        words += f", renames {len(renamed)} ({pairs})"
    return words


def _verdict_counts(delta: FactDiff, omit: tuple[str, ...]) -> str:
    """`_counts` for the verdict: a change of bookkeeping fields alone (`FactKind.page_omit`,
    e.g. vLLM's `class_mro`) is not counted."""
    changed = tuple(
        p for p in delta.changed if omit == () or set(fact_fields_changed(*p)) - set(omit)
    )
    counted = replace(delta, changed=changed)
    markup = sum(1 for p in changed if markup_only_reasons(*p))
    note = f" ({markup} in markup only)" if markup else ""
    return _counts(counted, with_moves=False) + note if not counted.says_nothing_new else ""


def verdict(plan: BumpPlan) -> str:
    """The answer in one line: what the calculator's figures do, the architectures gained, lost
    and renamed, by name, then what each fact kind gained, lost and changed: the kinds the
    calculator reads first."""
    parts = [_impact_summary(plan)]
    words = _architectures_in_words(plan)
    if words:
        parts.append(words)
    flips = feature_flips(plan)
    if flips:
        parts.append(", ".join(flips))
    kinds = {k.name: k for k in plan.engine.fact_kinds}
    calculator, other = [], []
    for delta in plan.diff.facts:
        if delta.empty or delta.says_nothing_new:
            continue
        kind = kinds.get(delta.fact)
        counts = _verdict_counts(delta, kind.page_omit if kind is not None else ())
        if not counts:
            continue
        phrase = f"{delta.title} {counts}"
        (calculator if delta.fact in plan.engine.calculator_facts else other).append(phrase)
    if calculator:
        parts.append("rules the calculator reads: " + "; ".join(calculator))
    if other:
        parts.append(("other facts: " if calculator else "") + "; ".join(other))
    if len(parts) == 1 and not flips:
        parts.append("no fact changed")
    moved = sum(len(d.moved) for d in plan.diff.facts)
    if moved:
        parts.append(f"{moved} rows moved without change")
    return "; ".join(parts)


def _readings_lost(plan: BumpPlan) -> list[str]:
    """First in the body: what the previous extraction read and the new one does not, although
    the key is still in the files the fact reads, or a value that turned unknown or empty
    (extractors/report/readings_lost.py): suspected misreads, not upstream removals."""
    lost = plan.readings_lost
    if not lost:
        return []
    lines = [
        f"## Readings lost ({len(lost)})",
        "",
        f"> **{len(lost)} suspected misread{'s' if len(lost) != 1 else ''}:** the previous "
        "extraction read these and the new one does not, although the key is still in the "
        "files the fact reads, or the value turned unknown or empty. Check the reader before "
        "merging: this pull request is a draft until they are explained.",
        "",
    ]
    lines += [f"- {item.line(plan.engine.title)}" for item in lost]
    return lines + [""]


def _head(plan: BumpPlan, links: BodyLinks) -> list[str]:
    lines: list[str] = _readings_lost(plan)
    if plan.accepted_shrink:
        lines += [
            "> **Shrink accepted with --allow-shrink.** These fact sets shrank by more "
            "than half or disappeared:",
            ">",
        ]
        lines += [f"> - {s.fact}: {s.old_count} -> {s.new_count}" for s in plan.shrinks]
        lines.append("")
    what = "first extraction" if plan.diff.first_extraction else "constraint bump"
    lines += [
        f"## {plan.engine.title}: {what}",
        "",
        "| | commit | date |",
        "| --- | --- | --- |",
    ]
    if not plan.diff.first_extraction:
        lines.append(f"| old | `{plan.old_pin.commit}` | {plan.old_pin.date} |")
    lines += [f"| new | `{plan.new_pin.commit}` | {plan.new_pin.date} |", ""]
    if plan.diff.first_extraction:
        table = _link(
            f"generated/{plan.engine.engine_id}/README.md",
            f"generated/{plan.engine.engine_id}/README.md",
            links,
        )
        lines += [
            f"**Verdict:** first extraction: no previous `generated/{plan.engine.engine_id}/` "
            f"to compare with, so this is not a diff; review the facts in {table}; "
            + _impact_summary(plan)
            + ".",
            "",
        ]
        return lines
    lines += [f"**Verdict:** {verdict(plan)}.", ""]
    compare = _compare_url(plan)
    if compare:
        lines += [f"Compare: {compare}", ""]
    return lines


def _full_diff_note(links: BodyLinks) -> list[str]:
    if links.full_diff_url:
        return [f"Full semantic diff: [job summary and artifact]({links.full_diff_url}).", ""]
    if links.full_diff_path:
        return [f"Full semantic diff: `{links.full_diff_path}` (written by the bump).", ""]
    return []


def _first_extraction_counts(plan: BumpPlan) -> list[str]:
    lines = ["## Facts", "", "| fact | rows |", "| --- | ---: |"]
    lines += [f"| {d.title} | {d.new_count} |" for d in plan.diff.facts]
    lines.append("")
    return lines


def _summary(plan: BumpPlan) -> list[str]:
    lines = ["## Summary", ""]
    changed = [d for d in plan.diff.facts if not d.empty]
    if not changed and not _has_warning_change(plan):
        return lines + ["Nothing changed beyond the header.", ""]
    lines += [
        "| fact | before | after | + | − | ~ | renamed | moved |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    rules = plan.engine.calculator_facts
    for d in [d for d in changed if d.fact in rules] + [d for d in changed if d.fact not in rules]:
        title = f"{d.title} (calculator)" if d.fact in rules else d.title
        lines.append(
            f"| {title} | {d.old_count} | {d.new_count} | {len(d.added)} | {len(d.removed)} "
            f"| {len(d.changed)}{' (reordered)' if d.reordered else ''} | {len(d.renamed)} "
            f"| {len(d.moved)} |"
        )
    same = [d.title for d in plan.diff.facts if d.empty and not d.header_changed]
    header_only = [d.title for d in plan.diff.facts if d.empty and d.header_changed]
    lines.append("")
    if same:
        lines += ["Unchanged: " + ", ".join(same) + ".", ""]
    if header_only:
        lines += [
            "Only the header changed (new blob SHAs of the files read; the facts are the "
            "same): " + ", ".join(header_only) + ".",
            "",
        ]
    moves = [move_line(d.title, p) for d in changed for p in move_patterns(d.moved)]
    sources = plan.diff.sources
    if sources.blob_changed:
        shown_paths = ", ".join(f"`{p}`" for p in sources.blob_changed[:SOURCE_LIST_CAP])
        more = len(sources.blob_changed) - SOURCE_LIST_CAP
        moves.append(
            f"{len(sources.blob_changed)} source files have new blob SHAs in the module "
            f"headers ({shown_paths}{f', and {more} more' if more > 0 else ''})"
        )
    if sources.added or sources.removed:
        moves.append(
            f"files read: {len(sources.added)} new, {len(sources.removed)} no longer read "
            "(listed in the full diff)"
        )
    if moves:
        lines += ["Provenance only:", ""] + [f"- {_clip(m, 4 * LINE_CAP)}" for m in moves] + [""]
    return lines


def _has_warning_change(plan: BumpPlan) -> bool:
    d = plan.diff
    return bool(d.warnings_added or d.warnings_removed or d.warnings_moved)


Items = dict[str, tuple[list[str], dict[str, list[str]]]]
Caps = dict[tuple[str, str], int]  # (fact, group) -> items shown; a group not named: all


def ordered_deltas(plan: BumpPlan) -> list[FactDiff]:
    """The kinds that say something new, the ones the calculator reads first (engine order)."""
    deltas = [d for d in plan.diff.facts if not d.says_nothing_new]
    first = [d for d in deltas if d.fact in plan.engine.calculator_facts]
    return first + [d for d in deltas if d.fact not in plan.engine.calculator_facts]


def _details(
    plan: BumpPlan, caps: Caps | None, items: Items | None = None
) -> tuple[list[str], int]:
    """Per-kind <details>, the kinds the calculator reads first; `caps` limits the items of a
    (fact, group), None lists everything uncapped and unclipped (the full diff). Returns the
    lines and the number of items left out. `items`: the body's lines per kind, computed once
    for every cap tried."""
    lines: list[str] = []
    left_out = 0
    changed = ordered_deltas(plan)
    if not changed:
        return lines, 0
    lines += [
        "## Details",
        "",
        "`+` added, `-` removed (for findings: no longer found), `~` changed. The rules the "
        "calculator reads come first, every item listed.",
        "",
    ]
    for delta in changed:
        always, groups = (
            items[delta.fact] if items is not None else fact_items(delta, full=caps is None)
        )
        counts = {
            g: len(v) if caps is None else min(len(v), caps.get((delta.fact, g), len(v)))
            for g, v in groups.items()
        }
        shown_items = [line for g, lines in groups.items() for line in lines[: counts[g]]]
        missing = {g: len(v) - counts[g] for g, v in groups.items() if len(v) > counts[g]}
        more = sum(missing.values())
        left_out += more
        clip = caps is not None and delta.fact not in plan.engine.calculator_facts
        small = len(always) + len(shown_items) <= OPEN_DETAILS_UP_TO and not more
        rule = " (read by the calculator)" if delta.fact in plan.engine.calculator_facts else ""
        lines += [
            "<details open>" if small and caps is not None else "<details>",
            f"<summary>{delta.title}{rule}: {_counts(delta)} ({delta.old_count} -> "
            f"{delta.new_count})</summary>",
            "",
        ]
        lines += [f"- {_clip(line) if clip else line}" for line in always]
        lines += [f"- {_clip(line) if clip else line}" for line in shown_items]
        if more:
            what = ", ".join(f"{n} {g}" for g, n in missing.items())
            lines.append(f"- and {more} more ({what}; in the full semantic diff)")
        lines += ["", "</details>", ""]
    return lines, left_out


def warning_text(warning: ExtractionWarning) -> str:
    """`[code] subject: message`, the subject not repeated when the message starts with it."""
    if warning.subject and not warning.message.startswith(warning.subject):
        return f"[{warning.code}] {_clip(warning.subject, 100)}: {warning.message}"
    return f"[{warning.code}] {warning.message}"


def _warnings(plan: BumpPlan, cap: int | None) -> list[str]:
    lines = ["## Warnings", ""]
    d = plan.diff
    if plan.diff.first_extraction:
        return lines + [f"{len(plan.new_facts.warnings)} recorded (see the reviewer table).", ""]
    entries = [f"new: {warning_text(w)}" for w in d.warnings_added]
    entries += [f"gone: {warning_text(w)}" for w in d.warnings_removed]
    if not entries and not d.warnings_moved:
        return lines + [
            f"No change ({len(plan.new_facts.warnings)} warnings recorded, as before).",
            "",
        ]
    shown_entries = entries if cap is None else entries[:cap]
    lines += [f"- {_clip(e) if cap is not None else e}" for e in shown_entries]
    if len(entries) > len(shown_entries):
        lines.append(f"- and {len(entries) - len(shown_entries)} more (in the full semantic diff)")
    if d.warnings_moved:
        n = len(d.warnings_moved)
        lines.append(
            f"- {n} warning{'s' if n != 1 else ''} moved (path or symbol only); "
            "the text is unchanged"
        )
    return lines + [""]


def _impact(plan: BumpPlan, cap: int | None, phrase_cap: int | None = None) -> list[str]:
    """The impact section: what moved in words (at most `phrase_cap` phrases), then a table of
    at most `cap` rows; None: everything."""
    lines = ["## Calculator impact", ""]
    impact = plan.impact
    if impact is None or impact.changes is None:
        note = impact.note if impact is not None and impact.note else "no calculator available"
        return lines + [f"Not computed: {note}.", ""]
    lines += [
        f"Every shipped and impact sample (apron/samples/, apron/samples/impact/) planned at "
        f"{IMPACT_CONTEXT:,} tokens, tp 1 and tp {max(IMPACT_TPS)}, with {IMPACT_WEIGHTS // 2**30} "
        f"GiB of weights on a {IMPACT_GPU_WORDS} GPU, with the constraints before and after.",
        "",
    ]
    if impact.conformance is not None:
        words = impact.conformance.words(plan.engine.title)
        lines += [words[:1].upper() + words[1:] + "."]
        lines += [f"- {_clip(d)}" for d in impact.conformance.differences[:SHOWN_DIFFERENCES]]
        lines.append("")
    if not impact.changes:
        return lines + ["No figure of `apron plan` changed on the impact samples.", ""]
    phrases = _phrases(plan)
    listed = phrases if phrase_cap is None else phrases[:phrase_cap]
    lines += [f"- {phrase}" for phrase in listed]
    if len(phrases) > len(listed):
        lines.append(f"- and {len(phrases) - len(listed)} more (in the full semantic diff)")
    lines.append("")
    rows = impact.changes if cap is None else impact.changes[:cap]
    if not rows:
        return lines + [
            f"{len(impact.changes)} figures changed (table in the full semantic diff).",
            "",
        ]
    lines += ["| sample | figure | before | after | why |", "| --- | --- | --- | --- | --- |"]
    for c in rows:
        why = c.reason if cap is None else _clip(c.reason, 100)
        lines.append(f"| {c.sample} | {c.field} | {shown(c.before)} | {shown(c.after)} | {why} |")
    if len(impact.changes) > len(rows):
        lines.append(
            f"\nand {len(impact.changes) - len(rows)} more rows (in the full semantic diff)"
        )
    return lines + [""]


def _footer(plan: BumpPlan) -> list[str]:
    return [
        f"Generated by `extract bump --engine {plan.engine.engine_id} --to {plan.new_pin.commit}`."
    ]


# ------------------------------------------------------------------ the two documents


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def render_full_diff(plan: BumpPlan) -> str:
    """Every line of the semantic diff, uncapped: the file the workflow keeps."""
    lines = _head(plan, BodyLinks())
    if plan.diff.first_extraction:
        lines += _first_extraction_counts(plan)
    else:
        lines += _summary(plan)
    lines += _impact(plan, None)
    details, _ = _details(plan, None)
    lines += details
    lines += _sources_in_full(plan)
    lines += _warnings(plan, None) + _footer(plan)
    return _join(lines)


def _sources_in_full(plan: BumpPlan) -> list[str]:
    s = plan.diff.sources
    if s.empty:
        return []
    lines = ["## Source files", ""]
    lines += [f"- blob changed: `{p}`" for p in s.blob_changed]
    lines += [f"- newly read: `{p}`" for p in s.added]
    lines += [f"- no longer read: `{p}`" for p in s.removed]
    return lines + [""]


def render_pr_body(
    plan: BumpPlan,
    links: BodyLinks = BodyLinks(),
    limit: int = BODY_BUDGET,
    hard_limit: int = HARD_BODY_BUDGET,
) -> str:
    """The pull-request body, at most `limit` characters. Every change of the rules the
    calculator reads is listed; the large kinds (registry rows, docs tables, class flags) are
    cut first: the largest per-kind cap that fits, then one more item at a time while there is
    room, so "and 1 more" is never written where that item would fit. When the rules alone do
    not fit in `limit`, the body grows past it up to `hard_limit` (GitHub's own limit) and says
    so at the top; only past that are they cut. What is left out is counted and pointed to."""
    head = _head(plan, links)
    if plan.diff.first_extraction:
        middle = _first_extraction_counts(plan)
        tail = _warnings(plan, WARNING_CAP) + _impact(plan, IMPACT_CAP)
        return _fit(_join(head + middle + tail + _footer(plan)), limit)
    summary = _summary(plan)
    deltas = ordered_deltas(plan)
    items = {d.fact: fact_items(d, full=False) for d in deltas}
    groups = [(d.fact, g) for d in deltas for g in items[d.fact][1]]
    rules = set(plan.engine.calculator_facts)
    knobs = {"warnings": WARNING_CAP, "rows": IMPACT_CAP, "phrases": IMPACT_PHRASE_CAP}

    page = {"limit": limit, "grown": False}

    def body(caps: Caps) -> tuple[str, int]:
        details, left_out = _details(plan, caps, items)
        rules_whole = all(
            caps.get(key, _group_size(items, key)) >= _group_size(items, key)
            for key in groups
            if key[0] in rules
        )
        notice = _truncation_notice(left_out, links, rules_whole=rules_whole)
        if page["grown"]:
            notice = _longer_notice(limit) + notice
        impact = _impact(plan, knobs["rows"], knobs["phrases"])
        tail = _warnings(plan, knobs["warnings"])
        text = _join(head + notice + impact + summary + details + tail + _footer(plan))
        return text, left_out

    def fits(caps: Caps) -> bool:
        return github_length(body(caps)[0]) <= page["limit"]

    caps: Caps = {}
    large = [key for key in groups if key[0] not in rules]
    if not fits(caps):  # what matters least goes first: the large kinds' items
        uniform = _largest_fitting_cap(items, large, {}, fits)
        caps = {key: uniform for key in large}
        caps = _fill(items, large, caps, fits)
    for knob in ("warnings", "rows", "phrases"):  # then warnings, impact rows, impact phrases
        while not fits(caps) and knobs[knob] > 0:
            knobs[knob] -= 1
    rule_groups = [key for key in groups if key[0] in rules]
    if not fits(caps) and rule_groups and hard_limit > limit:  # not cut for the page: it grows
        page.update(limit=hard_limit, grown=True)
    if not fits(caps):  # last, past GitHub's own limit, the rules the calculator reads
        uniform = _largest_fitting_cap(items, rule_groups, caps, fits)
        caps = _fill(items, rule_groups, {**caps, **{k: uniform for k in rule_groups}}, fits)
    text, _ = body(caps)
    return _fit(text, page["limit"])


def _longer_notice(limit: int) -> list[str]:
    return [
        f"> **Longer than one page:** with the verdict, the changes of the rules the calculator "
        f"reads do not fit in {limit:,} characters; the body runs past them so that every one "
        f"is listed.",
        "",
    ]


def _group_size(items: Items, key: tuple[str, str]) -> int:
    return len(items[key[0]][1][key[1]])


def _largest_fitting_cap(items: Items, keys: list[tuple[str, str]], caps: Caps, fits) -> int:
    """The largest cap for every group of `keys` at which the body fits (0 when none does)."""
    low, high = 0, max((_group_size(items, k) for k in keys), default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if fits({**caps, **{key: middle for key in keys}}):
            low = middle
        else:
            high = middle - 1
    return low


def _fill(items: Items, keys: list[tuple[str, str]], caps: Caps, fits) -> Caps:
    """One more item at a time, kind by kind in body order, while the body still fits."""
    for key in keys:
        while caps[key] < _group_size(items, key):
            more = {**caps, key: caps[key] + 1}
            if not fits(more):
                break
            caps = more
    return caps


def _truncation_notice(left_out: int, links: BodyLinks, *, rules_whole: bool = True) -> list[str]:
    note = _full_diff_note(links)
    if not left_out:
        return note
    where = "the full semantic diff" + (
        f" ([job summary and artifact]({links.full_diff_url}))"
        if links.full_diff_url
        else (f" (`{links.full_diff_path}`)" if links.full_diff_path else "")
    )
    listed = (
        "every change of the rules the calculator reads and the first items of the larger kinds"
        if rules_whole
        else "the first items of every kind, even of the rules the calculator reads"
    )
    return [f"> **Truncated:** this body lists {listed}; {left_out} more are in {where}.", ""]


def _fit(body: str, limit: int) -> str:
    """Last resort for pathological input: cut at the limit and say so."""
    if github_length(body) <= limit:
        return body
    notice = "\n\n> **Truncated** at GitHub's body limit; the rest is in the full semantic diff.\n"
    budget = limit - github_length(notice)
    cut = body[:budget]
    while github_length(cut) > budget:
        cut = cut[: len(cut) - max(1, (github_length(cut) - budget) // 2)]
    return cut + notice


def render_pr_title(plan: BumpPlan) -> str:
    title = plan.engine.title
    if plan.diff.first_extraction:
        return f"First extraction of {title} at {plan.new_pin.commit[:12]} ({plan.new_pin.date})\n"
    changed = [d for d in plan.diff.facts if not d.empty and not d.says_nothing_new]
    what = ", ".join(d.title for d in changed[:3]) if changed else "provenance only"
    if not any(not d.empty for d in plan.diff.facts):
        what = "header only"
    return f"Bump {title} to {plan.new_pin.commit[:12]} ({plan.new_pin.date}): {what}\n"
