"""Documented-vs-registered findings: an engine's supported-model tables against its code registry.

Shared by every engine that publishes model tables. Pure: names in, findings out."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from apron.extractors.records import Record

DOCUMENTED_NOT_REGISTERED = "documented-not-registered"
REGISTERED_NOT_DOCUMENTED = "registered-not-documented"
OTHER_SPELLING = "documented-other-spelling"


class DocRegistryFinding(Record):
    """An architecture the docs and the code registry disagree on (name, spelling or presence)."""

    KEY: ClassVar[tuple[str, ...]] = ("finding", "architecture")

    finding: str  # documented-not-registered, registered-not-documented, documented-other-spelling
    architecture: (
        str  # as the docs write it; as the code registers it for registered-not-documented
    )
    registered_as: tuple[
        str, ...
    ]  # the registered spelling(s) a documented name matches; () if none
    match: str  # exact-name, case-and-punctuation, class-name, version-token, family-prefix, none
    documented_in: tuple[str, ...]  # "<page> § <section>" of each table naming it
    registered_in: tuple[str, ...]  # "<path>: <where>" of each registration
    note: str


@dataclass(frozen=True)
class Documented:
    """An architecture name a doc table writes explicitly."""

    name: str
    where: str  # "<page> § <section>"
    note: str = ""  # what the docs say about it that explains a mismatch, e.g. "marked ^C"


@dataclass(frozen=True)
class DocumentedFamily:
    """A model family row that names no architecture (SGLang's tables): covered by prefix keys."""

    name: str
    keys: tuple[str, ...]  # normalized prefixes, e.g. ("deepseek",)
    where: str


@dataclass(frozen=True)
class Registered:
    name: str
    where: str  # "<path>: <dict or module or class>"
    group: str = ""  # task group or module, for the note
    class_name: str = ""  # the class that registers `name`, when it can differ from it


VERSION_TOKEN = re.compile(r"v\d+(?=for|$)")


def version_variant(name: str) -> str:
    """Normalized with a version token before `For...` dropped: `HunYuanDenseV1ForCausalLM`
    -> `hunyuandenseforcausallm`. Two names pair when one of them, so reduced, IS the other
    (`DeepseekV3...` reduced is `deepseekforcausallm`, which no name is)."""
    return VERSION_TOKEN.sub("", normalized(name))


def normalized(name: str) -> str:
    """Case and punctuation folded: `Qwen2_5_VLForConditionalGeneration` -> `qwen25vlforconditionalgeneration`."""
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def compare(
    documented: Iterable[Documented],
    registered: Iterable[Registered],
    families: Iterable[DocumentedFamily] = (),
    *,
    spelling_variants: bool = False,
) -> list[DocRegistryFinding]:
    """Findings, one per architecture name: documented but not registered, registered but
    not documented, documented under another spelling. Names with `*` are patterns, not
    architectures, and are ignored. A documented name that is the class of a registration
    (`Registered.class_name`) is paired with it; with `spelling_variants`, so is a name a
    version token apart (`...V1For...`)."""
    doc_where: dict[str, set[str]] = defaultdict(set)
    doc_notes: dict[str, set[str]] = defaultdict(set)
    for item in documented:
        if item.name and "*" not in item.name:
            doc_where[item.name].add(item.where)
            if item.note:
                doc_notes[item.name].add(item.note)
    reg_where: dict[str, set[str]] = defaultdict(set)
    reg_group: dict[str, set[str]] = defaultdict(set)
    reg_by_class: dict[str, set[str]] = defaultdict(set)
    for item in registered:
        reg_where[item.name].add(item.where)
        if item.group:
            reg_group[item.name].add(item.group)
        if item.class_name and item.class_name != item.name:
            reg_by_class[item.class_name].add(item.name)
    reg_norm = {name: normalized(name) for name in reg_where}
    registered_names = sorted(reg_where)
    reg_by_norm: dict[str, set[str]] = defaultdict(set)
    reg_by_variant: dict[str, set[str]] = defaultdict(set)  # one side has the token, one not
    for name, norm in reg_norm.items():
        reg_by_norm[norm].add(name)
        if spelling_variants and version_variant(name) != norm:
            reg_by_variant[version_variant(name)].add(name)

    findings: list[DocRegistryFinding] = []
    covered: set[str] = set()
    for name, where in doc_where.items():
        if name in reg_where:
            covered.add(name)
            continue
        spelled = sorted(reg_by_norm.get(normalized(name), ()))
        match, note = "case-and-punctuation", f"documented as {name}, registered as "
        if not spelled and name in reg_by_class:
            spelled = sorted(reg_by_class[name])
            match = "class-name"
            note = f"documented as the class {name}, which registers the architecture "
        if not spelled and spelling_variants:
            spelled = sorted(
                reg_by_variant.get(normalized(name), ())
                or reg_by_norm.get(version_variant(name), ())
            )
            match = "version-token"
            note = f"documented as {name}, a version token apart from the registered "
        if spelled:
            covered.update(spelled)
            findings.append(
                DocRegistryFinding(
                    finding=OTHER_SPELLING,
                    architecture=name,
                    registered_as=tuple(spelled),
                    match=match,
                    documented_in=tuple(sorted(where)),
                    registered_in=tuple(sorted(w for s in spelled for w in reg_where[s])),
                    note=note + ", ".join(spelled),
                )
            )
            continue
        close = difflib.get_close_matches(name, registered_names, n=1, cutoff=0.85)
        notes = sorted(doc_notes.get(name, ()))
        if close:
            notes.append(f"closest registered name: {close[0]}")
        findings.append(
            DocRegistryFinding(
                finding=DOCUMENTED_NOT_REGISTERED,
                architecture=name,
                registered_as=(),
                match="none",
                documented_in=tuple(sorted(where)),
                registered_in=(),
                note="; ".join(notes),
            )
        )

    for family in families:
        keys = tuple(k for k in family.keys if k)
        matched = sorted(n for n, norm in reg_norm.items() if norm.startswith(keys))
        covered.update(matched)
        if keys and not matched:
            findings.append(
                DocRegistryFinding(
                    finding=DOCUMENTED_NOT_REGISTERED,
                    architecture=family.name,
                    registered_as=(),
                    match="family-prefix",
                    documented_in=(family.where,),
                    registered_in=(),
                    note="a family row; no registered architecture starts with "
                    + " or ".join(keys),
                )
            )

    for name in sorted(set(reg_where) - covered):
        groups = sorted(reg_group.get(name, ()))
        findings.append(
            DocRegistryFinding(
                finding=REGISTERED_NOT_DOCUMENTED,
                architecture=name,
                registered_as=(name,),
                match="none",
                documented_in=(),
                registered_in=tuple(sorted(reg_where[name])),
                note=("group: " + ", ".join(groups)) if groups else "",
            )
        )
    return _merge_family_rows(findings)


def _merge_family_rows(findings: list[DocRegistryFinding]) -> list[DocRegistryFinding]:
    """One finding per (finding, architecture): a family written on two pages is one row."""
    merged: dict[tuple[str, str], DocRegistryFinding] = {}
    for finding in findings:
        key = (finding.finding, finding.architecture)
        previous = merged.get(key)
        if previous is None:
            merged[key] = finding
        else:
            merged[key] = previous.model_copy(
                update={
                    "documented_in": tuple(
                        sorted({*previous.documented_in, *finding.documented_in})
                    )
                }
            )
    return list(merged.values())


ARCHITECTURE_NAME = re.compile(
    r"^[A-Z][A-Za-z0-9_]*(?:For[A-Z][A-Za-z0-9_]*|Model|LM|Generation|Classification)$"
)


def looks_like_architecture(word: str) -> bool:
    """`LlamaForCausalLM`, `BgeRerankModel`, `CLIPModel`; not `LLM`, `VILA` or `Model`."""
    return (
        bool(ARCHITECTURE_NAME.match(word))
        and not word.isupper()
        and word not in ("Model", "Generation", "Classification")
    )
