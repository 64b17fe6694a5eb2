"""Suspected misreads: what a new extraction lost that the engine's files say is still there.

A bump compares each fact's records with the previous extraction's. Two kinds of loss are
suspected misreads, not upstream changes, and the pull request shows them first:
- a record the previous extraction had whose key (an architecture name, a model_type, an arch
  enum) still appears verbatim in the files that fact reads at the new commit ("dropped");
- a field whose value turned into `unknown` or None on a record both extractions have
  ("turned unknown"). An empty string or tuple is not enough: fields such as a registry row's
  section label or its shadowed groups are empty as a real upstream state.
Pure: it gets both extractions and a reader of the new commit's files."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from apron.extractors.records import EngineFacts, Record

UNKNOWN = "unknown"  # what a reader records for a shape it cannot read
UNKNOWN_VALUES = (UNKNOWN, "")


@dataclass(frozen=True)
class LostReading:
    fact: str
    kind: str  # "dropped" or "turned unknown"
    key: str  # the record's key values, space-separated
    detail: str  # what was read before, and where the key still appears

    def line(self) -> str:
        return f"`{self.fact}` {self.key}: {self.kind}, {self.detail}"


def _key(record: Record) -> str:
    return " ".join(str(v) for v in record.identity())


def _key_strings(record: Record) -> list[str]:
    return [v for v in record.identity() if isinstance(v, str) and v]


def _lost_value(old: object, new: object) -> bool:
    if old is None or old == () or old is False or old in UNKNOWN_VALUES:
        return False
    return new is None or new == UNKNOWN


def readings_lost(
    old: EngineFacts | None,
    new: EngineFacts,
    read_text: Callable[[str], str | None],
    removal_notes: Mapping[str, str] | None = None,
) -> list[LostReading]:
    """The suspected misreads of `new` against `old`, in fact order then key order.
    `read_text(path)` gives a file of the new commit (None when it cannot be read); only the
    files of facts that lost a record are read. Not suspected: a record whose architecture the
    engine's own facts say was removed (`removal_notes`, e.g. vLLM's previously-supported
    list), and a record re-keyed (another record has the same text keys, e.g. a new rule
    order)."""
    notes = removal_notes or {}
    if old is None:
        return []
    new_by_kind = {result.kind.name: result for result in new.facts}
    found: list[LostReading] = []
    for result in old.facts:
        if not result.kind.record.KEY:
            continue
        newer = new_by_kind.get(result.kind.name)
        if newer is None:
            continue
        now = {record.identity(): record for record in newer.records}
        text_keys = {tuple(_key_strings(record)) for record in newer.records}
        texts: list[tuple[str, str]] | None = None
        for record in sorted(result.records, key=_key):
            current = now.get(record.identity())
            if current is None:
                if getattr(record, "architecture", None) in notes:
                    continue  # the engine says it was removed
                if tuple(_key_strings(record)) in text_keys:
                    continue  # re-keyed, not lost
                if texts is None:
                    texts = [
                        (source.path, text)
                        for source in newer.sources
                        if (text := read_text(source.path)) is not None
                    ]
                where = _still_in(record, texts)
                if where:
                    found.append(
                        LostReading(
                            result.kind.name,
                            "dropped",
                            _key(record),
                            f"no longer read, but its key is still in {where}",
                        )
                    )
                continue
            for name in type(record).model_fields:
                if name in record.PROVENANCE:
                    continue
                before, after = getattr(record, name), getattr(current, name)
                if _lost_value(before, after):
                    found.append(
                        LostReading(
                            result.kind.name,
                            "turned unknown",
                            _key(record),
                            f"`{name}` was {before!r}, now {after!r}",
                        )
                    )
    return found


def _still_in(record: Record, texts: list[tuple[str, str]]) -> str:
    """The first file (in the fact's source order) holding every string of the record's key."""
    keys = _key_strings(record)
    if not keys:
        return ""
    for path, text in texts:
        if all(key in text for key in keys):
            return path
    return ""
