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


def diff_engine(old: EngineFacts | None, new: EngineFacts) -> EngineDiff:
    old_by_name = {r.kind.name: r for r in old.facts} if old else {}
    new_names = {r.kind.name for r in new.facts}
    facts = tuple(diff_fact(old_by_name.get(r.kind.name), r) for r in new.facts)
    old_warnings = set(old.warnings) if old else set()
    new_warnings = set(new.warnings)
    return EngineDiff(
        facts=facts,
        new_kinds=tuple(sorted(new_names - old_by_name.keys())) if old else (),
        lost_kinds=tuple(sorted(old_by_name.keys() - new_names)),
        warnings_added=tuple(sorted(new_warnings - old_warnings, key=repr)),
        warnings_removed=tuple(sorted(old_warnings - new_warnings, key=repr)),
    )
