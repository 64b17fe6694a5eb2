"""`extract support`: does an engine at a commit or release tag support an HF architecture?
Yes, no or unknown, from the facts extracted at that commit (the engine's registry fact decides;
its class facts say which classes it assigns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apron.extractors.commands.releases import release_tags, version_key
from apron.extractors.engine_api import EngineSpec
from apron.extractors.errors import (
    AnchorError,
    ExtractionError,
    GuardError,
    MissingPathError,
    ParseError,
    UnknownCommitError,
    UsageError,
)
from apron.extractors.git import GitSource, ResolvedCommit
from apron.extractors.records import EngineFacts, FactKind, Record
from apron.extractors.report.engine_reports import engine_report
from apron.extractors.runner.base import extract_engine
from apron.extractors.runner.factcache import FactCache, cached_engine

YES, NO, UNKNOWN = "yes", "no", "unknown"
# 2 is any error (apron.extractors.errors.ExtractionError.exit_code)
EXIT_CODES = {YES: 0, NO: 1, UNKNOWN: 3}
# a fact that cannot be read at the commit (its file moved, its anchor is gone): unknown, not error
UNREADABLE = (AnchorError, ParseError, MissingPathError, GuardError)
NEAREST_TAGS_SHOWN = 5


@dataclass(frozen=True)
class SupportAnswer:
    """The answer for one architecture at one commit, with what decided it."""

    engine: str
    architecture: str
    answer: str  # YES, NO or UNKNOWN
    commit: ResolvedCommit
    release: str | None  # the tag asked for; None for --commit or the pin
    fact: str  # the fact that decided
    reason: str  # why, in words, naming the file
    classes: tuple[str, ...] = ()  # the classes the engine assigns (from its class facts)
    notes: tuple[str, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)  # class fact -> why it is unknown

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.answer]

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "architecture": self.architecture,
            "answer": self.answer,
            "commit": self.commit.sha,
            "date": self.commit.date,
            "release": self.release,
            "decided_by": self.fact,
            "reason": self.reason,
            "classes": list(self.classes),
            "notes": list(self.notes),
            "classes_unknown": dict(sorted(self.unread.items())),
        }

    def lines(self) -> list[str]:
        at = f"{self.release} ({self.commit.sha})" if self.release else self.commit.sha
        out = [
            f"{self.engine} {self.architecture}: {self.answer}",
            f"  at {at}, {self.commit.date}",
            f"  decided by {self.fact}: {self.reason}",
        ]
        if self.answer == YES:
            out.append("  classes: " + (", ".join(self.classes) or "none of the tracked ones"))
        out += [f"  note: {note}" for note in self.notes]
        out += [
            f"  classes from {name} unknown: {why}" for name, why in sorted(self.unread.items())
        ]
        return out


def registry_kind(engine: EngineSpec) -> FactKind:
    """The engine's fact whose rows mean "the engine registers this architecture"."""
    for kind in engine.fact_kinds:
        if kind.support is not None and kind.support.role == "registry":
            return kind
    raise UsageError(f"{engine.title} has no registry fact: extract support cannot answer")


def _any_row(rows: Sequence[Record]) -> tuple[str, str]:
    if not rows:
        return NO, "not registered"
    row = rows[0]
    where = getattr(row, "path", "")
    symbol = getattr(row, "dict_name", "") or getattr(row, "symbol", "")
    return YES, f"registered in {where} {symbol}".rstrip()


def decide(
    engine: EngineSpec, facts: EngineFacts, architecture: str
) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]]:
    """(answer, deciding fact, reason, classes, notes) for `architecture` from facts extracted at
    one commit; the registry fact must be among them."""
    kind = registry_kind(engine)
    assert kind.support is not None
    notes: list[str] = []
    if engine.support_judge is not None:
        answer, fact, reason, classes = engine.support_judge(facts, architecture)
    else:
        rows = [
            r for r in facts.records(kind.name) if getattr(r, kind.support.field) == architecture
        ]
        answer, reason = _any_row(rows)
        fact, classes = kind.name, ()
        matrix_cells = engine_report(engine.engine_id).matrix_cells
        if answer == YES and matrix_cells is not None:
            cell = matrix_cells(facts).get(architecture)
            classes = cell.flags if cell else ()
    if answer == NO:
        removal_notes = engine_report(engine.engine_id).removal_notes
        removal = (removal_notes(facts) if removal_notes else {}).get(architecture)
        if removal:
            notes.append(f"{engine.title} says: {removal}")
        near = sorted(
            {
                getattr(r, kind.support.field)
                for r in facts.records(kind.name)
                if str(getattr(r, kind.support.field)).lower() == architecture.lower()
            }
            - {architecture}
        )
        if near:
            notes.append("registered under a different spelling: " + ", ".join(near))
    return answer, fact, reason, classes, tuple(notes)


