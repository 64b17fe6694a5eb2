"""Semantic diff of two extractions: added, removed, changed and moved facts per kind."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from apron.extractors.records import EngineFacts, ExtractionWarning, FactResult, Record, SourceFile

Pair = tuple[Record, Record]


@dataclass(frozen=True)
class FactDiff:
    """`changed`: pairs whose facts differ (same identity, or re-keyed: see `rekeyed_fields`).
    `moved`: pairs that differ only in provenance (path, symbol): what they say is unchanged.
    `renamed`: pairs whose key was renamed (`renames`): one item, not a gain and a loss."""

    fact: str
    title: str
    added: tuple[Record, ...] = ()
    removed: tuple[Record, ...] = ()
    changed: tuple[Pair, ...] = ()
    moved: tuple[Pair, ...] = ()
    renamed: tuple[Pair, ...] = ()
    reordered: bool = False
    old_count: int = 0
    new_count: int = 0
    header_changed: bool = False  # the source files' blob SHAs or paths differ
    removal_notes: tuple[tuple[str, str], ...] = ()  # (label of a removed record, why it left)

    def removal_note(self, record: Record) -> str:
        return dict(self.removal_notes).get(record.label(), "")

    @property
    def empty(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.changed
            or self.moved
            or self.renamed
            or self.reordered
        )

    @property
    def says_nothing_new(self) -> bool:
        """Only moves: the generated files change, the facts do not."""
        return not (self.added or self.removed or self.changed or self.renamed or self.reordered)


@dataclass(frozen=True)
class SourceChanges:
    """The provenance headers: source files whose blob changed, newly read, no longer read."""

    blob_changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.blob_changed or self.added or self.removed)


@dataclass(frozen=True)
class EngineDiff:
    facts: tuple[FactDiff, ...]
    new_kinds: tuple[str, ...] = ()
    lost_kinds: tuple[str, ...] = ()
    warnings_added: tuple = field(default_factory=tuple)
    warnings_removed: tuple = field(default_factory=tuple)
    warnings_moved: tuple[Pair, ...] = ()
    sources: SourceChanges = SourceChanges()
    first_extraction: bool = False

    @property
    def empty(self) -> bool:
        return (
            all(f.empty for f in self.facts)
            and not self.new_kinds
            and not self.lost_kinds
            and not self.warnings_added
            and not self.warnings_removed
            and not self.warnings_moved
        )


# ------------------------------------------------------------------ field-level comparison


def _fields(record: Record) -> dict:
    return record.model_dump()


def changed_fields(old: Record, new: Record) -> tuple[str, ...]:
    """Names of the fields whose values differ, in the record's field order."""
    before, after = _fields(old), _fields(new)
    names = list(after) + [n for n in before if n not in after]
    return tuple(n for n in names if before.get(n) != after.get(n))


def provenance_fields(record: Record) -> frozenset[str]:
    return frozenset(record.PROVENANCE) & frozenset(_fields(record))


def fact_fields_changed(old: Record, new: Record) -> tuple[str, ...]:
    """The changed fields that say something (not where it was read)."""
    where = provenance_fields(new) | provenance_fields(old)
    return tuple(n for n in changed_fields(old, new) if n not in where)


def rekeyed_fields(old: Record, new: Record) -> tuple[str, ...]:
    """Key fields that differ: non-empty when the pair was matched across a key change."""
    if type(old) is not type(new) or not old.KEY:
        return ()
    return tuple(n for n in old.KEY if getattr(old, n) != getattr(new, n))


LINK_WITH_REFERENCE = re.compile(r"\[([^\]\[]*)\]\[[^\]\[]*\]")
LINK_WITH_URL = re.compile(r"\[([^\]\[]*)\]\([^)]*\)")
EMPHASIS = re.compile(r"(\*\*|__|`)")
SPACE = re.compile(r"\s+")


def plain_text(text: str) -> str:
    """`text` without markdown link syntax, emphasis and code marks, whitespace collapsed."""
    text = LINK_WITH_REFERENCE.sub(r"\1", text)
    text = LINK_WITH_URL.sub(r"\1", text)
    text = EMPHASIS.sub("", text)
    return SPACE.sub(" ", text).strip()


def _column(entry: str) -> str | None:
    name, sep, _ = entry.partition("=")
    return plain_text(name) if sep else None


