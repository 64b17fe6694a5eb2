"""TensorRT-LLM's supported-models page: the architecture table and the feature matrices,
every footnote reference resolved to its text and kept on the cell it qualifies.

Pure: page text in, records out."""

from __future__ import annotations

import re

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.markdown import (
    Cell,
    Document,
    Row,
    Table,
    footnote_notes,
    normalize_heading,
)
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.trtllm.records import TrtllmFeatureCell, TrtllmSupportedModel

ARCHITECTURE_HEADING = "Supported Models"
ARCHITECTURE_HEADER = "Architecture"
MATRIX_HEADING = "Model-Feature Support Matrix"
MATRIX_HEADER_PREFIX = "Model Architecture"
STATUSES = {"yes": "yes", "no": "no", "untested": "untested", "n/a": "n/a"}
TEXT_COLUMNS = {"Modality"}
IDENTIFIER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$")


def _warn(
    warnings: list[ExtractionWarning],
    code: str,
    subject: str,
    message: str,
    path: str,
    symbol: str,
) -> None:
    warnings.append(warning(code, subject, message, path, symbol))


def _architecture(cell: Cell) -> tuple[str, list[str]]:
    """(architecture, extra words) from `` `LlavaLlamaModel (VILA)` `` or a plain name."""
    source = cell.code[0] if cell.code else cell.text
    match = IDENTIFIER.match(source)
    if not match:
        return source.strip(), []
    extra = match.group(2).strip()
    return match.group(1), ([f"written as `{source.strip()}`"] if extra else [])


def _notes(
    document: Document,
    cell: Cell,
    row: Row,
    column: str,
    subject: str,
    symbol: str,
    warnings: list[ExtractionWarning],
) -> tuple[str, ...]:
    notes, problems = footnote_notes(document, cell, row.line)
    for problem in problems:
        _warn(warnings, "footnote", subject, f"{column}: {problem}", document.path, symbol)
    return tuple(notes)


def _ragged(
    table: Table,
    row: Row,
    subject: str,
    symbol: str,
    path: str,
    warnings: list[ExtractionWarning],
) -> None:
    if row.is_ragged(len(table.headers)):
        _warn(
            warnings,
            "ragged-row",
            subject,
            f"row has {row.source_cells} cells, the header has {len(table.headers)}; missing "
            "cells read as empty, extra cells dropped",
            path,
            symbol,
        )


def architecture_table(
    document: Document,
) -> tuple[list[TrtllmSupportedModel], list[ExtractionWarning]]:
    """Rows of the tables under "Supported Models" whose first column is Architecture."""
    if not document.has_heading(ARCHITECTURE_HEADING):
        raise AnchorError(
            f"heading '{ARCHITECTURE_HEADING}' not found in {document.path}",
            paths=[document.path],
            anchor=f"heading: {ARCHITECTURE_HEADING}",
        )
    tables = [
        t
        for t in document.tables_under(ARCHITECTURE_HEADING)
        if t.headers and t.headers[0].text == ARCHITECTURE_HEADER
    ]
    if not tables:
        raise AnchorError(
            f"no table with an '{ARCHITECTURE_HEADER}' column under "
            f"'{ARCHITECTURE_HEADING}' in {document.path}",
            paths=[document.path],
            anchor=f"table under heading: {ARCHITECTURE_HEADING}",
        )
    rows: list[TrtllmSupportedModel] = []
    warnings: list[ExtractionWarning] = []
    for table in tables:
        section = table.section(min_level=1)
        headers = table.header_texts
        for row in table.rows:
            cells = dict(zip(headers, row.cells, strict=False))
            arch_cell = row.cells[0]
            architecture, extra = _architecture(arch_cell)
            subject = architecture or "(empty row)"
            _ragged(table, row, subject, section, document.path, warnings)
            arch_notes = _notes(
                document, arch_cell, row, ARCHITECTURE_HEADER, subject, section, warnings
            )
            model = cells.get("Model", Cell(text=""))
            example = next(
                (c for h, c in cells.items() if h.startswith("HuggingFace")), Cell(text="")
            )
            rows.append(
                TrtllmSupportedModel(
                    section=section,
                    architecture=architecture,
                    architecture_notes=tuple(extra) + arch_notes,
                    model=model.text,
                    model_notes=_notes(document, model, row, "Model", subject, section, warnings),
                    hf_examples=tuple(example.code),
                    example_notes=_per_example(
                        example,
                        _notes(
                            document,
                            example,
                            row,
                            "HuggingFace Example",
                            subject,
                            section,
                            warnings,
                        ),
                    ),
                    path=document.path,
                )
            )
    warnings += _unread_tables(document)
    return rows, warnings


