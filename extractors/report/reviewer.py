"""Reviewer pages across engines: the index and the cross-engine matrix keyed by HF architecture.

Rendered from the same records as the modules (loaded back from generated/), so they are as
deterministic as the modules. Line numbers never appear in cells."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import MatrixCell
from apron.extractors.engines import ENGINES
from apron.extractors.family_cells import model_type_guess
from apron.extractors.records import EngineFacts
from apron.extractors.report import families
from apron.extractors.report.engine_reports import engine_report
from apron.extractors.report.markdown import markdown_table

ENGINE_ORDER = tuple(ENGINES)  # the matrix's columns: the engine registry's order


def _title(engine_id: str) -> str:
    engine = ENGINES.get(engine_id)
    return engine.title if engine is not None else engine_id


def _generic_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    """Any fact whose records carry an `architecture` field (engines without their own cells)."""
    cells: dict[str, MatrixCell] = {}
    for result in facts.facts:
        if "architecture" not in result.kind.record.model_fields:
            continue
        for row in result.records:
            where = " ".join(
                str(getattr(row, f))
                for f in ("path", "symbol")
                if f in type(row).model_fields and getattr(row, f)
            )
            cells.setdefault(row.architecture, MatrixCell("registered", result.kind.title, where))
    return cells


def engine_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    """The engine's own cells (its package's `matrix_cells`), else the generic ones."""
    return (engine_report(facts.engine).matrix_cells or _generic_cells)(facts)


def _rows(facts: EngineFacts, fact: str) -> tuple:
    return facts.records(fact)


def mla_pairs(all_facts: Mapping[str, EngineFacts]) -> list[tuple[str, str]]:
    """(engine deciding MLA by architecture, engine deciding it by model_type) for every pair of
    extracted engines that decide it those two ways (EngineReport.mla_decided_by), in the
    registry's order."""

    def deciding(how: str) -> list[str]:
        return [
            e for e in ENGINE_ORDER if e in all_facts and engine_report(e).mla_decided_by == how
        ]

    return [(a, m) for a in deciding("architecture") for m in deciding("model_type")]


def mla_disagreements(
    all_facts: Mapping[str, EngineFacts], pair: tuple[str, str] | None = None
) -> list[tuple[str, str, str, str]]:
    """(architecture, model_type guess, what the model_type engine says, what the architecture
    engine says) where the two of `pair` (default: the first of mla_pairs) differ. The join
    guesses the model_type from the architecture name, and the table says so."""
    pairs = [pair] if pair is not None else mla_pairs(all_facts)[:1]
    if not pairs:
        return []
    by_arch, by_type = pairs[0]
    arch_says = engine_report(by_arch).mla_verdicts(all_facts[by_arch])  # type: ignore[misc]
    type_says = engine_report(by_type).mla_verdicts(all_facts[by_type])  # type: ignore[misc]
    out = []
    for arch, says in sorted(arch_says.items()):
        guess = model_type_guess(arch)
        other = type_says.get(guess, "not in the MLA list")
        if says.startswith("MLA") != other.startswith("MLA"):
            out.append((arch, guess, other, says))
    return out


def _mla_section(all_facts: Mapping[str, EngineFacts]) -> list[str]:
    """The matrix's MLA disagreements, one part per pair of engines that decide MLA differently."""
    lines = ["## MLA disagreements", ""]
    pairs = mla_pairs(all_facts)
    if not pairs:
        missing = [
            _title(e)
            for e in ENGINE_ORDER
            if engine_report(e).mla_decided_by and e not in all_facts
        ]
        return [*lines, "Not computed: " + ", ".join(missing) + " constraints are absent."]
    for by_arch, by_type in pairs:
        a, m = _title(by_arch), _title(by_type)
        if len(pairs) > 1:
            lines += [f"### {a} and {m}", ""]
        lines += [
            f"{a} decides MLA by architecture name, {m} by the text config's `model_type`. "
            "The join guesses the `model_type` from the architecture name. Where the guess "
            f"names a `model_type` {m} lists, the disagreement is direct; otherwise {m}'s "
            "answer depends on the checkpoint's (text) `model_type`, which a wrapper or draft "
            "architecture does not carry in its name.",
            "",
        ]
        found = mla_disagreements(all_facts, (by_arch, by_type))
        if not found:
            lines += ["None found.", ""]
            continue
        header = ["architecture", "model_type (guess)", m, a]
        direct = [d for d in found if d[2].startswith("MLA")]
        by_config = [d for d in found if not d[2].startswith("MLA")]
        if direct:
            lines += [f"### Direct (the name matches a {m} MLA model_type)", ""]
            lines += [*markdown_table(header, direct), ""]
        if by_config:
            lines += ["### Depends on the checkpoint's model_type", ""]
            lines += [*markdown_table(header, by_config), ""]
    return lines[:-1] if lines[-1] == "" else lines


def _short(where: str) -> str:
    """`a/b/registry.py _X` -> `registry.py _X`: the full path is on the engine's page."""
    path, _, symbol = where.partition(" ")
    return " ".join(p for p in (path.rsplit("/", 1)[-1], symbol) if p)


MATRIX_LIMIT = 100_000  # characters of MATRIX.md (tests/test_matrix_page.py holds it)


