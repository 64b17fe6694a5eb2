"""The `apron` command line: `apron plan CONFIG` and `apron plan --sample NAME`."""

from __future__ import annotations

import os
import re
import sys
from decimal import Decimal
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from apron.config import load_config, load_sample, sample_names
from apron.errors import ApronInputError
from apron.plan import ENGINE_KV_DTYPE_NAMES, KV_DTYPES, PARAM_DTYPE_BITS, plan
from apron.version import version_option

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Mechanism-aware KV-cache predictions from a Hugging Face config.json, "
    "driven by the generated engine constraints.",
)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
out_console = Console(highlight=False)


VersionOpt = version_option("apron")


@app.callback()
def main_callback(_version: VersionOpt = False) -> None:
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
        help="Context length in tokens (also vLLM's --max-model-len, SGLang's "
        "--context-length). Default: the model's maximum as vLLM derives it.",
        show_default=False,
    ),
]
DtypeOpt = Annotated[
    str,
    typer.Option(
        "--kv-dtype",
        help="(Also --kv-cache-dtype.) "
        + f"KV cache dtype: {', '.join(KV_DTYPES)}, or auto (what each engine picks from the "
        "checkpoint: its dtype and quantization config); vLLM's names "
        f"{', '.join(ENGINE_KV_DTYPE_NAMES)} work too.",
    ),
]
BatchOpt = Annotated[
    int,
    typer.Option("--batch", "-b", help="Concurrent sequences (also vLLM's --max-num-seqs)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the plan as JSON (pydantic model).")]
SampleOpt = Annotated[
    str | None,
    typer.Option(
        "--sample",
        help="Plan a config shipped with apron: " + ", ".join(sample_names()) + ".",
        show_default=False,
    ),
]


TpOpt = Annotated[
    int,
    typer.Option(
        "--tp",
        help="Tensor-parallel size (also --tensor-parallel-size and -tp, as in vLLM and "
        "SGLang): engine figures become one GPU's share.",
    ),
]
GpuMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu-memory",
        help="Memory of one GPU, with a unit (80GiB, 80GB, 81920MiB): adds what fits per engine.",
        show_default=False,
    ),
]
FractionOpt = Annotated[
    float | None,
    typer.Option(
        "--memory-fraction",
        help="Fraction of GPU memory the engine may use (also vLLM's --gpu-memory-utilization, "
        "SGLang's --mem-fraction-static). Default: each engine's extracted default.",
        show_default=False,
    ),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Add the arithmetic and the citations.")
]
WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        help="Directory holding the checkpoint's safetensors (default: the config's directory).",
        show_default=False,
    ),
]

WeightsBytesOpt = Annotated[
    str | None,
    typer.Option(
        "--weights-bytes",
        help="Weights size without a checkpoint: bytes (16060522496) or with a unit (15GiB).",
        show_default=False,
    ),
]
ParamsOpt = Annotated[
    str | None,
    typer.Option(
        "--params",
        help="Parameter count without a checkpoint (8030261248, 8.03B, 70B); with --weights-dtype.",
        show_default=False,
    ),
]
WeightsDtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--weights-dtype",
        help=f"Bytes per parameter for --params: {', '.join(PARAM_DTYPE_BITS)}.",
        show_default=False,
    ),
]
_COUNT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmbt]?)\s*", re.IGNORECASE)
COUNT_UNITS = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parse_weights_bytes(text: str) -> int:
    """'16060522496' -> that many bytes; '15GiB' / '16GB' as --gpu-memory reads them."""
    if text.strip().isdigit():
        return int(text)
    from apron.capacity import parse_memory

    try:
        return parse_memory(text)
    except ApronInputError:
        raise ApronInputError(
            f"--weights-bytes {text!r}: give a number of bytes, or a number and a unit "
            "(15GiB, 16GB)"
        ) from None


def parse_params(text: str) -> int:
    """'8030261248' / '8.03B' / '70b' / '1.5T' -> a whole parameter count (K, M, B, T decimal)."""
    found = _COUNT.fullmatch(text)
    count = (
        Decimal(found.group(1)) * COUNT_UNITS[found.group(2).lower()] if found else Decimal("0.5")
    )
    if count != count.to_integral_value():
        raise ApronInputError(
            f"--params {text!r}: give a whole number of parameters, e.g. 8030261248, 8.03B or 70B"
        )
    return int(count)


