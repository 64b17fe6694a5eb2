"""The family x engine table that opens MATRIX.md: which architectures each engine puts in
each architecture family, derived only from that engine's extracted facts by stated rules.

A family cell is the architectures the engine registers (or converts) whose facts meet the
rule, with a trace (path, symbol). A family for which an engine has no extracted fact says so;
an engine without generated constraints is `?` everywhere."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engines import ENGINES
from apron.extractors.family_cells import FAMILIES, FamilyCell, empty_cells
from apron.extractors.records import EngineFacts
from apron.extractors.report.engine_reports import engine_report
from apron.extractors.report.markdown import markdown_table

__all__ = ["FAMILIES", "FamilyCell", "engine_families", "has_families", "render_family_section"]


def has_families(engine_id: str) -> bool:
    """Whether the engine's package states family rules (`EngineReport.families`)."""
    return engine_report(engine_id).families is not None


def engine_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    """The engine's cells by its own rules; every family without a rule when it has none."""
    families = engine_report(facts.engine).families
    if families is None:
        return empty_cells({f: "the engine states no family rules" for f in FAMILIES})
    return families(facts)


def _cell_text(cell: FamilyCell) -> str:
    if not cell.members:
        return f"- ({cell.no_rule})" if cell.no_rule else "0"
    names = ", ".join(a + ("*" if a in cell.conditional else "") for a in sorted(cell.members))
    traces = "; ".join(sorted(cell.traces)[:3]) + (" ..." if len(cell.traces) > 3 else "")
    return f"**{len(cell.members)}** ({traces}) <details><summary>names</summary>{names}</details>"


def render_family_section(all_facts: Mapping[str, EngineFacts]) -> list[str]:
    """The `## Families` section: the rules per engine, then the family x engine table."""
    order = tuple(ENGINES)  # the engines' order and titles are the registry's (EngineSpec)
    engines = [e for e in order if e in all_facts]
    lines = [
        "## Families",
        "",
        "Each cell: the number of architectures the engine's extracted facts put in the family, "
        "their names (folded: open `names`), and where the rule reads them (path, symbol; a cell with many sources "
        "shows the first three). `-` with a reason: that engine has no extracted fact for the "
        "family. `?`: no constraints extracted for the engine. `*`: only when an extra "
        "condition holds (the engine's page gives it). An architecture can be in several "
        "families. The rules:",
        "",
    ]
    for engine in order:
        rules = engine_report(engine).family_rules
        lines.append(
            f"- **{ENGINES[engine].title}**: " + "; ".join(f"{f}: {r}" for f, r in rules) + "."
        )
    lines.append("")
    per_engine = {e: engine_families(all_facts[e]) for e in engines}
    rows = []
    for family in FAMILIES:
        row = [family]
        for engine in order:
            row.append(_cell_text(per_engine[engine][family]) if engine in per_engine else "?")
        rows.append(row)
    lines += markdown_table(["family", *(ENGINES[e].title for e in order)], rows)
    lines.append("")
    return lines