def render_matrix(all_facts: Mapping[str, EngineFacts]) -> str:
    """MATRIX.md, at most MATRIX_LIMIT characters: when the whole page would be longer, the
    cells leave out the file and symbol they were read from, then the last rows go; the page
    says what it left out and links the engine pages that hold it."""
    text = _render_matrix(all_facts, traces=True)
    if len(text) <= MATRIX_LIMIT:
        return text
    text = _render_matrix(all_facts, traces=False)
    if len(text) <= MATRIX_LIMIT:
        return text
    low, high = 0, len(_architectures(all_facts))
    while low < high:  # the most rows that fit
        middle = (low + high + 1) // 2
        if len(_render_matrix(all_facts, traces=False, rows=middle)) <= MATRIX_LIMIT:
            low = middle
        else:
            high = middle - 1
    return _render_matrix(all_facts, traces=False, rows=low)


def _engines(all_facts: Mapping[str, EngineFacts]) -> list[str]:
    return [e for e in ENGINE_ORDER if e in all_facts] + sorted(
        e for e in all_facts if e not in ENGINE_ORDER
    )


def _architectures(all_facts: Mapping[str, EngineFacts]) -> list[str]:
    return sorted({a for e in _engines(all_facts) for a in engine_cells(all_facts[e])})


def _pages(all_facts: Mapping[str, EngineFacts]) -> str:
    return ", ".join(f"[{_title(e)}]({e}/README.md)" for e in ENGINE_ORDER if e in all_facts)


def _render_matrix(
    all_facts: Mapping[str, EngineFacts], *, traces: bool, rows: int | None = None
) -> str:
    engines = _engines(all_facts)
    cells = {e: engine_cells(all_facts[e]) for e in engines}
    architectures = _architectures(all_facts)
    lines = [
        "# Cross-engine compatibility matrix",
        "",
        "Generated by `extract`. Do not edit. One row per HF architecture; one column per "
        "engine at its pinned commit.",
        "",
    ]
    lines += markdown_table(
        ["engine", "commit", "date"],
        ((_title(e), f"`{all_facts[e].commit}`", all_facts[e].commit_date) for e in engines),
    )
    missing = [_title(e) for e in ENGINE_ORDER if e not in all_facts]
    if missing:
        lines += ["", "No constraints extracted (every cell unknown): " + ", ".join(missing) + "."]
    lines += ["", *families.render_family_section(all_facts)]
    lines += _mla_section(all_facts)
    legend = (
        "Cell: `status: detail [flags] (file symbol)`; the engine's page gives full paths "
        "and blob SHAs."
        if traces
        else "Cell: `status: detail [flags]`. The file and symbol each cell was read from are "
        f"left out here, to keep this page under {MATRIX_LIMIT:,} characters: they are on each "
        f"engine's page and in its modules ({_pages(all_facts)})."
    )
    lines += [
        "",
        "## Matrix",
        "",
        legend + " `-` = not registered at that commit; `?` = no constraints for "
        "that engine. `registered*` = registered with a documented constraint.",
        "",
    ]
    headers = ["HF architecture", *[_title(e) for e in ENGINE_ORDER]]

    def cell(engine: str, arch: str) -> str:
        if engine not in all_facts:
            return "?"
        found = cells[engine].get(arch)
        if found is None:
            return "-"
        flags = f" [{', '.join(found.flags)}]" if found.flags else ""
        where = f" ({_short(found.where)})" if traces else ""
        return f"{found.status}: {found.detail}{flags}{where}"

    shown = architectures if rows is None else architectures[:rows]
    lines += markdown_table(headers, ([a, *[cell(e, a) for e in ENGINE_ORDER]] for a in shown))
    if len(shown) < len(architectures):
        left = architectures[len(shown) :]
        lines += [
            "",
            f"{len(left)} more architectures ({left[0]} .. {left[-1]}) are left out here, to "
            f"keep this page under {MATRIX_LIMIT:,} characters: each engine's page lists "
            f"them ({_pages(all_facts)}).",
        ]
    lines += ["", f"{len(architectures)} architectures.", ""]
    return "\n".join(lines)


def render_index(all_facts: Mapping[str, EngineFacts]) -> str:
    lines = [
        "# Generated engine constraints",
        "",
        "Generated by `extract`. Do not edit: run `extract --engine <id>` (or `extract bump`).",
        "",
        "- [Cross-engine compatibility matrix](MATRIX.md)",
        "",
    ]
    rows = []
    for engine in [e for e in ENGINE_ORDER if e in all_facts]:
        facts = all_facts[engine]
        counts = ", ".join(f"{r.kind.name} {len(r.records)}" for r in facts.facts)
        rows.append(
            (
                f"[{_title(engine)}]({engine}/README.md)",
                f"`{facts.commit}`",
                facts.commit_date,
                counts,
                len(facts.warnings),
            )
        )
    lines += markdown_table(["engine", "commit", "date", "facts", "warnings"], rows)
    absent = [_title(e) for e in ENGINE_ORDER if e not in all_facts]
    if absent:
        lines += ["", "Not extracted: " + ", ".join(absent) + "."]
    return "\n".join(lines) + "\n"


__all__ = ["mla_disagreements", "model_type_guess", "render_index", "render_matrix"]