# The engines' own flag names: hidden, so that the help's option column stays narrow enough to
# show every name whole; each option's help names its aliases.
MaxModelLenOpt = Annotated[
    int | None, typer.Option("--max-model-len", "--context-length", hidden=True)
]
KvCacheDtypeOpt = Annotated[str | None, typer.Option("--kv-cache-dtype", hidden=True)]
MaxNumSeqsOpt = Annotated[int | None, typer.Option("--max-num-seqs", hidden=True)]
TensorParallelOpt = Annotated[
    int | None, typer.Option("--tensor-parallel-size", "-tp", hidden=True)
]
FractionAliasOpt = Annotated[
    float | None,
    typer.Option("--gpu-memory-utilization", "--mem-fraction-static", hidden=True),
]


def aliased(ctx: typer.Context, name: str, value, alias_value, alias: str):
    """The option's value, or its engine-named alias's; both given and different is an error."""
    if alias_value is None:
        return value
    source = ctx.get_parameter_source(name)  # by name: typer may carry its own click
    given = source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
    if given and value != alias_value:
        fail(f"--{name.replace('_', '-')} {value} and {alias} {alias_value} disagree; give one")
    return alias_value


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False)
    raise typer.Exit(ApronInputError.exit_code)


@app.command("plan")
def plan_command(
    ctx: typer.Context,
    config: ConfigArg = None,
    context: ContextOpt = None,
    kv_dtype: DtypeOpt = "bf16",
    batch: BatchOpt = 1,
    json_output: JsonOpt = False,
    sample: SampleOpt = None,
    tp: TpOpt = 1,
    gpu_memory: GpuMemoryOpt = None,
    memory_fraction: FractionOpt = None,
    verbose: VerboseOpt = False,
    weights: WeightsOpt = None,
    weights_bytes: WeightsBytesOpt = None,
    params: ParamsOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    max_model_len: MaxModelLenOpt = None,
    kv_cache_dtype: KvCacheDtypeOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    tensor_parallel_size: TensorParallelOpt = None,
    gpu_memory_utilization: FractionAliasOpt = None,
) -> None:
    """Predict KV-cache bytes per engine for one config; with --tp and --gpu-memory, per GPU
    and how many tokens and sequences fit."""
    context = aliased(ctx, "context", context, max_model_len, "--max-model-len")
    kv_dtype = aliased(ctx, "kv_dtype", kv_dtype, kv_cache_dtype, "--kv-cache-dtype")
    batch = aliased(ctx, "batch", batch, max_num_seqs, "--max-num-seqs")
    tp = aliased(ctx, "tp", tp, tensor_parallel_size, "--tensor-parallel-size")
    memory_fraction = aliased(
        ctx, "memory_fraction", memory_fraction, gpu_memory_utilization, "--gpu-memory-utilization"
    )
    result = _plan(
        config,
        sample,
        context,
        kv_dtype,
        batch,
        tp,
        gpu_memory,
        memory_fraction,
        weights,
        (weights_bytes, params, weights_dtype),
    )
    if json_output:
        from apron.json_model import plan_json

        typer.echo(plan_json(result))
        return
    from apron.render import render

    render(result, out_console, verbose=verbose)


def _plan(
    config,
    sample,
    context,
    kv_dtype,
    batch,
    tp,
    gpu_memory,
    memory_fraction,
    weights,
    given=(None, None, None),
):
    if (config is None) == (sample is None):
        fail(
            "give a CONFIG path or --sample NAME (one of them); samples: "
            + ", ".join(sample_names())
        )
    try:
        from apron.capacity import parse_memory

        memory = parse_memory(gpu_memory) if gpu_memory is not None else None
        weights_bytes, params, weights_dtype = given
        if weights is not None and (weights_bytes is not None or params is not None):
            raise ApronInputError(
                "give --weights DIR or --weights-bytes / --params, not both: the figure given "
                "replaces the checkpoint's"
            )
        model = load_sample(sample) if sample is not None else load_config(config)  # type: ignore[arg-type]
        return plan(
            model,
            context=context,
            kv_dtype=kv_dtype,
            batch=batch,
            tp=tp,
            gpu_memory=memory,
            memory_fraction=memory_fraction,
            model_dir=weights,
            weights_bytes=parse_weights_bytes(weights_bytes) if weights_bytes is not None else None,
            params=parse_params(params) if params is not None else None,
            weights_dtype=weights_dtype,
        )
    except ApronInputError as err:
        fail(str(err))
        raise AssertionError("unreachable") from err