def markup_only_reasons(old: Record, new: Record) -> tuple[str, ...]:
    """Why two records say the same once markup is ignored ("link syntax", "dropped column
    `V1`"); () when they differ in substance (or do not differ at all)."""
    names = fact_fields_changed(old, new)
    if not names or type(old) is not type(new):
        return ()
    reasons: set[str] = set()
    for name in names:
        before, after = getattr(old, name), getattr(new, name)
        if isinstance(before, str) and isinstance(after, str):
            if plain_text(before) != plain_text(after):
                return ()
            reasons.add("link syntax")
            continue
        if not (isinstance(before, tuple) and isinstance(after, tuple)):
            return ()
        if not all(isinstance(v, str) for v in (*before, *after)):
            return ()
        plain_before = [plain_text(v) for v in before]
        plain_after = [plain_text(v) for v in after]
        if plain_before != [v for v in before] or plain_after != [v for v in after]:
            reasons.add("link syntax")
        kept_columns = {_column(v) for v in plain_after}
        dropped = [v for v in plain_before if v not in plain_after]
        if [v for v in plain_before if v in plain_after] != plain_after:
            return ()
        for entry in dropped:
            column = _column(entry)
            if column is None or column in kept_columns:
                return ()
            reasons.add(f"dropped column `{column}`")
    return tuple(sorted(reasons))


# ------------------------------------------------------------------ pairing


def _keyed(records: tuple[Record, ...]) -> dict[tuple, Record]:
    keyed: dict[tuple, Record] = {}
    for record in records:
        key = record.identity() if record.KEY else tuple(_fields(record).values())
        keyed[key] = record
    return keyed


def _key_without_provenance(record: Record) -> tuple:
    where = provenance_fields(record)
    return tuple(getattr(record, n) for n in record.KEY if n not in where)


def _unique_matches(removed: list[Record], added: list[Record], key, new_key=None) -> list[Pair]:
    """Pairs of a removed and an added record with one key (`new_key` for the added side when
    given), each the only one of its side with it."""
    new_key = new_key or key
    old_keys = Counter(key(r) for r in removed)
    new_keys = Counter(new_key(r) for r in added)
    by_new = {new_key(r): r for r in added}
    return [
        (r, by_new[key(r)]) for r in removed if old_keys[key(r)] == 1 and new_keys.get(key(r)) == 1
    ]


def pair_rekeyed(removed: list[Record], added: list[Record]) -> list[Pair]:
    """Removed and added records that are one item whose key changed: the same key once
    provenance is ignored (a moved symbol), else the same label (a renumbered rule). A match
    must be unique on both sides."""
    pairs: list[Pair] = []
    if removed and removed[0].KEY and set(removed[0].KEY) & provenance_fields(removed[0]):
        pairs = _unique_matches(removed, added, _key_without_provenance)
    paired_old = {id(o) for o, _ in pairs}
    paired_new = {id(n) for _, n in pairs}
    pairs += _unique_matches(
        [r for r in removed if id(r) not in paired_old],
        [r for r in added if id(r) not in paired_new],
        _label,
    )
    return pairs


def _label(record: Record) -> str:
    return record.label()


SEPARATORS = re.compile(r"[\s_.\-]+")


def spelling(value: object) -> object:
    """A key value without case and separators: `ExaoneMoEForCausalLM` and
    `ExaoneMoeForCausalLM`, `AXK1` and `axk1`, `qwen3_5` and `qwen3.5` spell one name."""
    return SEPARATORS.sub("", value).lower() if isinstance(value, str) else value


def _respelled(record: Record) -> tuple:
    return tuple(spelling(v) for v in record.identity())


def _renamed_key(record: Record, renames: Mapping[str, str]) -> tuple:
    """The record's identity with each key string the registry renamed replaced by its new name."""
    return tuple(renames.get(v, v) if isinstance(v, str) else v for v in record.identity())


def pair_renamed(
    removed: list[Record], added: list[Record], renames: Mapping[str, str] = {}
) -> list[Pair]:
    """Removed and added records that are one item renamed: their keys differ only in case or
    separators, or the registry maps the old name to the new one (`renames`: the same module
    and class registered under a new architecture name). A match must be unique on both sides."""
    if not removed or not added or not removed[0].KEY:
        return []
    pairs: list[Pair] = []
    if renames:
        pairs = _unique_matches(
            removed, added, lambda r: _renamed_key(r, renames), lambda r: r.identity()
        )
    paired_old = {id(o) for o, _ in pairs}
    paired_new = {id(n) for _, n in pairs}
    pairs += _unique_matches(
        [r for r in removed if id(r) not in paired_old],
        [r for r in added if id(r) not in paired_new],
        _respelled,
    )
    return pairs


def registry_renames(old: FactResult | None, new: FactResult) -> dict[str, str]:
    """Architecture renames a registry fact says: a removed and an added row that register the
    same module and class (each the only one of its side to do so), old name -> new name."""
    if old is None or not {"module", "class_name", "architecture"} <= set(
        new.kind.record.model_fields
    ):
        return {}
    before = {r.architecture: r for r in old.records}
    after = {r.architecture: r for r in new.records}
    gone = [before[a] for a in sorted(before.keys() - after.keys())]
    came = [after[a] for a in sorted(after.keys() - before.keys())]
    target = lambda r: (r.module, r.class_name)  # noqa: E731
    return {o.architecture: n.architecture for o, n in _unique_matches(gone, came, target)}


