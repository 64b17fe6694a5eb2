"""The `apron` command line: `apron plan CONFIG` and `apron plan --sample NAME`."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rich.console import Console

from apron.config import load_config, load_sample, sample_names
from apron.errors import ApronInputError
from apron.plan import KV_DTYPES, plan

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Mechanism-aware KV-cache predictions from a Hugging Face config.json, "
    "driven by the generated engine constraints.",
)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
out_console = Console(highlight=False)


@app.callback()
def main_callback() -> None:
    """apron: every figure is a prediction that cites the engine commits it used."""


ConfigArg = Annotated[
    str | None,
    typer.Argument(help="A config.json, or a directory holding one.", show_default=False),
]
ContextOpt = Annotated[
    int | None,
    typer.Option(
        "--context",
        "-c",
        help="Context length in tokens. Default: the config's max_position_embeddings.",
        show_default=False,
    ),
]
DtypeOpt = Annotated[
    str,
    typer.Option(
        "--kv-dtype",
        help=f"KV cache dtype: {', '.join(KV_DTYPES)}, or auto (what each engine picks from the "
        "checkpoint: its dtype and quantization config).",
    ),
]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the plan as JSON (pydantic model).")]
SampleOpt = Annotated[
    str | None,
    typer.Option(
        "--sample",
        help="Plan a config shipped with apron: " + ", ".join(sample_names()) + ".",
        show_default=False,
    ),
]


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    raise typer.Exit(ApronInputError.exit_code)


@app.command("plan")
def plan_command(
    config: ConfigArg = None,
    context: ContextOpt = None,
    kv_dtype: DtypeOpt = "bf16",
    batch: BatchOpt = 1,
    json_output: JsonOpt = False,
    sample: SampleOpt = None,
) -> None:
    """Predict KV-cache bytes (per token, at a context, fixed state) for one config, per engine."""
    if (config is None) == (sample is None):
        fail(
            "give a CONFIG path or --sample NAME (one of them); samples: "
            + ", ".join(sample_names())
        )
    try:
        model = load_sample(sample) if sample is not None else load_config(config)  # type: ignore[arg-type]
        result = plan(model, context=context, kv_dtype=kv_dtype, batch=batch)
    except ApronInputError as err:
        fail(str(err))
        return
    if json_output:
        from apron.json_model import plan_json

        typer.echo(plan_json(result))
        return
    from apron.render import render

    render(result, out_console)


def main() -> None:
    """Console entry point: bad input is one message (exit 2); a bug is one line too (exit 70),
    unless APRON_DEBUG is set, then it is the full traceback."""
    try:
        app()
    except Exception as err:  # a bug, not bad input
        if os.environ.get("APRON_DEBUG"):
            raise
        err_console.print(
            f"internal error: {type(err).__name__}: {err} (set APRON_DEBUG=1 for a traceback)",
            markup=False,
        )
        sys.exit(70)