DEFAULT_PLOT_CONTEXT = 131072
OutOpt = Annotated[str, typer.Option("--out", "-o", help="Image to write: .png or .svg.")]


@app.command("plot")
def plot_command(
    ctx: typer.Context,
    config: ConfigArg = None,
    out: OutOpt = "kv.png",
    context: ContextOpt = None,
    kv_dtype: DtypeOpt = "bf16",
    sample: SampleOpt = None,
    tp: TpOpt = 1,
    max_model_len: MaxModelLenOpt = None,
    kv_cache_dtype: KvCacheDtypeOpt = None,
    tensor_parallel_size: TensorParallelOpt = None,
) -> None:
    """Plot KV bytes against context for each engine, with the naive figure beside it."""
    context = aliased(ctx, "context", context, max_model_len, "--max-model-len")
    kv_dtype = aliased(ctx, "kv_dtype", kv_dtype, kv_cache_dtype, "--kv-cache-dtype")
    tp = aliased(ctx, "tp", tp, tensor_parallel_size, "--tensor-parallel-size")
    from apron.plot import contexts_up_to, kv_curves, plans_for_plot, write_plot

    first = _plan(config, sample, context, kv_dtype, 1, tp, None, None, None)
    maximum = first.request.context or DEFAULT_PLOT_CONTEXT
    try:
        plans = plans_for_plot(
            load_sample(sample) if sample is not None else load_config(config),  # type: ignore[arg-type]
            contexts_up_to(maximum),
            kv_dtype=kv_dtype,
            tp=tp,
        )
        written = write_plot(kv_curves(plans), out)
    except ApronInputError as err:
        fail(str(err))
        return
    typer.echo(f"wrote {written} (contexts up to {maximum:,} tokens)")


@app.command("gguf")
def gguf_command(
    path: Annotated[str, typer.Argument(help="A local .gguf file (the first shard is enough).")],
    context: ContextOpt = None,
    batch: BatchOpt = 1,
    kv_dtype: Annotated[
        str | None, typer.Option("--kv-dtype", help="llama.cpp cache type for K and V.")
    ] = None,
    cache_type_k: Annotated[str | None, typer.Option("--cache-type-k", "-ctk")] = None,
    cache_type_v: Annotated[str | None, typer.Option("--cache-type-v", "-ctv")] = None,
    swa_full: Annotated[
        bool, typer.Option("--swa-full", help="A full-size SWA cache (llama.cpp's --swa-full).")
    ] = False,
    kv_unified: Annotated[
        bool,
        typer.Option("--kv-unified", help="One KV buffer for all sequences (--kv-unified)."),
    ] = False,
) -> None:
    """The llama.cpp column for a GGUF file, read header-only: --context is n_ctx (default:
    llama.cpp's 0, the GGUF's context_length), --batch is n_seq_max, cache types as llama.cpp
    spells them (f16, q8_0, ...)."""
    from apron.constraints import load_constraints
    from apron.gguf_header import read_header
    from apron.llamacpp_memory import Unknown, cache_type, figures, render

    constraints = load_constraints().get("llamacpp")
    if constraints is None:
        fail("no generated/llamacpp constraints")
        return
    try:
        header = read_header(path)
        k, v = cache_type_k or kv_dtype, cache_type_v or kv_dtype
        types = [cache_type(constraints, t) if t else None for t in (k, v)]
    except ApronInputError as err:
        fail(str(err))
        return
    except Unknown as err:
        fail(str(err))
        return
    if batch < 1:
        fail(f"--batch must be at least 1, got {batch}")
    got = figures(
        header,
        constraints,
        n_ctx=context,
        n_seq_max=batch,
        type_k=types[0],
        type_v=types[1],
        swa_full=swa_full or None,
        kv_unified=kv_unified or None,
    )
    typer.echo(render(header, constraints, got, batch))


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