def _split(pairs: list[Pair]) -> tuple[list[Pair], list[Pair]]:
    changed = [p for p in pairs if fact_fields_changed(*p)]
    moved = [p for p in pairs if not fact_fields_changed(*p)]
    return changed, moved


def diff_fact(old: FactResult | None, new: FactResult, renames: Mapping[str, str] = {}) -> FactDiff:
    old_keyed = _keyed(old.records) if old else {}
    new_keyed = _keyed(new.records)
    added = [new_keyed[k] for k in sorted(new_keyed.keys() - old_keyed.keys(), key=repr)]
    removed = [old_keyed[k] for k in sorted(old_keyed.keys() - new_keyed.keys(), key=repr)]
    same_key = [
        (old_keyed[k], new_keyed[k])
        for k in sorted(old_keyed.keys() & new_keyed.keys(), key=repr)
        if old_keyed[k] != new_keyed[k]
    ]
    rekeyed = pair_rekeyed(removed, added)
    paired_old = {id(o) for o, _ in rekeyed}
    paired_new = {id(n) for _, n in rekeyed}
    added = [r for r in added if id(r) not in paired_new]
    removed = [r for r in removed if id(r) not in paired_old]
    renamed = pair_renamed(removed, added, renames)
    added = [r for r in added if id(r) not in {id(n) for _, n in renamed}]
    removed = [r for r in removed if id(r) not in {id(o) for o, _ in renamed}]
    changed, moved = _split(same_key + rekeyed)
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
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(changed),
        moved=tuple(moved),
        renamed=tuple(renamed),
        reordered=reordered,
        old_count=len(old.records) if old else 0,
        new_count=len(new.records),
        header_changed=old is not None and set(old.sources) != set(new.sources),
    )


def diff_warnings(
    old: tuple[ExtractionWarning, ...], new: tuple[ExtractionWarning, ...]
) -> tuple[tuple, tuple, tuple[Pair, ...]]:
    """(added, removed, moved): a warning whose text is unchanged but whose path or symbol
    moved is a move, not a new warning plus a gone one."""
    old_set, new_set = set(old), set(new)
    added = sorted(new_set - old_set, key=repr)
    removed = sorted(old_set - new_set, key=repr)
    moved = [p for p in _unique_matches(removed, added, _warning_text) if p[0] != p[1]]
    moved_old = {id(o) for o, _ in moved}
    moved_new = {id(n) for _, n in moved}
    return (
        tuple(w for w in added if id(w) not in moved_new),
        tuple(w for w in removed if id(w) not in moved_old),
        tuple(moved),
    )


def _warning_text(warning: ExtractionWarning) -> tuple:
    return (warning.fact, warning.code, warning.subject, warning.message)


def diff_sources(old: EngineFacts | None, new: EngineFacts) -> SourceChanges:
    if old is None:
        return SourceChanges()
    before = _blobs(old.facts)
    after = _blobs(new.facts)
    return SourceChanges(
        blob_changed=tuple(
            sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
        ),
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys())),
    )


def _blobs(results: tuple[FactResult, ...]) -> dict[str, str]:
    blobs: dict[str, str] = {}
    for result in results:
        for source in result.sources:
            if isinstance(source, SourceFile):
                blobs[source.path] = source.blob
    return blobs


def with_removal_notes(diff: EngineDiff, notes: Mapping[str, str]) -> EngineDiff:
    """`diff` whose removed records carry why they left (architecture -> words), where the
    engine's own facts say so."""
    facts = []
    for delta in diff.facts:
        found = tuple(
            (r.label(), notes[r.architecture])
            for r in delta.removed
            if "architecture" in type(r).model_fields and r.architecture in notes
        )
        facts.append(replace(delta, removal_notes=found) if found else delta)
    return replace(diff, facts=tuple(facts))


def diff_engine(old: EngineFacts | None, new: EngineFacts) -> EngineDiff:
    old_by_name = {r.kind.name: r for r in old.facts} if old else {}
    new_names = {r.kind.name for r in new.facts}
    renames: dict[str, str] = {}
    for result in new.facts:
        support = result.kind.support
        if support is not None and support.role == "registry":
            renames |= registry_renames(old_by_name.get(result.kind.name), result)
    facts = tuple(diff_fact(old_by_name.get(r.kind.name), r, renames) for r in new.facts)
    added, removed, moved = diff_warnings(old.warnings if old else (), new.warnings)
    return EngineDiff(
        facts=facts,
        new_kinds=tuple(sorted(new_names - old_by_name.keys())) if old else (),
        lost_kinds=tuple(sorted(old_by_name.keys() - new_names)),
        warnings_added=added,
        warnings_removed=removed,
        warnings_moved=moved,
        sources=diff_sources(old, new),
        first_extraction=old is None,
    )
