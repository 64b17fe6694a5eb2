"""Semantic diff of two extractions: added, removed and changed facts per kind."""

from __future__ import annotations

from dataclasses import dataclass, field

from extractors.records import EngineFacts, FactResult, Record


@dataclass(frozen=True)
class FactDiff:
    fact: str
    title: str
    added: tuple[Record, ...] = ()
    removed: tuple[Record, ...] = ()
    changed: tuple[tuple[Record, Record], ...] = ()
    reordered: bool = False
    old_count: int = 0
    new_count: int = 0
    removal_notes: tuple[tuple[str, str], ...] = ()  # (label of a removed record, why it left)

    def removal_note(self, record: Record) -> str:
        return dict(self.removal_notes).get(record.label(), "")

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.reordered)


@dataclass(frozen=True)
class EngineDiff:
    facts: tuple[FactDiff, ...]
    new_kinds: tuple[str, ...] = ()
    lost_kinds: tuple[str, ...] = ()
    warnings_added: tuple = field(default_factory=tuple)
    warnings_removed: tuple = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return (
            all(f.empty for f in self.facts)
            and not self.new_kinds
            and not self.lost_kinds
            and not self.warnings_added
            and not self.warnings_removed
        )


def _keyed(result: FactResult) -> dict[tuple, Record]:
    keyed: dict[tuple, Record] = {}
    for record in result.records:
        key = record.identity() if record.KEY else tuple(record.model_dump().values())
        keyed[key] = record
    return keyed


def diff_fact(old: FactResult | None, new: FactResult) -> FactDiff:
    old_keyed = _keyed(old) if old else {}
    new_keyed = _keyed(new)
    added = tuple(new_keyed[k] for k in sorted(new_keyed.keys() - old_keyed.keys(), key=repr))
    removed = tuple(old_keyed[k] for k in sorted(old_keyed.keys() - new_keyed.keys(), key=repr))
    changed = tuple(
        (old_keyed[k], new_keyed[k])
        for k in sorted(old_keyed.keys() & new_keyed.keys(), key=repr)
        if old_keyed[k] != new_keyed[k]
    )
    reordered = bool(
        new.kind.ordered
        and old is not None
        and not added
        and not removed
        and [r.identity() for r in old.records] != [r.identity() for r in new.records]
    )
    return FactDiff(
        fact=new.kind.name,
        title=new.kind.title,
        added=added,
        removed=removed,
        changed=changed,
        reordered=reordered,
        old_count=len(old.records) if old else 0,
        new_count=len(new.records),
    )


NOTICE_FACT = "registry_notices"
NOTED_FACT = "registry_rows"
NOTICE_WORDS = {
    "previously-supported": "removed; {engine} lists it as previously supported up to {detail}",
    "out-of-tree": "removed; {engine} lists it as supported out of tree by {detail}",
}
ENGINE_NAMES = {"vllm": "vLLM"}


def removal_notes(new: EngineFacts) -> dict[str, str]:
    """Architecture -> why it left the registry, from the engine's own notice lists."""
    notes: dict[str, str] = {}
    try:
        notices = new.fact(NOTICE_FACT).records
    except KeyError:
        return notes
    engine = ENGINE_NAMES.get(new.engine, new.engine)
    for notice in notices:
        words = NOTICE_WORDS.get(getattr(notice, "kind", ""))
        if words is not None:
            notes[notice.architecture] = words.format(engine=engine, detail=notice.detail)
    return notes


def _with_notes(delta: FactDiff, notes: dict[str, str]) -> FactDiff:
    found = tuple(
        (r.label(), notes[r.architecture])
        for r in delta.removed
        if getattr(r, "architecture", None) in notes
    )
    if not found:
        return delta
    return FactDiff(**{**delta.__dict__, "removal_notes": found})


def diff_engine(old: EngineFacts | None, new: EngineFacts) -> EngineDiff:
    old_by_name = {r.kind.name: r for r in old.facts} if old else {}
    new_names = {r.kind.name for r in new.facts}
    facts = tuple(diff_fact(old_by_name.get(r.kind.name), r) for r in new.facts)
    notes = removal_notes(new)
    if notes:
        facts = tuple(_with_notes(d, notes) if d.fact == NOTED_FACT else d for d in facts)
    old_warnings = set(old.warnings) if old else set()
    new_warnings = set(new.warnings)
    return EngineDiff(
        facts=facts,
        new_kinds=tuple(sorted(new_names - old_by_name.keys())) if old else (),
        lost_kinds=tuple(sorted(old_by_name.keys() - new_names)),
        warnings_added=tuple(sorted(new_warnings - old_warnings, key=repr)),
        warnings_removed=tuple(sorted(old_warnings - new_warnings, key=repr)),
    )