def _per_example(cell: Cell, notes: tuple[str, ...]) -> tuple[str, ...]:
    """Each footnote of an example cell on the example it follows: `"<hf id>: [^6] text"`."""
    by_label = {note.split("]", 1)[0][2:]: note for note in notes}
    placed = []
    for label, after in zip(cell.footnotes, cell.footnote_after_code, strict=False):
        note = by_label.get(label)
        if note is None:
            continue
        placed.append(f"{cell.code[after]}: {note}" if 0 <= after < len(cell.code) else note)
    return tuple(placed) if len(placed) == len(cell.footnotes) else notes


def _read_by_this_module(table: Table) -> bool:
    first = table.headers[0].text if table.headers else ""
    return first == ARCHITECTURE_HEADER or first.startswith(MATRIX_HEADER_PREFIX)


def _unread_tables(document: Document) -> list[ExtractionWarning]:
    """One warning per section whose tables neither reader takes (e.g. Visual Generation, which
    lists diffusion pipelines by HF model id, not architectures)."""
    skipped: dict[str, int] = {}
    for table in document.tables:
        if not _read_by_this_module(table):
            section = table.section(min_level=1) or "(top of page)"
            skipped[section] = skipped.get(section, 0) + 1
    found: list[ExtractionWarning] = []
    for section, count in sorted(skipped.items()):
        _warn(
            found,
            "skipped-section",
            section,
            f"{count} table(s) under '{section}' are not read: they have no Architecture or "
            "Model Architecture column, so they name no architecture",
            document.path,
            section,
        )
    return found


def feature_matrices(document: Document) -> tuple[list[TrtllmFeatureCell], list[ExtractionWarning]]:
    """Cells of every table whose first header starts with "Model Architecture"; at least one
    must sit under the "Model-Feature Support Matrix" heading."""
    wanted = normalize_heading(MATRIX_HEADING)
    headings = [text for _, text, _ in document.headings if wanted in normalize_heading(text)]
    if not headings:
        raise AnchorError(
            f"no heading containing '{MATRIX_HEADING}' in {document.path}",
            paths=[document.path],
            anchor=f"heading: {MATRIX_HEADING}",
        )
    tables = [
        t
        for t in document.tables
        if t.headers and t.headers[0].text.startswith(MATRIX_HEADER_PREFIX)
    ]
    if not any(t.under(h) for t in tables for h in headings):
        raise AnchorError(
            f"no table whose first column starts with '{MATRIX_HEADER_PREFIX}' "
            f"under '{headings[0]}' in {document.path}",
            paths=[document.path],
            anchor=f"table under heading: {MATRIX_HEADING}",
        )
    cells: list[TrtllmFeatureCell] = []
    warnings: list[ExtractionWarning] = []
    for table in tables:
        matrix = table.headings[-1][1] if table.headings else ""
        features = table.header_texts[1:]
        for row in table.rows:
            architecture, extra = _architecture(row.cells[0])
            subject = architecture or "(empty row)"
            _ragged(table, row, subject, matrix, document.path, warnings)
            row_notes = tuple(extra) + _notes(
                document, row.cells[0], row, "Architecture", subject, matrix, warnings
            )
            for feature, cell in zip(features, row.cells[1:], strict=False):
                notes = _notes(document, cell, row, feature, subject, matrix, warnings)
                if feature in TEXT_COLUMNS:
                    status = "text"
                else:
                    status = STATUSES.get(cell.text.strip().casefold(), "unknown")
                    if status == "unknown":
                        _warn(
                            warnings,
                            "unknown-cell-value",
                            subject,
                            f"{feature} cell {cell.text!r} is not Yes, No, Untested or N/A",
                            document.path,
                            matrix,
                        )
                cells.append(
                    TrtllmFeatureCell(
                        matrix=matrix,
                        architecture=architecture,
                        feature=feature,
                        status=status,
                        raw=cell.text,
                        notes=notes,
                        row_notes=row_notes,
                        path=document.path,
                    )
                )
    return cells, warnings
