"""`apron plot`: KV bytes against context for each engine, with the naive figure beside it.

The data (`kv_curves`) is pure and needs no plotting library; drawing it (`write_plot`) needs
matplotlib, the optional extra `plot` (`install_hint` says how, as apron was installed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from apron.errors import ApronInputError
from apron.output_files import OutputFile, check_output, discard, write_output
from apron.record import Record
from apron.results import Plan
from apron.terminal import shown

FORMATS = (".png", ".svg")
FIRST_CONTEXT = 1024


def install_hint() -> str:
    """`pip install -e '.[plot]'` in a checkout, `pip install 'apron-extract[plot]'` else."""
    from apron.version import extra_install_hint

    return extra_install_hint("plot")


class PlotUnavailable(ApronInputError):
    """matplotlib (the `plot` extra) is not installed."""


class Series(Record):
    """One line of the plot: (context, bytes) points; bytes None where unknown."""

    label: str
    points: tuple[tuple[int, int | None], ...]
    naive: bool  # the naive figure (every layer at full context), drawn dashed


class PlotData(Record):
    """What `apron plot` draws."""

    title: str
    y_label: str
    series: tuple[Series, ...]
    notes: tuple[str, ...]


def contexts_up_to(maximum: int, first: int = FIRST_CONTEXT) -> tuple[int, ...]:
    """Powers of two from `first` up to `maximum`, then `maximum` itself."""
    points: list[int] = []
    value = first
    while value < maximum:
        points.append(value)
        value *= 2
    points.append(maximum)
    return tuple(points)


def _engine_bytes(plan: Plan, engine: str) -> int | None:
    for view in plan.engines:
        if view.engine != engine:
            continue
        if view.gpu is not None and view.gpu.status == "split":
            return view.gpu.kv_bytes_at_context
        return None if view.gpu is not None else view.kv_bytes_at_context
    return None


def kv_curves(plans: Sequence[Plan]) -> PlotData:
    """The plot's data from plans of one config at increasing contexts (same tp in each)."""
    if not plans:
        raise ApronInputError("no plans to plot")
    first = plans[0]
    contexts = [p.request.context or 0 for p in plans]
    series: list[Series] = []
    notes: list[str] = []
    for view in first.engines:
        points = tuple(
            (c, _engine_bytes(p, view.engine)) for c, p in zip(contexts, plans, strict=True)
        )
        if all(b is None for _, b in points):
            notes.append(f"{view.title}: no figures (its KV sizing rules are not extracted)")
            continue
        series.append(Series(view.title, points, False))
    naive = tuple(
        (c, p.prediction.naive_kv_bytes_at_context) for c, p in zip(contexts, plans, strict=True)
    )
    aware = tuple(
        (c, p.prediction.kv_bytes_at_context) for c, p in zip(contexts, plans, strict=True)
    )
    if any(b is not None for _, b in naive) and naive != aware:
        series.append(Series("naive (every layer at full context, whole model)", naive, True))
    elif any(b is not None for _, b in naive):
        notes.append("naive figure = the window/hybrid-aware figure for this config")
    where = f"per GPU at tp {first.tp}" if first.tp > 1 else "one GPU"
    return PlotData(
        f"{shown(first.architecture or first.source, 80)}: KV cache ({first.request.kv_dtype}), "
        f"{where}",
        "KV bytes of one sequence",
        tuple(series),
        tuple(notes),
    )


def plans_for_plot(config, contexts: Sequence[int], **options) -> tuple[Plan, ...]:
    """One plan per context (the plot's input)."""
    from apron.planning.planner import plan

    return tuple(plan(config, context=c, **options) for c in contexts)


def check_out(out: str | Path, *, follow_symlinks: bool = False) -> OutputFile:
    """--out checked before any planning: a .png or .svg name apron can write (apron.output_files)."""
    if Path(out).suffix.lower() not in FORMATS:
        raise ApronInputError(f"--out {shown(out)}: give a .png or .svg file name")
    return check_output(out, "--out", follow_symlinks=follow_symlinks)


def write_plot(data: PlotData, out: OutputFile) -> Path:
    """Draw `data` to the checked PNG or SVG output; PlotUnavailable when matplotlib is not
    installed (the output's temp file is then removed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError as err:
        discard(out)
        raise PlotUnavailable(
            f"apron plot needs matplotlib, the optional extra 'plot': {install_hint()}"
        ) from err
    figure, axes = pyplot.subplots(figsize=(8, 5))
    for s in data.series:
        known = [(c, b / 2**30) for c, b in s.points if b is not None]
        if known:
            axes.plot(*zip(*known, strict=True), "--" if s.naive else "-o", label=s.label)
    axes.set_xscale("log", base=2)
    ticks = sorted({c for s in data.series for c, _ in s.points})
    axes.set_xticks(ticks, [f"{c // 1024}K" if c % 1024 == 0 else f"{c:,}" for c in ticks])
    axes.set_xlabel("context (tokens)")
    axes.set_ylabel(f"{data.y_label} (GiB)")
    axes.set_title(data.title, fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.text(0.01, 0.01, "prediction from config fields and extracted engine rules", fontsize=7)
    figure.tight_layout()
    try:
        return write_output(
            out, lambda handle: figure.savefig(handle, format=out.path.suffix.lower()[1:])
        )
    finally:
        pyplot.close(figure)
