"""Frozen record types shared by all engines, and the description of a fact kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """One fact. Fields are plain values (str, int, bool, None, tuples of str) so that the
    renderer can write them as literals and `generated/schema.py` can mirror them as NamedTuples.

    `KEY` names the fields that identify a fact across commits (for semantic diffs).
    `PROVENANCE` names the fields that say where a fact was read, not what it says: a change
    in them alone is a move, not a change."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    KEY: ClassVar[tuple[str, ...]] = ()
    PROVENANCE: ClassVar[tuple[str, ...]] = ("path", "symbol", "class_path")

    def identity(self) -> tuple:
        return tuple(getattr(self, name) for name in self.KEY)

    def label(self) -> str:
        """Short words for this fact in a semantic diff ("+deepseek_v4")."""
        values = self.identity() if self.KEY else tuple(self.model_dump().values())
        return " ".join(str(v) for v in values)

    def shown(self, name: str) -> str | tuple[str, ...] | None:
        """Field `name` as people read it in a semantic diff (an expression in infix; a
        tuple field element by element), or None for its plain value."""
        return None

    def reading(self, name: str) -> str:
        """What field `name` says, in words, for a reading lost ("the default block size of
        FLASH_ATTN"); by default the field of this record."""
        return f"`{name}` of {self.label()}"


class ExtractionWarning(Record):
    """A soft problem found while extracting: a shadowed registry row, an unresolved join, ..."""

    KEY: ClassVar[tuple[str, ...]] = ("fact", "code", "subject")

    fact: str = ""  # the runner fills in the fact that returned the warning
    code: str
    subject: str
    message: str
    path: str
    symbol: str


def warning(code: str, subject: str, message: str, path: str, symbol: str) -> ExtractionWarning:
    """A warning of the fact being extracted (the runner stamps the fact's name on it)."""
    return ExtractionWarning(code=code, subject=subject, message=message, path=path, symbol=symbol)


class WarnsInFile:
    """For a reader of one file: `warn` appends a warning naming `self.path` to `self.warnings`."""

    path: str
    warnings: list[ExtractionWarning]

    def warn(self, code: str, subject: str, message: str, symbol: str) -> None:
        self.warnings.append(warning(code, subject, message, self.path, symbol))


SUPPORT_ROLES = ("registry", "documented", "finding", "matrix")


@dataclass(frozen=True)
class SupportScan:
    """How apron reads a fact whose rows name architectures, when it reports which engines
    support a config's architecture. Rendered into `generated/<engine>/__init__.py`.

    `field` is the record field holding the architecture (a string, or a tuple of strings).
    `role`: "registry" (a row means the engine registers it), "documented" (a docs entry),
    "finding" (a documented-vs-registered note), "matrix" (feature cells, merged into one entry)."""

    field: str
    role: str

    def __post_init__(self) -> None:
        if self.role not in SUPPORT_ROLES:
            raise ValueError(f"support role {self.role!r} is not one of {SUPPORT_ROLES}")


@dataclass(frozen=True)
class FactKind:
    """One kind of fact an engine yields: it becomes one module `generated/<engine>/<name>.py`."""

    name: str
    title: str
    record: type[Record]
    description: str
    ordered: bool = False  # True when the upstream order carries meaning (e.g. alias scan order)
    support: SupportScan | None = None  # set when apron scans this fact for architectures
    page_omit: tuple[str, ...] = ()  # fields kept in the module and constraints.json, not the page

    def __post_init__(self) -> None:
        if self.support is not None and self.support.field not in self.record.model_fields:
            raise ValueError(
                f"fact {self.name!r} scans field {self.support.field!r}, which "
                f"{self.record.__name__} does not have"
            )
        for name in self.page_omit:
            if name not in self.record.model_fields:
                raise ValueError(
                    f"fact {self.name!r} omits field {name!r} from its page, which "
                    f"{self.record.__name__} does not have"
                )


@dataclass(frozen=True)
class SourceFile:
    """A file read at the commit, named with its git blob SHA for the provenance header."""

    path: str
    blob: str


@dataclass(frozen=True)
class FactResult:
    """The records of one fact kind and the files they were read from."""

    kind: FactKind
    records: tuple[Record, ...]
    sources: tuple[SourceFile, ...]

    def sorted_records(self) -> tuple[Record, ...]:
        if self.kind.ordered:
            return self.records
        return tuple(sorted(self.records, key=_sort_key))


def _sort_key(record: Record) -> tuple:
    return tuple(_sortable(v) for v in record.model_dump().values())


def _sortable(value: object) -> tuple:
    if value is None:
        return (0, "")
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int):
        return (2, value)
    if isinstance(value, tuple):
        return (3, tuple(_sortable(v) for v in value))
    return (4, str(value))


@dataclass(frozen=True)
class EngineFacts:
    """Everything extracted for one engine at one commit."""

    engine: str
    commit: str
    commit_date: str
    upstream_url: str
    facts: tuple[FactResult, ...]
    warnings: tuple[ExtractionWarning, ...]

    def fact(self, name: str) -> FactResult:
        for result in self.facts:
            if result.kind.name == name:
                return result
        raise KeyError(name)

    def records(self, name: str) -> tuple[Record, ...]:
        """The records of fact `name`; none when this extraction (or an older generation read
        back from generated/) does not have the fact."""
        for result in self.facts:
            if result.kind.name == name:
                return result.records
        return ()