def release_commit(engine: EngineSpec, source: GitSource, tag: str) -> str:
    """The commit a release tag of the source points to; an unknown tag names the nearest."""
    listed = dict(source.tags())
    if tag in listed:
        return listed[tag]
    releases = release_tags(listed.items(), engine.release_tags) if engine.release_tags else []
    wanted = version_key(tag)
    nearest = sorted(
        releases,
        key=lambda t: (
            sum(abs(a - b) for a, b in zip(version_key(t.name), wanted, strict=False)),
            t.name,
        ),
    )[:NEAREST_TAGS_SHOWN]
    shown = ", ".join(t.name for t in nearest) if nearest else "none"
    raise UnknownCommitError(
        f"the source has no tag {tag!r} ({len(releases)} release tag(s); nearest: {shown})",
        engine=engine.engine_id,
        commit=tag,
        source=source.source,
    )


def answer_support(
    engine: EngineSpec,
    source: GitSource,
    architecture: str,
    commit: str,
    *,
    release: str | None = None,
    fact_cache: FactCache | None = None,
) -> SupportAnswer:
    """Extract the registry fact (and the class facts) at `commit`, or at the tag `release`,
    through the fact cache, and answer. A registry fact that cannot be read there is `unknown`
    with the reason; a class fact that cannot be read leaves only the classes unknown."""
    sha = release_commit(engine, source, release) if release else commit
    resolved = source.resolve(sha)
    snapshot = source.snapshot_at(resolved)
    cached = cached_engine(engine, fact_cache or FactCache(None))
    kind = registry_kind(engine)

    def extract(name: str) -> EngineFacts:
        return extract_engine(
            cached, snapshot, commit_date=resolved.date, source_label=source.source, only={name}
        )

    base = dict(engine=engine.engine_id, architecture=architecture, commit=resolved)
    try:
        facts = extract(kind.name)
    except UNREADABLE as err:
        return SupportAnswer(
            **base, answer=UNKNOWN, release=release, fact=kind.name, reason=str(err)
        )
    results = {f.kind.name: f for f in facts.facts}
    unread: dict[str, str] = {}
    for name in engine.support_facts:
        try:
            for found in extract(name).facts:
                results.setdefault(found.kind.name, found)
        except ExtractionError as err:
            if not isinstance(err, UNREADABLE):
                raise
            unread[name] = err.message
    merged = EngineFacts(
        engine=facts.engine,
        commit=facts.commit,
        commit_date=facts.commit_date,
        upstream_url=facts.upstream_url,
        facts=tuple(results.values()),
        warnings=facts.warnings,
    )
    answer, fact, reason, classes, notes = decide(engine, merged, architecture)
    return SupportAnswer(
        **base,
        answer=answer,
        release=release,
        fact=fact,
        reason=reason,
        classes=classes,
        notes=notes,
        unread=unread if answer == YES else {},
    )


def answer_from_generated(
    engine: EngineSpec, facts: EngineFacts, architecture: str
) -> SupportAnswer:
    """The answer at the pin from the committed generated/<engine>/ (what extracting the pin
    writes, so no engine source is needed); a class fact it does not hold leaves only the
    classes unknown."""
    kind = registry_kind(engine)
    held = {f.kind.name for f in facts.facts}
    if kind.name not in held:
        raise UsageError(
            f"generated/{engine.engine_id} holds no {kind.name} fact: give --source (or "
            f"APRON_SOURCE_{engine.engine_id.upper()}) to extract it"
        )
    unread = {
        name: f"generated/{engine.engine_id} does not hold it"
        for name in engine.support_facts
        if name not in held
    }
    answer, fact, reason, classes, notes = decide(engine, facts, architecture)
    return SupportAnswer(
        engine=engine.engine_id,
        architecture=architecture,
        answer=answer,
        commit=ResolvedCommit(facts.commit, facts.commit_date, ""),
        release=None,
        fact=fact,
        reason=reason,
        classes=classes,
        notes=(*notes, f"from the committed generated/{engine.engine_id} at the pin (no source)"),
        unread=unread if answer == YES else {},
    )
