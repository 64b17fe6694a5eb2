"""llama.cpp's architecture facts: LLM_ARCH_NAMES and the llm_arch_is_* class predicates and
the sets they list."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.llamacpp import (
    class_sets,
)
from apron.extractors.llamacpp.arch_names import arch_names
from apron.extractors.llamacpp.layout import (
    ARCH_CPP,
    ARCH_H,
    ARCH_READS,
    arch_name_rows,
    read_brace_warnings,
)
from apron.extractors.llamacpp.records import (
    ArchName,
    ClassPredicate,
    ClassSetListed,
    ClassSetMember,
)
from apron.extractors.records import FactKind, Record
from apron.extractors.snapshot import Snapshot


def _arch_names(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    cpp = snapshot.first_existing([ARCH_CPP], anchor="LLM_ARCH_NAMES")
    header = snapshot.first_existing([ARCH_H], anchor="enum llm_arch")
    records, warnings = arch_names(snapshot.read_text(cpp), cpp, snapshot.read_text(header), header)
    warnings += read_brace_warnings(snapshot, [cpp, header])
    return FactOutput(tuple(records), tuple(warnings))


def _scan(snapshot: Snapshot) -> class_sets.PredicateScan:
    cpp = snapshot.first_existing([ARCH_CPP], anchor="llm_arch_is_* predicates")
    header = snapshot.first_existing([ARCH_H], anchor="llm_arch_is_* declarations")
    return class_sets.scan_predicates(
        snapshot.read_text(cpp), cpp, snapshot.read_text(header), header
    )


def _class_predicates(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    scan = _scan(snapshot)
    rows = class_sets.predicate_rows(scan, arch_name_rows(needed), ARCH_CPP)
    return FactOutput(tuple(rows), scan.warnings)


def _class_set_listed(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    return FactOutput(tuple(class_sets.listed_rows(_scan(snapshot))))


def _class_set_members(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows, warnings = class_sets.members(_scan(snapshot), arch_name_rows(needed))
    return FactOutput(tuple(rows), tuple(warnings))


ARCH_NAMES = FactKind(
    "arch_names",
    "Architecture names",
    ArchName,
    "LLM_ARCH_NAMES: each llm_arch enum value and the GGUF general.architecture string it "
    "loads; cross-checked with enum llm_arch.",
)
CLASS_PREDICATES = FactKind(
    "class_predicates",
    "Architecture class predicates",
    ClassPredicate,
    "every llm_arch_is_* / llm_arch_supports_* predicate at this commit with its polarity in "
    "words; a predicate that does not exist at this commit is a row with present=False "
    "(absent, not empty). member_count counts the LLM_ARCH_NAMES entries (but "
    "LLM_ARCH_UNKNOWN) for which it returns true.",
)
CLASS_SET_LISTED = FactKind(
    "class_set_listed",
    "Class sets: listed case labels",
    ClassSetListed,
    "the raw `case LLM_ARCH_X:` labels of each predicate's switch and what each returns "
    "(llm_arch_supports_sm_tensor lists the architectures that return false).",
)
CLASS_SET_MEMBERS = FactKind(
    "class_set_members",
    "Class sets: members",
    ClassSetMember,
    "the architectures for which each predicate returns true (it HAS the property): listed "
    "labels that return true, or every unlisted architecture when the default is true.",
)

ARCH_NAMES_FACT = FactExtractor(ARCH_NAMES, _arch_names, reads=ARCH_READS)

CLASS_PREDICATES_FACT = FactExtractor(
    CLASS_PREDICATES, _class_predicates, reads=ARCH_READS, needs=("arch_names",)
)

CLASS_SET_LISTED_FACT = FactExtractor(
    CLASS_SET_LISTED, _class_set_listed, reads=ARCH_READS, allow_empty=True
)

CLASS_SET_MEMBERS_FACT = FactExtractor(
    CLASS_SET_MEMBERS,
    _class_set_members,
    reads=ARCH_READS,
    needs=("arch_names",),
    allow_empty=True,
)
