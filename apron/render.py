"""Render a Plan for a person: one 80-column screen by default, the arithmetic and citations with
--verbose. Lines are wrapped at spaces only, so an identifier is never split or cut."""

from __future__ import annotations

import textwrap

from rich.console import Console

from apron.results import Capacity, EngineView, GpuShare, Plan
from apron.terminal import shown

UNKNOWN = "unknown"
WIDTH = 80
ENGINE_COLUMN = 13
HEAD_MECHANISMS = ("full_attention", "sliding_window", "hybrid_ssm")
LIMITS = {"kv": "KV", "state": "state", "weights": "weights"}


def human_bytes(value: int | None) -> str:
    """'70,272 B (68.63 KiB)'; 'unknown' for None."""
    if value is None:
        return UNKNOWN
    if value < 1024:
        return f"{value:,} B"
    return f"{value:,} B ({short_bytes(value, 2)})"


def short_bytes(value: int | None, decimals: int | None = None) -> str:
    """'68.6 KiB' (three significant digits unless `decimals`); '-' for None."""
    if value is None:
        return "-"
    size = float(value)
    unit = "B"
    for candidate in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size /= 1024
        unit = candidate
    if unit == "B":
        return f"{value:,} B"
    if decimals is None:
        decimals = 2 if size < 10 else 1 if size < 100 else 0
    return f"{size:.{decimals}f} {unit}"


MAX_TEXT = 4_000  # characters of one note or line shown; past that, cut with its length said


