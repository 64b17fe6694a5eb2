"""vLLM's published model tables: supported_models.md and the pooling pages, row by row, and
how they compare with the code registry.

`page_rows` is pure (page text in, records out); `docs_table_rows` and `docs_findings` are the
fact functions that pick the pages of one docs layout."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from apron.extractors.doc_findings import Documented, Registered, compare
from apron.extractors.engine_api import FactOutput
from apron.extractors.errors import AnchorError, MissingPathError
from apron.extractors.parsing.markdown import Document, Row, Table, footnote_notes, parse_document
from apron.extractors.records import ExtractionWarning, Record
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm.records import RegistryRow, VllmDocsRow

# Newest first. Early 2025 (docs/source/models/) wrote the tables as MyST list-tables, which
# this extractor does not read; that layout fails with an error naming the heading.
SUPPORTED_PAGES = (
    "docs/models/supported_models.md",
    "docs/source/models/supported_models.md",
)
# 2026: one page per pooling task in a folder; 2025: one pooling page.
POOLING_DIRS = ("docs/models/pooling_models",)
POOLING_PAGES = ("docs/models/pooling_models.md", "docs/source/models/pooling_models.md")
POOLING_HEADING = "Pooling Models"
READS = (*SUPPORTED_PAGES, *(f"{d}/*.md" for d in POOLING_DIRS), *POOLING_PAGES)
REQUIRED_HEADINGS = ("List of Text-only Language Models", "List of Multimodal Language Models")

ARCHITECTURE_HEADER = "Architecture"
TEXT_COLUMNS = {
    "Architecture",
    "Models",
    "Inputs",
    "Example HF Models",
    "Backbone",
    "--convert",
    "Supported pooling tasks",
    "Plugin Repository",
    "Score template (see note)",
}
NAME = re.compile(r"^[A-Za-z_*][A-Za-z0-9_*]*$")
FEATURE_MARKS = {
    "✅": "yes",
    "🚧": "planned",
    "⚠": "limited",
    "": "no",
    "*": "as-original-model",
}


def _strip_variation(text: str) -> str:
    """`✅︎` and `✅` are one mark: drop emoji/text variation selectors."""
    return "".join(c for c in text if unicodedata.category(c) != "Mn" and c not in "\ufe0e\ufe0f")


def is_model_table(table: Table) -> bool:
    return bool(table.headers) and table.headers[0].text == ARCHITECTURE_HEADER


def _architectures(row: Row) -> tuple[str, ...]:
    if not row.cells:
        return ()
    cell = row.cells[0]
    if cell.code:
        return tuple(c.strip() for c in cell.code if c.strip())
    # without code spans only identifier-shaped words are names; a prose line that GFM reads
    # as a table row (no blank line after the table) names nothing
    parts = (part.strip() for part in cell.text.split(","))
    return tuple(p for p in parts if NAME.match(p))


def page_rows(document: Document) -> tuple[list[VllmDocsRow], list[ExtractionWarning]]:
    """Records for every row of every table on the page whose first column is Architecture."""
    rows: list[VllmDocsRow] = []
    warnings: list[ExtractionWarning] = []
    path = document.path

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
                    path=path,
                    symbol=section,
                )
            )

        for row in table.rows:
            architectures = _architectures(row)
            subject = ", ".join(architectures) or (row.cells[0].text if row.cells else "")
            if row.is_ragged(len(headers)):
                warn(
                    "ragged-row",
                    subject,
                    f"row has {row.source_cells} cells, the header has {len(headers)}; "
                    "missing cells read as empty, extra cells dropped",
                )
            if not architectures:
                warn(
                    "no-architecture",
                    subject or "(empty row)",
                    "row names no architecture; recorded with an empty architecture list",
                )
            features: list[str] = []
            other: list[str] = []
            notes: list[str] = []
            models = inputs = ""
            examples: tuple[str, ...] = ()
            for header, cell in zip(headers, row.cells, strict=False):
                cell_notes, problems = footnote_notes(document, cell, row.line)
                notes += [f"{header}: {n}" for n in cell_notes]
                for problem in problems:
                    warn("footnote", subject, f"{header}: {problem}")
                if header == "Architecture":
                    continue
                if header == "Models":
                    models = cell.text
                elif header == "Inputs":
                    inputs = cell.marked_text
                elif header == "Example HF Models":
                    examples = tuple(cell.code)
                elif header in TEXT_COLUMNS:
                    other.append(f"{header}={cell.text}")
                else:
                    raw = _strip_variation(cell.text.replace("\\", "")).strip()
                    mark = FEATURE_MARKS.get(raw)
                    if mark is None:
                        warn(
                            "unknown-cell-value",
                            subject,
                            f"{header} cell {cell.text!r} is not a known feature mark "
                            f"({', '.join(repr(k) for k in FEATURE_MARKS)})",
                        )
                        mark = f"?{cell.text}"
                    features.append(f"{header}={mark}")
            rows.append(
                VllmDocsRow(
                    path=path,
                    section=section,
                    architectures=architectures,
                    architecture_marks=tuple(row.cells[0].superscripts) if row.cells else (),
                    models=models,
                    inputs=inputs,
                    example_hf_models=examples,
                    features=tuple(features),
                    other_columns=tuple(other),
                    notes=tuple(notes),
                )
            )
    return rows, warnings


def _pooling_pages(snapshot: Snapshot) -> list[str]:
    for directory in POOLING_DIRS:
        pages = [p for p in snapshot.list_files(directory) if p.endswith(".md")]
        if pages:
            return pages
    for page in POOLING_PAGES:
        if snapshot.exists(page):
            return [page]
    raise MissingPathError(
        "no pooling models page exists at this commit",
        engine=snapshot.engine,
        commit=snapshot.commit,
        paths=[f"{d}/*.md" for d in POOLING_DIRS] + list(POOLING_PAGES),
        anchor="pooling model tables",
    )


def docs_table_rows(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    supported = snapshot.first_existing(SUPPORTED_PAGES, anchor="supported models page")
    document = parse_document(snapshot.read_text(supported), supported)
    for heading in REQUIRED_HEADINGS:
        if not document.has_heading(heading):
            raise AnchorError(
                f"heading '{heading}' not found in {supported}",
                paths=[supported],
                anchor=f"heading: {heading}",
            )
        if not [t for t in document.tables_under(heading) if is_model_table(t)]:
            raise AnchorError(
                f"no pipe table with an '{ARCHITECTURE_HEADER}' column under '{heading}' in "
                f"{supported}",
                paths=[supported],
                anchor=f"table under heading: {heading}",
            )
    rows, warnings = page_rows(document)
    pooling_pages = _pooling_pages(snapshot)
    pooling_rows = 0
    for page in pooling_pages:
        page_records, page_warnings = page_rows(parse_document(snapshot.read_text(page), page))
        rows += page_records
        warnings += page_warnings
        pooling_rows += len(page_records)
    # 2025 layouts keep the pooling tables in supported_models.md ("### Pooling Models")
    pooling_rows += sum(1 for r in rows if r.path == supported and POOLING_HEADING in r.section)
    if not pooling_rows:
        raise AnchorError(
            f"no table with an '{ARCHITECTURE_HEADER}' column on the pooling pages or under "
            f"'{POOLING_HEADING}' in {supported}",
            paths=[*pooling_pages, supported],
            anchor="pooling model tables",
        )
    return FactOutput(tuple(rows), tuple(warnings))


def _marks_note(marks: tuple[str, ...]) -> str:
    if "C" in marks:
        return "docs mark it ^C: converted at load time (--convert), not a registry entry"
    return ("docs mark it " + " ".join(f"^{m}" for m in marks)) if marks else ""


def docs_findings(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """Documented-vs-registered: the docs rows against the merged registry rows."""
    documented = [
        Documented(
            name=name, where=f"{row.path} § {row.section}", note=_marks_note(row.architecture_marks)
        )
        for row in needed["docs_table_rows"]
        if isinstance(row, VllmDocsRow)
        for name in row.architectures
    ]
    registered = [
        Registered(
            name=row.architecture, where=f"{row.path}: {row.dict_name}", group=row.task_group
        )
        for row in needed["registry_rows"]
        if isinstance(row, RegistryRow)
    ]
    return FactOutput(tuple(compare(documented, registered)))
