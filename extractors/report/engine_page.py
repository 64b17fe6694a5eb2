"""The reviewer's page for one engine, `generated/<engine>/README.md`: a summary first (the pin,
what the engine decides, counts per fact and per family), then one section per fact kind.

The page is for reading, so it is shorter than the modules: values shared by every row of a
fact are said once, boolean fields are one column of tokens (`[is_hybrid, supports_pp]`), the
fields a fact kind names in `page_omit` (vLLM's class MRO) and long "Read from" lists stay in
the Python module and `constraints.json`, and long tables are folded into `<details>`."""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence

from apron.extractors.parsing.expressions import Expression, infix
from apron.extractors.records import EngineFacts, FactResult, Record
from apron.extractors.report.families import FAMILIES, engine_families, has_families
from apron.extractors.report.markdown import markdown_table, md_cell

GENERATED_BY = "extract"
PAGE_LIMIT = 100_000  # characters; tests/test_engine_page.py holds every committed page to it
FOLD_ROWS = 10  # a table with more rows than this is folded into <details>
SOURCES_LISTED = 3  # a "Read from" list longer than this is a count
FLAG_COLUMNS = 4  # a record with at least this many boolean fields shows them as tokens
TRACE_FIELDS = ("path", "symbol")  # left to the module on tables longer than FOLD_ROWS
SECTION_BUDGET = 12_000  # a table longer than this is counted, not listed
COUNTED_VALUES = 12  # a column with at most this many distinct values is counted
FLAG_PREFIXES = ("is_", "supports_", "has_")


def _is_bool(annotation: object) -> bool:
    if annotation is bool:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = set(typing.get_args(annotation))
        return bool in args and args <= {bool, type(None)}
    return False


def _flag_fields(record: type[Record]) -> list[str]:
    names = [n for n, f in record.model_fields.items() if _is_bool(f.annotation)]
    return names if len(names) >= FLAG_COLUMNS else []


def _word(name: str) -> str:
    """`supports_pp` -> `pp`: the token a flag shows as on the page."""
    for prefix in FLAG_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _words(row: dict[str, object], flags: Sequence[str]) -> list[str]:
    return [_word(n) for n in flags if row[n] is True] + [
        f"{_word(n)}?" for n in flags if row[n] is None
    ]


def _tokens(row: dict[str, object], flags: Sequence[str]) -> str:
    return "[" + ", ".join(_words(row, flags)) + "]"


def _counted(values: list[str]) -> str:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{v or '(empty)'} {n}" for v, n in ordered)


def _counts_instead(
    result: FactResult, dumped: list[dict], columns: list[str], flags: list[str], size: int
) -> list[str]:
    """A fact too long for the page: its counts per column value and per flag, and its keys."""
    name = result.kind.name
    lines = [
        f"{len(dumped)} rows, {size:,} characters as a table: too long for this page. Every "
        f"row is in `{name}.py` and `constraints.json`; the counts:",
        "",
    ]
    for column in columns[1:]:
        values = [md_cell(d[column]) for d in dumped]
        if 1 < len(set(values)) <= COUNTED_VALUES:
            lines.append(f"- `{column}`: {_counted(values)}")
    if flags:
        tokens = [w for d in dumped for w in _words(d, flags)]
        lines.append(f"- `flags` (rows with each): {_counted(tokens)}")
        lines.append(
            "- no flag set: " + str(sum(1 for d in dumped if not _words(d, flags))) + " rows"
        )
    what = f"{columns[0]} values"
    if flags:
        keys = sorted({f"{md_cell(d[columns[0]])} {_tokens(d, flags)}" for d in dumped})
        what = f"{columns[0]} values with their flags"
    else:
        keys = sorted({md_cell(d[columns[0]]) for d in dumped})
    lines += [
        "",
        f"<details><summary>{len(keys)} {what}</summary>",
        "",
        ", ".join(keys),
        "",
        "</details>",
        "",
    ]
    return lines


def _sources_line(result: FactResult) -> str:
    sources = result.sources
    if len(sources) <= SOURCES_LISTED:
        return "Read from: " + ", ".join(f"`{s.path}`" for s in sources)
    return (
        f"Read from {len(sources)} files (listed with their blob SHAs in "
        f"`{result.kind.name}.py` `SOURCES` and in `constraints.json`)."
    )


def _table(lines: list[str], headers: list[str], rows: list[list[object]], what: str) -> None:
    table = markdown_table(headers, rows)
    if len(rows) > FOLD_ROWS:
        lines += [f"<details><summary>{len(rows)} {what}</summary>", "", *table, "", "</details>"]
    else:
        lines += [*table, "", f"{len(rows)} {what}."]
    lines.append("")