def wrap(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """Lines of at most `width` columns, broken at spaces only (never inside a word); a text
    over MAX_TEXT characters (one carrying a huge input string) is cut first."""
    return textwrap.wrap(
        shown(text, MAX_TEXT),
        width=width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent]


def _row(cells: list[str], widths: list[int]) -> str:
    parts = [cells[0].ljust(widths[0])]
    parts += [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
    return " ".join(parts).rstrip()


def _heading(plan: Plan, width: int) -> list[str]:
    r = plan.request
    lines = wrap("apron plan · PREDICTION from config fields and extracted engine rules", width)
    lines += wrap(plan.source, width, "  ", "")
    ident = f"{plan.architecture or '(no architectures)'} (model_type {plan.model_type or '?'})"
    lines += wrap(f"{ident} · {plan.prediction.title}", width, "  ", "")
    context = (
        f"context {r.context:,}" if r.context is not None else "context: none (give --context)"
    )
    parts = [context, f"KV dtype {r.kv_dtype} ({r.kv_dtype_bytes} B)", f"batch {r.batch}"]
    parts.append(f"tp {plan.tp}")
    if plan.gpu_memory_bytes is not None:
        parts.append(f"{short_bytes(plan.gpu_memory_bytes)} per GPU")
    lines += wrap(" · ".join(parts), width, "  ", "")
    if r.kv_dtype_source:
        lines += wrap(f"KV dtype {r.kv_dtype} from {r.kv_dtype_source}", width, "  ", "")
    for warning in r.context_warnings:
        lines += wrap(f"warning: {warning}", width, "  ")
    return lines


def _weights(plan: Plan, width: int) -> list[str]:
    w = plan.weights
    if w is None:
        return []
    if w.total_bytes is None:
        reason = w.unknown.removeprefix("weights unknown: ")  # apron.weights says it already
        return wrap(f"weights unknown: {reason}", width, "  ", "")
    dtypes = ", ".join(f"{d.dtype} {short_bytes(d.bytes)}" for d in w.by_dtype)
    text = f"weights {short_bytes(w.total_bytes)}" + (f" ({dtypes})" if dtypes else "")
    text += f" from {w.source}"
    if plan.tp > 1:
        text += f"; {short_bytes(-(-w.total_bytes // plan.tp))} per GPU at tp {plan.tp}"
    return wrap(text, width, "  ", "")


def _whole_model(plan: Plan, width: int) -> list[str]:
    p = plan.prediction
    r = plan.request
    if p.unknown:
        lines = wrap("whole model: unknown: " + "; ".join(p.unknown), width, "  ", "")
        if p.missing:
            lines += wrap("missing fields: " + ", ".join(p.missing), width, "  ", "  ")
        return lines
    parts = [f"KV {short_bytes(p.kv_bytes_per_token)}/token"]
    if r.context is not None:
        parts.append(f"{short_bytes(p.kv_bytes_at_context)} at {r.context:,} tokens")
        if p.naive_ratio is not None:
            parts.append(f"naive {short_bytes(p.naive_kv_bytes_at_context)}")
    state = p.state_bytes_per_sequence
    parts.append("no state" if state == 0 else f"state {short_bytes(state)}/sequence")
    lines = wrap("whole model: " + ", ".join(parts), width)
    if r.batch > 1:
        total = plan.total_bytes_for_batch
        what = "KV + state" if state else "KV"
        text = (
            f"batch {r.batch:,}: {what} {short_bytes(total)} in total"
            if total is not None
            else f"batch {r.batch:,}: total unknown (give --context)"
        )
        lines += wrap(text, width, "  ", "  ")
    return lines


def _unknown_reason(view: EngineView) -> str:
    if view.gpu is not None and view.gpu.status == "refused":
        return "refused: " + "; ".join(view.gpu.refused)
    if view.gpu is not None and view.gpu.status == "unknown":
        return "unknown: " + "; ".join(view.gpu.unknown)
    if view.commit is None:
        return "unknown: no generated constraints for this engine"
    figures = [n for n in view.notes if n.startswith("byte figures:")]
    if figures:
        return "unknown: " + figures[0].removeprefix("byte figures: ")
    unknown = [n.removeprefix("unknown: ") for n in view.notes if n.startswith("unknown:")]
    return "unknown: " + ("; ".join(unknown) or "no figures")


def _brief(reason: str) -> str:
    """The first two clauses of a reason ("memory fraction: mem_fraction_static is computed by
    ...") for the default view; --verbose prints it whole."""
    return ": ".join(reason.split(": ")[:2]).rstrip(",;")


def _capacity_cells(c: Capacity | None) -> list[str]:
    if c is None:
        return []
    verdict = c.verdict
    fits = "?" if verdict is None or verdict.fits is None else "yes" if verdict.fits else "no"
    if c.unknown and c.kv_tokens is None and c.sequences is None:
        return [UNKNOWN, UNKNOWN, "?"]
    tokens = f"{c.kv_tokens:,}" if c.kv_tokens is not None else "-"
    sequences = f"{c.sequences:,}" if c.sequences is not None else "-"
    return [tokens, sequences, fits]


def _batch_bytes(v: EngineView) -> int | None:
    """KV + state of the batch at the context, as the engine allocates it (per GPU)."""
    if v.capacity is not None and v.capacity.verdict is not None:
        if v.capacity.verdict.cache_bytes is not None:
            return v.capacity.verdict.cache_bytes
    return v.bytes_for_batch


def _engines(plan: Plan, width: int) -> list[str]:
    capacity = plan.gpu_memory_bytes is not None
    batch = plan.request.batch
    head = ["engine", "weights", "KV/token", "1 seq", "state"]
    widths = [ENGINE_COLUMN - 3, 8, 8, 8, 8]
    if batch > 1:
        head.append(f"batch {batch}" if len(f"batch {batch}") <= 9 else "batch")
        widths.append(9)
    if capacity:
        head += ["KV tokens", "seqs", "fits"]
        widths += [9, 5, 4]
    where = f"per GPU at tp {plan.tp}" if plan.tp > 1 else "one GPU (tp 1)"
    if plan.pp > 1:
        where += f" x pp {plan.pp} (capacity: the busiest stage)"
    title = f"What each engine would allocate, {where}"
    if capacity:
        title += f", {short_bytes(plan.gpu_memory_bytes)}"
    lines = ["", *wrap(title + ":", width), _row(head, widths)]
    indent = " " * ENGINE_COLUMN
    for v in plan.engines:
        g = v.gpu
        if v.mechanism is None or g is None or g.status != "split":
            lines += wrap(_unknown_reason(v), width, indent, v.title.ljust(ENGINE_COLUMN))
            continue
        cells = [
            v.title,
            short_bytes(g.weights_bytes) if g.weights_bytes is not None else UNKNOWN,
            short_bytes(g.kv_bytes_per_token) if g.kv_bytes_per_token is not None else UNKNOWN,
            short_bytes(g.kv_bytes_at_context),
            "-"
            if g.state_bytes_per_sequence == 0
            else short_bytes(g.state_bytes_per_sequence)
            if g.state_bytes_per_sequence is not None
            else UNKNOWN,
        ]
        if batch > 1:
            cells.append(short_bytes(_batch_bytes(v)))
        cells += _capacity_cells(v.capacity)
        lines.append(_row(cells, widths[: len(cells)]))
        if v.capacity is not None and v.capacity.unknown and v.capacity.sequences is None:
            brief = "; ".join(dict.fromkeys(_brief(u) for u in v.capacity.unknown))
            lines += wrap(f"capacity unknown: {brief}", width, indent)
        if v.llamacpp_context is not None and batch > 1:
            lines += wrap(v.llamacpp_context.words, width, indent)
    if batch > 1:
        lines += wrap(f"1 seq: KV at the context; batch {batch}: KV + state of all {batch}", width)
    return lines


def _weights_first(plan: Plan, width: int) -> list[str]:
    """The engines whose budget the weights alone exceed, said before anything else."""
    lines: list[str] = []
    for v in plan.engines:
        verdict = v.capacity.verdict if v.capacity is not None else None
        if verdict is not None and verdict.weights_fit is False:
            lines += wrap(f"{v.title}: {verdict.reason}: nothing fits", width)
    return lines


def _verdicts(plan: Plan, width: int) -> list[str]:
    """The engines the batch does not fit at the context: why, and what would fit instead (the
    table's fits column says yes for the others; the weights are said first)."""
    r = plan.request
    if plan.gpu_memory_bytes is None or r.context is None:
        return []
    lines: list[str] = []
    for v in plan.engines:
        verdict = v.capacity.verdict if v.capacity is not None else None
        if verdict is not None and verdict.context is not None:
            lines += wrap(
                f"{v.title}: --max-model-len auto: it fits max_model_len to memory, "
                f"{verdict.context:,} tokens (the table's seqs and fits are at that length)",
                width,
                "  ",
                "",
            )
        if verdict is None or verdict.fits is not False or verdict.weights_fit is False:
            continue
        instead = []
        if verdict.largest_batch:
            instead.append(f"batch {verdict.largest_batch:,} at {r.context:,} tokens")
        if verdict.largest_context:
            instead.append(f"batch {r.batch:,} at {verdict.largest_context:,} tokens")
        text = f"{v.title}: {verdict.reason}"
        text += "; fits " + ", or ".join(instead) if instead else "; nothing fits"
        lines += wrap(text, width, "  ", "")
    return ["", *lines] if lines else []


def _differences(plan: Plan, width: int) -> list[str]:
    differ = [
        f"{v.title} ({v.mechanism})"
        for v in plan.engines
        if v.differs_from_prediction and v.mechanism is not None
    ]
    lines: list[str] = []
    if differ:
        lines += wrap("differs from apron's reading: " + ", ".join(differ), width)
    fits = what_fits_differs(plan)
    if fits:
        lines += wrap("engines differ in what fits: " + fits, width)
    registered = [s.title for s in plan.support if s.status == "registered"]
    missing = [s.title for s in plan.support if s.status == "not registered"]
    unknown = [s.title for s in plan.support if s.status not in ("registered", "not registered")]
    parts = [f"registered in {', '.join(registered) or 'no engine'}"]
    if missing:
        parts.append(f"not in {', '.join(missing)}")
    if unknown:
        parts.append(f"unknown for {', '.join(unknown)}")
    lines += wrap(f"{plan.architecture or 'architecture'}: " + "; ".join(parts), width)
    return lines


def what_fits_differs(plan: Plan) -> str:
    """The engines' differing answers ("" when they agree): the verdict, the sequences, or KV
    tokens that differ by at least one block of the larger block size."""
    known = [
        v
        for v in plan.engines
        if v.capacity is not None and (v.capacity.sequences is not None or v.capacity.verdict)
    ]
    if len(known) < 2:
        return ""
    first = known[0].capacity
    for v in known[1:]:
        c = v.capacity
        block = max(first.block_tokens or 1, c.block_tokens or 1)
        verdicts = (
            first.verdict.fits if first.verdict else None,
            c.verdict.fits if c.verdict else None,
        )
        tokens_differ = (
            first.kv_tokens is not None
            and c.kv_tokens is not None
            and abs(first.kv_tokens - c.kv_tokens) >= block
        )
        if verdicts[0] != verdicts[1] or first.sequences != c.sequences or tokens_differ:
            what = "sequences" if first.sequences != c.sequences else "KV tokens"
            return ", ".join(f"{x.title} {_fit_words(x.capacity, what)}" for x in known)
    return ""


def _fit_words(c: Capacity, what: str) -> str:
    value = c.sequences if what == "sequences" else c.kv_tokens
    if value is None:
        return f"{what} unknown"
    return f"{value:,} {what.removesuffix('s') if value == 1 else what}"


def _footer(plan: Plan, width: int, verbose: bool) -> list[str]:
    lines = [""]
    if plan.gpu_memory_bytes is not None:
        lines += wrap(
            "capacity is a prediction: budget = GPU memory x the engine's memory fraction - "
            "weights; activations, CUDA graphs, the sampler and non-torch memory are not "
            "modelled, so the engine finds fewer blocks (the margin is not modelled).",
            width,
        )
    stamps = ", ".join(
        f"{s.title} {s.commit[:12]}" for s in plan.constraints if s.present and s.commit
    )
    lines += wrap(f"constraints: {stamps or 'none present'}", width)
    if not verbose:
        lines += wrap("--verbose: the arithmetic and the citations; --json: everything", width)
    return lines


def summary_lines(plan: Plan, width: int = WIDTH, verbose: bool = False) -> list[str]:
    """The default view: model, mechanism, weights, per-GPU KV and state, what fits, and the
    engines that differ, in lines of at most `width` columns."""
    return [
        *_heading(plan, width),
        *_weights_first(plan, width),
        *_weights(plan, width),
        *_whole_model(plan, width),
        *_engines(plan, width),
        *_verdicts(plan, width),
        "",
        *_differences(plan, width),
        *_footer(plan, width, verbose),
    ]


def _share_lines(g: GpuShare, width: int) -> list[str]:
    lines: list[str] = []
    for line in g.arithmetic:
        lines += wrap(line, width, "      ", "    ")
    if g.valid_tp:
        lines += wrap("tp sizes that work: " + ", ".join(map(str, g.valid_tp)), width, "    ")
    return lines


def verbose_lines(plan: Plan, width: int = WIDTH) -> list[str]:
    """The summary, then the arithmetic, every engine's notes and citations, and support."""
    p = plan.prediction
    r = plan.request
    lines = summary_lines(plan, width, verbose=True)
    lines += ["", "Request"]
    lines += wrap(f"context: {r.context_source}", width, "    ", "  ")
    if r.max_model_len is not None:
        lines += wrap(
            f"model maximum {r.max_model_len:,} tokens ({r.max_model_len_source})",
            width,
            "    ",
            "  ",
        )
    if r.ssm_dtype:
        lines += wrap(f"SSM state dtype {r.ssm_dtype}: {r.ssm_dtype_source}", width, "    ", "  ")
    if p.mechanism in HEAD_MECHANISMS:
        heads = plan.kv_heads
        text = heads.how if heads.known else "unknown: " + "; ".join(heads.unknown)
        lines += wrap(f"KV heads: {text}", width, "    ", "  ")
    if plan.weights is not None:
        for note in plan.weights.notes:
            lines += wrap(f"weights: {note}", width, "    ", "  ")
    lines += ["", *wrap(f"Whole model ({p.title})", width, "  ")]
    rows = [("KV per token", human_bytes(p.kv_bytes_per_token))]
    if r.context is not None:
        rows.append(("KV at context", human_bytes(p.kv_bytes_at_context)))
        if p.naive_ratio is not None:
            rows.append(("KV at context (naive)", human_bytes(p.naive_kv_bytes_at_context)))
            rows.append(("naive / aware", f"{p.naive_ratio:.2f}x"))
    state = p.state_bytes_per_sequence
    rows.append(("state per sequence", "none" if state == 0 else human_bytes(state)))
    rows.append((f"batch {r.batch}: total", human_bytes(plan.total_bytes_for_batch)))
    for key, value in rows:
        lines += wrap(f"{key:<22} {value}", width, " " * 25, "  ")
    for reason in p.unknown:
        lines += wrap(f"unknown: {reason}", width, "    ", "  ")
    if p.missing:
        lines += wrap("missing fields: " + ", ".join(p.missing), width, "    ", "  ")
    lines += wrap("arithmetic:", width, "  ", "  ")
    for line in p.arithmetic:
        lines += wrap(line, width, "      ", "    ")
    for note in (*plan.notes, *p.notes):
        lines += wrap(f"note: {note}", width, "    ", "  ")
    for v in plan.engines:
        lines += ["", *wrap(f"{v.title} @ {v.commit or 'no constraints'}", width, "  ")]
        for note in v.notes:
            lines += wrap(note, width, "    ", "  ")
        if v.gpu is not None:
            lines += wrap(f"per GPU at tp {plan.tp} ({v.gpu.status}):", width, "    ", "  ")
            lines += _share_lines(v.gpu, width)
        if v.capacity is not None:
            c = v.capacity
            lines += wrap(
                f"capacity: memory fraction {c.memory_fraction if c.memory_fraction is not None else UNKNOWN}"
                f" ({c.memory_fraction_source}); block {c.block_tokens or UNKNOWN} tokens "
                f"({c.block_tokens_source})",
                width,
                "    ",
                "  ",
            )
            for line in c.arithmetic:
                lines += wrap(line, width, "      ", "    ")
            for reason in c.unknown:
                lines += wrap(f"unknown: {reason}", width, "      ", "    ")
            for note in c.notes:
                lines += wrap(f"note: {note}", width, "      ", "    ")
        for cite in v.citations:
            where = f"{cite.path} :: {cite.symbol}" if cite.symbol else cite.path
            lines += wrap(f"cites {cite.engine}@{cite.commit[:12]} {where}", width, "      ", "  ")
    lines += [
        "",
        *wrap(f"Engine support for {plan.architecture or '(no architectures)'}", width, "  "),
    ]
    for s in plan.support:
        lines += wrap(f"{s.title} {(s.commit or '-')[:12]}: {s.status}", width, "    ", "  ")
        for entry in s.entries:
            where = f"{entry.citation.path} :: {entry.citation.symbol}"
            if entry.detail:
                where += f" ({entry.detail})"
            if entry.constraints:
                where += "; constraints: " + "; ".join(entry.constraints)
            group = f" [{entry.task_group}]" if entry.task_group else ""
            lines += wrap(f"{entry.kind}{group}: {where}", width, "        ", "    ")
        for note in s.notes:
            lines += wrap(note, width, "        ", "    ")
    lines += [""]
    for stamp in plan.constraints:
        text = (
            f"{stamp.title} @ {stamp.commit} ({stamp.commit_date})"
            if stamp.present
            else f"{stamp.title}: constraints absent"
        )
        lines += wrap(f"Prediction using the generated constraints of {text}", width, "    ")
    return lines


def displayed(plan: Plan) -> Plan:
    """The plan with its input strings (source path, architecture, model types) escaped and cut
    for a terminal (apron.terminal.shown); --json carries them whole."""
    return plan._replace(
        source=shown(plan.source),
        architecture=None if plan.architecture is None else shown(plan.architecture),
        model_type=None if plan.model_type is None else shown(plan.model_type),
        text_model_type=None if plan.text_model_type is None else shown(plan.text_model_type),
    )


def render(plan: Plan, console: Console, verbose: bool = False) -> None:
    """Print the default view (or the verbose one) at most 80 columns wide."""
    plan = displayed(plan)
    width = min(WIDTH, console.width) if console.width else WIDTH
    lines = verbose_lines(plan, width) if verbose else summary_lines(plan, width)
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
