"""Render a Plan as readable terminal output (rich): the prediction, engines, support, citations."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from apron.results import EngineSupport, EngineView, Plan

UNKNOWN = "unknown"
HEAD_MECHANISMS = ("full_attention", "sliding_window", "hybrid_ssm")


def human_bytes(value: int | None) -> str:
    """'70,272 B (68.6 KiB)'; 'unknown' for None."""
    if value is None:
        return UNKNOWN
    if value == 0:
        return "0 B"
    units = ("KiB", "MiB", "GiB", "TiB")
    size = float(value)
    unit = "B"
    for candidate in units:
        if size < 1024:
            break
        size /= 1024
        unit = candidate
    if unit == "B":
        return f"{value:,} B"
    return f"{value:,} B ({size:.2f} {unit})"


def short_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    text = human_bytes(value)
    return text[text.index("(") + 1 : -1] if "(" in text else text


def _mechanism_lines(plan: Plan) -> list[Text]:
    p = plan.prediction
    r = plan.request
    lines = [Text.assemble(("Mechanism  ", "bold"), (p.title, "bold cyan"))]
    rows = [("KV per token", human_bytes(p.kv_bytes_per_token))]
    if r.context is not None:
        aware = "KV at context" if p.naive_ratio is None else "KV at context (aware)"
        rows.append((aware, human_bytes(p.kv_bytes_at_context)))
        if p.naive_ratio is not None or (
            p.naive_kv_bytes_at_context not in (None, p.kv_bytes_at_context)
        ):
            rows.append(("KV at context (naive)", human_bytes(p.naive_kv_bytes_at_context)))
            if p.naive_ratio is not None:
                rows.append(("naive / aware", f"{p.naive_ratio:.2f}x"))
    state = p.state_bytes_per_sequence
    rows.append(("state per sequence", "none" if state == 0 else human_bytes(state)))
    if r.context is not None or p.kv_bytes_at_context == 0:
        rows.append((f"batch {r.batch}: KV", human_bytes(plan.kv_bytes_for_batch)))
    if state != 0:
        rows.append((f"batch {r.batch}: state", human_bytes(plan.state_bytes_for_batch)))
    if plan.total_bytes_for_batch is not None or r.context is not None:
        rows.append((f"batch {r.batch}: total", human_bytes(plan.total_bytes_for_batch)))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        style = "yellow" if value == UNKNOWN else ""
        lines.append(Text.assemble(f"  {key:<{width}}  ", (value, style)))
    for reason in p.unknown:
        lines.append(Text.assemble("  ", ("unknown: ", "yellow"), reason))
    if p.missing:
        lines.append(Text.assemble("  ", ("missing fields: ", "yellow"), ", ".join(p.missing)))
    if p.arithmetic:
        lines.append(Text("  arithmetic:", style="dim"))
        lines.extend(Text(f"    {line}") for line in p.arithmetic)
    for note in (*plan.notes, *p.notes):
        lines.append(Text(f"  note: {note}", style="dim"))
    return lines


def _engine_table(views: tuple[EngineView, ...], context: int | None) -> Table:
    table = Table(
        title="What each engine would allocate at its pinned commit",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for column in (
        "engine",
        "commit",
        "mechanism",
        "KV/token",
        "KV at context" if context is not None else "KV at context (no context)",
        "state/seq",
        "differs",
    ):
        table.add_column(column)
    for v in views:
        if v.status != "constraints used" or v.mechanism is None:
            what = (
                v.status
                if v.commit is None
                else ("classes: " + ", ".join(v.flags) if v.flags else "no figures extracted")
            )
            table.add_row(v.title, (v.commit or "-")[:12], what, "-", "-", "-", "")
            continue
        table.add_row(
            v.title,
            (v.commit or "-")[:12],
            v.mechanism,
            short_bytes(v.kv_bytes_per_token),
            short_bytes(v.kv_bytes_at_context),
            "-" if v.state_bytes_per_sequence == 0 else short_bytes(v.state_bytes_per_sequence),
            "yes" if v.differs_from_prediction else "no",
        )
    return table


def _engine_notes(views: tuple[EngineView, ...]) -> list[Text]:
    lines: list[Text] = []
    for v in views:
        for note in v.notes:
            lines.append(Text.assemble(f"  {v.title}: ", (note, "dim" if v.commit is None else "")))
        for cite in v.citations[:4]:
            lines.append(
                Text(
                    f"    cites {cite.engine}@{cite.commit[:12]} {cite.path}"
                    f"{' :: ' + cite.symbol if cite.symbol else ''}",
                    style="dim",
                )
            )
    return lines


def _support_table(support: tuple[EngineSupport, ...], architecture: str | None) -> Table:
    table = Table(
        title=f"Engine support for {architecture or '(no architectures in config)'}",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for column in ("engine", "commit", "status", "task group", "where (path :: symbol)"):
        table.add_column(column, overflow="fold")
    for s in support:
        registry = [e for e in s.entries]
        if not registry:
            table.add_row(s.title, (s.commit or "-")[:12], s.status, "-", "; ".join(s.notes))
            continue
        first = True
        for entry in registry:
            where = f"{entry.citation.path} :: {entry.citation.symbol}"
            if entry.detail:
                where += f" ({entry.detail})"
            if entry.constraints:
                where += " | constraints: " + "; ".join(entry.constraints)
            table.add_row(
                s.title if first else "",
                (s.commit or "-")[:12] if first else "",
                s.status if first else entry.kind,
                entry.task_group or "-",
                escape(where),
            )
            first = False
        for note in s.notes:
            table.add_row("", "", "note", "", escape(note))
    return table


def render(plan: Plan, console: Console) -> None:
    r = plan.request
    used = [s for s in plan.constraints if s.present]
    header = Text.assemble(
        ("apron plan", "bold"),
        f"  {plan.source}   ",
        ("PREDICTION", "bold magenta"),
        " (from config fields and extracted engine rules, not a measurement)",
    )
    ident = f"{plan.architecture or '(no architectures)'} · model_type {plan.model_type or '?'}" + (
        f" (text: {plan.text_model_type})" if plan.text_config_key else ""
    )
    request = (
        f"context {r.context:,} tokens ({r.context_source})"
        if r.context is not None
        else f"context: {r.context_source}"
    ) + f" · KV dtype {r.kv_dtype} ({r.kv_dtype_bytes} B) · batch {r.batch}"
    heads = plan.kv_heads
    lines = [header, Text(ident), Text(request)]
    if r.max_model_len is not None and not r.context_source.startswith("default"):
        lines.append(
            Text(
                f"model maximum {r.max_model_len:,} tokens ({r.max_model_len_source})", style="dim"
            )
        )
    for warning in r.context_warnings:
        lines.append(Text(f"warning: {warning}", style="yellow"))
    if r.kv_dtype_source:
        lines.append(Text(f"KV dtype {r.kv_dtype} from {r.kv_dtype_source}", style="dim"))
    if r.ssm_dtype:
        lines.append(Text(f"SSM state dtype {r.ssm_dtype}: {r.ssm_dtype_source}", style="dim"))
    if plan.prediction.mechanism in HEAD_MECHANISMS:
        lines.append(
            Text(
                f"KV heads: {heads.how}"
                if heads.known
                else "KV heads: unknown: " + "; ".join(heads.unknown),
                style="dim",
            )
        )
    console.print(Group(*lines))
    console.print()
    for line in _mechanism_lines(plan):
        console.print(line)
    console.print()
    console.print(_engine_table(plan.engines, r.context))
    for line in _engine_notes(plan.engines):
        console.print(line)
    console.print()
    console.print(_support_table(plan.support, plan.architecture))
    console.print()
    stamps = "; ".join(
        f"{s.title} @ {s.commit} ({s.commit_date})"
        if s.present
        else f"{s.title}: constraints absent"
        for s in plan.constraints
    )
    console.print(
        Text.assemble(
            ("Prediction", "bold magenta"), f" using the generated constraints of: {stamps}"
        )
    )
    if not used:
        console.print(Text("no engine constraints were present", style="yellow"))