def _expression_words(annotation: object, value: object) -> object:
    """A field's value for the page: an expression as its infix words ("" for none)."""
    if annotation is Expression:
        return "" if value == () else infix(value)
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and args and isinstance(value, tuple):
        each = args[0]
        if each is Expression:  # a tuple of expressions, or a tuple of (text, ..., expression)
            return tuple(v if isinstance(v, str) else infix(v) for v in value)
        return tuple(_expression_words(each, v) for v in value)
    return value


def _in_words(record: type[Record], dumped: dict[str, object]) -> dict[str, object]:
    fields = record.model_fields
    return {n: _expression_words(fields[n].annotation, v) for n, v in dumped.items()}


def _fact_section(result: FactResult) -> list[str]:
    kind = result.kind
    records = result.sorted_records()
    lines = [f"## {kind.title}", "", kind.description, ""]
    if kind.ordered:
        lines += ["Order matters: rows are in upstream order.", ""]
    lines += [_sources_line(result), ""]
    dumped = [_in_words(kind.record, r.model_dump()) for r in records]
    omitted = list(kind.page_omit)
    if len(dumped) > FOLD_ROWS:
        omitted += [n for n in TRACE_FIELDS if n in kind.record.model_fields and n not in omitted]
    fields = [n for n in kind.record.model_fields if n not in omitted]
    flags = _flag_fields(kind.record)
    shared = []
    if len(dumped) > 1:
        shared = [n for n in fields if n not in flags and len({md_cell(d[n]) for d in dumped}) == 1]
    notes = []
    if shared:
        said = "; ".join(f"`{n}` = `{md_cell(dumped[0][n])}`" for n in shared)
        notes.append(f"Every row: {said}.")
    if flags:
        notes.append(
            "`flags`: the boolean fields that are True (`name?`: unknown; absent: False), "
            "without their `is_`/`supports_`/`has_` prefix, of "
            + ", ".join(f"`{n}`" for n in flags)
            + "."
        )
    if omitted:
        notes.append(
            "Not shown here (in the module and `constraints.json`): "
            + ", ".join(f"`{n}`" for n in omitted)
            + "."
        )
    for note in notes:
        lines += [note, ""]
    columns = [n for n in fields if n not in shared and n not in flags]
    headers = columns + (["flags"] if flags else [])
    rows = [[d[n] for n in columns] + ([_tokens(d, flags)] if flags else []) for d in dumped]
    size = len("\n".join(markdown_table(headers, rows)))
    if size > SECTION_BUDGET and columns:
        lines += _counts_instead(result, dumped, columns, flags, size)
    else:
        _table(lines, headers, rows, "rows")
    return lines


def _summary(facts: EngineFacts, title: str) -> list[str]:
    lines = [
        "## Summary",
        "",
        f"- pin: `{facts.commit}` ({facts.commit_date}), {facts.upstream_url}",
        f"- {sum(len(r.records) for r in facts.facts)} rows in {len(facts.facts)} facts; "
        f"{len(facts.warnings)} warnings",
        "",
        f"What {title} decides, one fact per line:",
        "",
    ]
    lines += markdown_table(
        ["fact", "rows", "what it says"],
        (
            [f"[{r.kind.title}](#{_anchor(r.kind.title)})", len(r.records), r.kind.description]
            for r in facts.facts
        ),
    )
    lines.append("")
    if has_families(facts.engine):
        cells = engine_families(facts)
        lines += [
            "Architectures per family (the rules are on `generated/MATRIX.md`; "
            "`-`: no extracted fact for the family):",
            "",
        ]
        lines += markdown_table(
            ["family", "architectures"],
            (
                [f, len(cells[f].members) if cells[f].members or not cells[f].no_rule else "-"]
                for f in FAMILIES
            ),
        )
        lines.append("")
    return lines


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, spaces to dashes, punctuation dropped."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def render_engine_markdown(facts: EngineFacts, title: str) -> str:
    """The reviewer's page for one engine: the summary, then one section per fact kind."""
    lines = [
        f"# {title} constraints",
        "",
        f"Generated by `{GENERATED_BY} --engine {facts.engine}`. Do not edit. Every field of "
        "every row, and every file read, is in the fact's module in this folder and in "
        "`constraints.json`.",
        "",
    ]
    lines += _summary(facts, title)
    for result in facts.facts:
        lines += _fact_section(result)
    lines += [f"## Warnings ({len(facts.warnings)})", ""]
    if facts.warnings:
        rows = [[w.fact, w.code, w.subject, w.message, w.path, w.symbol] for w in facts.warnings]
        _table(lines, ["fact", "code", "subject", "message", "path", "symbol"], rows, "warnings")
    else:
        lines.append("None.")
    return "\n".join(lines).rstrip("\n") + "\n"
