"""SGLang's supported-model pages: one record per table row, in either docs layout.

2025 pages are `docs/supported_models/*.md` with pipe tables; 2026 pages are
`docs/docs/supported-models/*.mdx`, mostly HTML/JSX `<table>` blocks. Rows name a model
family, rarely an architecture class, so the comparison with the registry uses the names a
row writes and, for families, a normalized-prefix heuristic that the findings label as such."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from apron.extractors.doc_findings import (
    Documented,
    DocumentedFamily,
    Registered,
    compare,
    looks_like_architecture,
    normalized,
)
from apron.extractors.engine_api import FactOutput
from apron.extractors.errors import AnchorError
from apron.extractors.parsing.markdown import Document, Table, footnote_notes, parse_document
from apron.extractors.records import ExtractionWarning, Record
from apron.extractors.sglang.records import SglangDocsRow, SglangRegistryRow
from apron.extractors.snapshot import Snapshot

FAMILY_HEADER = "Model Family"
SKIPPED_COLUMNS = ("Description",)


@dataclass(frozen=True)
class DocsLayout:
    directory: str
    extension: str


# Newest first.
LAYOUTS = (
    DocsLayout("docs/docs/supported-models", ".mdx"),  # 2026
    DocsLayout("docs/supported_models", ".md"),  # 2025
)
# (page, heading that must hold a model table); None: recorded when present, not required
PAGES: tuple[tuple[str, str | None], ...] = (
    ("generative_models", "Supported models"),
    ("multimodal_language_models", "Supported models"),
    ("embedding_models", None),
    ("rerank_models", None),
    ("reward_models", None),
    ("diffusion_language_models", None),
)
READS = tuple(f"{lay.directory}/{page}{lay.extension}" for lay in LAYOUTS for page, _ in PAGES)


def is_model_table(table: Table) -> bool:
    return bool(table.headers) and table.headers[0].text.startswith(FAMILY_HEADER)


# In running text only class-shaped words count (`XForY`, `...Model`): family names such as
# `ChatGLM` or `StableLM` end in LM too. Inside code spans any architecture-shaped name counts.
PROSE_ARCHITECTURE = re.compile(r"^[A-Z][A-Za-z0-9_]*(?:For[A-Z][A-Za-z0-9_]*|[a-z0-9]Model)$")
FAMILY_STOPWORDS = {
    "model",
    "models",
    "series",
    "based",
    "family",
    "open",
    "chat",
    "base",
    "instruct",
    "vision",
    "language",
    "multimodal",
    "reward",
    "rerank",
    "embedding",
    "general",
    "dense",
    "hybrid",
    "variants",
    "with",
    "and",
}


def _names_in(text: str, code: tuple[str, ...]) -> list[str]:
    names = [c.strip() for c in code if looks_like_architecture(c.strip())]
    names += [
        w
        for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text)
        if looks_like_architecture(w) and PROSE_ARCHITECTURE.match(w)
    ]
    return list(dict.fromkeys(names))


def page_rows(document: Document) -> tuple[list[SglangDocsRow], list[ExtractionWarning]]:
    rows: list[SglangDocsRow] = []
    warnings: list[ExtractionWarning] = []
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    for table in document.tables:
        if not is_model_table(table):
            continue
        headers = table.header_texts
        section = table.section()

        def warn(code: str, subject: str, message: str, section: str = section) -> None:
            warnings.append(
                ExtractionWarning(
                    code=code,
                    subject=subject,
                    message=message,
                    path=document.path,
                    symbol=section,
                )
            )

        for row in table.rows:
            family = row.cells[0].text if row.cells else ""
            subject = family or "(empty row)"
            if row.is_ragged(len(headers)):
                warn(
                    "ragged-row",
                    subject,
                    f"row has {row.source_cells} cells, the header has {len(headers)}; "
                    "missing cells read as empty, extra cells dropped",
                )
            if not family:
                warn("no-family", subject, "row has an empty model family cell")
            architectures: list[str] = []
            examples: tuple[str, ...] = ()
            other: list[str] = []
            notes: list[str] = []
            for header, cell in zip(headers, row.cells, strict=False):
                cell_notes, problems = footnote_notes(document, cell, row.line)
                notes += [f"{header}: {n}" for n in cell_notes]
                for problem in problems:
                    warn("footnote", subject, f"{header}: {problem}")
                if header.startswith("Example"):
                    examples = tuple(c for c in cell.code if "/" in c)
                elif header not in SKIPPED_COLUMNS and not header.startswith(FAMILY_HEADER):
                    other.append(f"{header}={cell.text}")
                if header not in SKIPPED_COLUMNS and not header.startswith("Example"):
                    architectures += [
                        n for n in _names_in(cell.text, cell.code) if n not in architectures
                    ]
            if (section, family, examples) in seen:
                warn(
                    "duplicate-row",
                    subject,
                    "the same family and examples appear twice in one section",
                )
            seen.add((section, family, examples))
            rows.append(
                SglangDocsRow(
                    path=document.path,
                    section=section,
                    family=family,
                    architectures=tuple(architectures),
                    example_hf_ids=examples,
                    other_columns=tuple(other),
                    notes=tuple(notes),
                )
            )
    return rows, warnings


def find_layout(snapshot: Snapshot) -> DocsLayout:
    first_page = PAGES[0][0]
    candidates = [f"{lay.directory}/{first_page}{lay.extension}" for lay in LAYOUTS]
    found = snapshot.first_existing(candidates, anchor="SGLang supported-models pages")
    return next(lay for lay in LAYOUTS if found.startswith(lay.directory + "/"))


def docs_table_rows(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    layout = find_layout(snapshot)
    paths = [(f"{layout.directory}/{page}{layout.extension}", heading) for page, heading in PAGES]
    rows: list[SglangDocsRow] = []
    warnings: list[ExtractionWarning] = []
    for path, heading in paths:
        if not snapshot.exists(path):
            if heading is not None:
                raise snapshot.missing_anchor(
                    f"required page {path} is missing", [path], f"page: {path}"
                )
            continue
        document = parse_document(snapshot.read_text(path), path)
        if heading is not None:
            if not document.has_heading(heading):
                raise AnchorError(
                    f"heading '{heading}' not found in {path}",
                    paths=[path],
                    anchor=f"heading: {heading}",
                )
            if not [t for t in document.tables_under(heading) if is_model_table(t)]:
                raise AnchorError(
                    f"no table with a '{FAMILY_HEADER}' column under '{heading}' in {path}",
                    paths=[path],
                    anchor=f"table under heading: {heading}",
                )
        page_records, page_warnings = page_rows(document)
        rows += page_records
        warnings += page_warnings
    return FactOutput(tuple(rows), tuple(warnings))


def family_keys(family: str) -> tuple[str, ...]:
    """Normalized prefixes a family row covers: `Command-R (Cohere)` -> commandr, command, cohere."""
    head, _, rest = family.partition("(")
    keys = [normalized(head)]
    words = [w for w in re.split(r"[\s\-/,]+", head.strip()) if w]
    if words:
        keys.append(normalized(words[0]))
    for word in words[1:] + re.split(r"[\s\-/,()]+", rest):
        if len(word) >= 4 and word[0].isalpha() and word.casefold() not in FAMILY_STOPWORDS:
            keys.append(normalized(word))
    return tuple(dict.fromkeys(k for k in keys if len(k) >= 3))


def docs_findings(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    documented: list[Documented] = []
    families: list[DocumentedFamily] = []
    for row in needed["docs_table_rows"]:
        if not isinstance(row, SglangDocsRow):
            continue
        where = f"{row.path} § {row.section}"
        documented += [Documented(name=name, where=where) for name in row.architectures]
        if not row.architectures:
            families.append(
                DocumentedFamily(name=row.family, keys=family_keys(row.family), where=where)
            )
    registered = [
        Registered(name=row.architecture, where=f"{row.path}: {row.entry_name}", group=row.module)
        for row in needed["registry_rows"]
        if isinstance(row, SglangRegistryRow)
    ]
    return FactOutput(tuple(compare(documented, registered, families)))
