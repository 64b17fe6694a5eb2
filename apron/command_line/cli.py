"""The `apron` command line: `apron plan CONFIG` and `apron plan --sample NAME`."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rich.markup import escape

from apron import bounds, engine_flags
from apron.config import load_config, load_sample, sample_names
from apron.console import EscapingConsole
from apron.constraints import load_constraints
from apron.engine_flags import EngineOptions
from apron.errors import ApronInputError
from apron.planning.planner import ENGINE_KV_DTYPE_NAMES, KV_DTYPES, plan
from apron.terminal import printable, printable_json, shown
from apron.version import version_option
from apron.weights_figure import PARAM_DTYPE_BITS

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Mechanism-aware KV-cache predictions from a Hugging Face config.json, "
    "driven by the generated engine constraints.",
)
err_console = EscapingConsole(stderr=True, highlight=False, soft_wrap=True)
out_console = EscapingConsole(highlight=False)


VersionOpt = version_option("apron")


@app.callback()
def main_callback(_version: VersionOpt = False) -> None:
    """apron: every figure is a prediction that cites the engine commits it used."""


ConfigArg = Annotated[
    str | None,
    typer.Argument(help="A config.json, or a directory holding one.", show_default=False),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        "-c",
        metavar="TOKENS",
        help="Tokens per sequence (also vLLM's --max-model-len: 32768, 32k = 32,000, 32K = "
        "32,768, or auto; SGLang's --context-length). Default: the model's maximum.",
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
    str,
    typer.Option(
        "--batch",
        metavar="N",
        help="Sequences at once (also vLLM's --max-num-seqs, llama.cpp's -np).",
    ),
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
    str,
    typer.Option(
        "--tp",
        metavar="N",
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
    str | None,
    typer.Option(
        "--memory-fraction",
        metavar="FRACTION",
        help="Fraction of GPU memory the engine may use (also vLLM's --gpu-memory-utilization, "
        "SGLang's --mem-fraction-static). Default: each engine's extracted default.",
        show_default=False,
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="A GPU by name (H100, A100-80GB, L40S, RTX 4090, ...): its memory as nvidia-smi "
        "reports it, from apron's cited table (apron/gpus.py).",
        show_default=False,
    ),
]
RevisionOpt = Annotated[
    str | None,
    typer.Option(
        "--revision",
        help="The Hub revision (branch, tag or commit) of a model id or URL.",
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


def parse_weights_bytes(text: str) -> int:
    """'16060522496' -> that many bytes; '15GiB' / '16GB' as --gpu-memory reads them."""
    from apron.capacity import MEMORY_UNITS

    return bounds.parse_quantity(
        text,
        {"": 1, **MEMORY_UNITS},
        bounds.BYTES,
        "--weights-bytes",
        example="16060522496, 15GiB or 16GB",
        asks="a number of bytes, or a number and a unit",
    )


PARAM_UNITS = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parse_params(text: str) -> int:
    """'8030261248' / '8.03B' / '70b' / '1.5T' -> a whole parameter count (K, M, B, T decimal)."""
    return bounds.parse_quantity(
        text,
        PARAM_UNITS,
        bounds.PARAMS,
        "--params",
        example="8030261248, 8.03B or 70B",
        asks="a whole number of parameters",
        whole=True,
    )


# The engines' own flag names: hidden, so that the help's option column stays narrow enough to
# show every name whole; each option's help names its aliases.
MaxModelLenOpt = Annotated[
    str | None, typer.Option("--max-model-len", "--context-length", hidden=True)
]
KvCacheDtypeOpt = Annotated[str | None, typer.Option("--kv-cache-dtype", hidden=True)]
MaxNumSeqsOpt = Annotated[
    str | None, typer.Option("--max-num-seqs", "--parallel", "-np", hidden=True)
]
ENGINE_PANEL = "Engine flags (vLLM / llama.cpp)"
BlockSizeOpt = Annotated[
    str | None,
    typer.Option("--block-size", help="vLLM's KV block size.", rich_help_panel=ENGINE_PANEL),
]
KvMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-memory",
        help="(vLLM's --kv-cache-memory-bytes.) The KV cache size itself (1G, 20GiB), instead "
        "of the memory fraction.",
        rich_help_panel=ENGINE_PANEL,
        show_default=False,
    ),
]
PipelineOpt = Annotated[
    str | None,
    typer.Option(
        "--pp",
        help="(vLLM's --pipeline-parallel-size, -pp.) Pipeline stages: vLLM splits the layers "
        "between them.",
        rich_help_panel=ENGINE_PANEL,
        show_default=False,
    ),
]
KvCacheMemoryBytesOpt = Annotated[str | None, typer.Option("--kv-cache-memory-bytes", hidden=True)]
PipelineAliasOpt = Annotated[
    str | None, typer.Option("--pipeline-parallel-size", "-pp", hidden=True)
]
CacheTypeKOpt = Annotated[
    str | None,
    typer.Option(
        "--cache-type-k", "-ctk", help="llama.cpp K cache type (f16, q8_0, ...).",
        rich_help_panel=ENGINE_PANEL, show_default=False,
    ),
]  # fmt: skip
CacheTypeVOpt = Annotated[
    str | None,
    typer.Option(
        "--cache-type-v", "-ctv", help="llama.cpp V cache type.", rich_help_panel=ENGINE_PANEL,
        show_default=False,
    ),
]  # fmt: skip
FlashAttnOpt = Annotated[
    str | None,
    typer.Option(
        "--flash-attn", "-fa", help="llama.cpp flash attention: on, off, auto.",
        rich_help_panel=ENGINE_PANEL, show_default=False,
    ),
]  # fmt: skip
KvUnifiedOpt = Annotated[
    bool,
    typer.Option(
        "--kv-unified", "-kvu", help="llama.cpp: one KV buffer for all sequences.",
        rich_help_panel=ENGINE_PANEL,
    ),
]  # fmt: skip
SwaFullOpt = Annotated[
    bool,
    typer.Option(
        "--swa-full", help="llama.cpp: full-size SWA cache.", rich_help_panel=ENGINE_PANEL
    ),
]  # fmt: skip
NBatchOpt = Annotated[
    str | None,
    typer.Option(
        "--batch-size", "-b", help="llama.cpp's logical batch (n_batch).",
        rich_help_panel=ENGINE_PANEL, show_default=False,
    ),
]  # fmt: skip
NUbatchOpt = Annotated[
    str | None,
    typer.Option(
        "--ubatch-size", "-ub", help="llama.cpp's physical batch (n_ubatch).",
        rich_help_panel=ENGINE_PANEL, show_default=False,
    ),
]  # fmt: skip
TensorParallelOpt = Annotated[
    str | None, typer.Option("--tensor-parallel-size", "-tp", hidden=True)
]
FractionAliasOpt = Annotated[
    str | None,
    typer.Option("--gpu-memory-utilization", "--mem-fraction-static", hidden=True),
]


def aliased(ctx: typer.Context, name: str, value, alias_value, alias: str, parse=None):
    """The option's value, or its engine-named alias's, each parsed by `parse` when given (so
    "8192" and "08192" agree); both given and different is an error."""
    option = f"--{name.replace('_', '-')}"
    try:
        if parse is not None:
            value = parse(value, option) if value is not None else None
            alias_value = parse(alias_value, alias) if alias_value is not None else None
    except ApronInputError as err:
        fail(str(err))
    if alias_value is None:
        return value
    source = ctx.get_parameter_source(name)  # by name: typer may carry its own click
    given = source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
    if given and value != alias_value:
        fail(f"{option} {shown(value)} and {alias} {shown(alias_value)} disagree; give one")
    return alias_value


def count_option(bound: bounds.Bound):
    """A parser for a whole-number option within `bound` (for `aliased`)."""
    return lambda text, option: bounds.parse_int(text, bound, option)


def length_option(text: str, option: str):
    """A context length as vLLM's --max-model-len reads it (32k, 32K, auto), within the
    engines' bound; engine_flags.AUTO_LENGTH for auto (for `aliased`)."""
    found = engine_flags.max_model_len(text, option, load_constraints().get("vllm"))
    if found is None:
        return engine_flags.AUTO_LENGTH
    return bounds.checked(found, bounds.CONTEXT, option)


def fraction_option(text: str, option: str) -> float:
    """--memory-fraction and its aliases: (0, 1], vLLM's CacheConfig.gpu_memory_utilization
    bound (Field(gt=0, le=1))."""
    return bounds.parse_fraction(
        text, option, why="vLLM's gpu_memory_utilization: Field(gt=0, le=1)"
    )


def os_error(err: OSError) -> str:
    """The one line for an OSError on a path the user gave."""
    return f"cannot read {shown(str(err.filename or ''))}: {err.strerror or err}"


def fail(message: str) -> None:
    err_console.print(
        f"[bold red]error:[/] {escape(printable(message))}", markup=True, highlight=False
    )
    raise typer.Exit(ApronInputError.exit_code)


@app.command("plan")
def plan_command(
    ctx: typer.Context,
    config: ConfigArg = None,
    context: ContextOpt = None,
    kv_dtype: DtypeOpt = "bf16",
    batch: BatchOpt = "1",
    json_output: JsonOpt = False,
    sample: SampleOpt = None,
    tp: TpOpt = "1",
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
    gpu: GpuOpt = None,
    revision: RevisionOpt = None,
    block_size: BlockSizeOpt = None,
    kv_memory: KvMemoryOpt = None,
    pp: PipelineOpt = None,
    kv_cache_memory_bytes: KvCacheMemoryBytesOpt = None,
    pipeline_parallel_size: PipelineAliasOpt = None,
    cache_type_k: CacheTypeKOpt = None,
    cache_type_v: CacheTypeVOpt = None,
    flash_attn: FlashAttnOpt = None,
    kv_unified: KvUnifiedOpt = False,
    swa_full: SwaFullOpt = False,
    batch_size: NBatchOpt = None,
    ubatch_size: NUbatchOpt = None,
) -> None:
    """Predict KV-cache bytes per engine for one config; with --tp and --gpu-memory (or --gpu),
    per GPU, how many tokens and sequences fit, and whether --batch at --context does. A GGUF
    file gives llama.cpp's figures, as `apron gguf` does."""
    kv_memory = aliased(
        ctx, "kv_memory", kv_memory, kv_cache_memory_bytes, "--kv-cache-memory-bytes"
    )
    pp = aliased(ctx, "pp", pp, pipeline_parallel_size, "--pipeline-parallel-size")
    engine = EngineOptions(
        block_size=block_size,
        kv_cache_memory_bytes=kv_memory,
        pipeline_parallel_size=pp,
        cache_type_k=cache_type_k,
        cache_type_v=cache_type_v,
        flash_attn=flash_attn,
        kv_unified=kv_unified or None,
        swa_full=swa_full or None,
        batch_size=batch_size,
        ubatch_size=ubatch_size,
    )
    batch = aliased(ctx, "batch", batch, max_num_seqs, "--max-num-seqs", count_option(bounds.BATCH))
    context = aliased(ctx, "context", context, max_model_len, "--max-model-len", length_option)
    if config is not None and sample is None and _is_gguf(config):
        # plan's meaning: --batch sequences of --context tokens each, which llama.cpp holds in
        # n_ctx = batch x context split across n_seq_max = batch
        if context == engine_flags.AUTO_LENGTH:
            fail("--context auto is vLLM's fit to memory; for a GGUF give a number of tokens")
        n_ctx = context * batch if context is not None else None
        _gguf(config, n_ctx, batch, kv_dtype, engine, json_output)
        return
    kv_dtype = aliased(ctx, "kv_dtype", kv_dtype, kv_cache_dtype, "--kv-cache-dtype")
    tp = aliased(
        ctx, "tp", tp, tensor_parallel_size, "--tensor-parallel-size", count_option(bounds.TP)
    )
    memory_fraction = aliased(
        ctx,
        "memory_fraction",
        memory_fraction,
        gpu_memory_utilization,
        "--gpu-memory-utilization",
        fraction_option,
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
        gpu,
        revision,
        engine,
    )
    if json_output:
        from apron.json_model import plan_json

        typer.echo(printable_json(plan_json(result)))
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
    gpu=None,
    revision=None,
    engine=None,
):
    if (config is None) == (sample is None):
        fail(
            "give a CONFIG path or --sample NAME (one of them); samples: "
            + ", ".join(sample_names())
        )
    try:
        from apron.capacity import parse_memory

        memory = parse_memory(gpu_memory) if gpu_memory is not None else None
        vllm = load_constraints().get("vllm")
        auto = context == engine_flags.AUTO_LENGTH  # vLLM's --max-model-len auto
        deployment = (engine or EngineOptions()).deployment(vllm)._replace(max_model_len_auto=auto)
        if kv_dtype not in KV_DTYPES and kv_dtype != "auto":
            kv_dtype = engine_flags.kv_cache_dtype(kv_dtype, vllm)
        context = None if auto else context
        if gpu is not None:
            from apron.gpus import gpu as gpu_part

            if gpu_memory is not None:
                raise ApronInputError("give --gpu NAME or --gpu-memory, not both")
            part = gpu_part(gpu)
            memory, deployment = part.memory_bytes, deployment._replace(gpu_name=part.name)
        if revision is not None and sample is not None:
            raise ApronInputError("--revision goes with a Hub model id or URL, not --sample")
        weights_bytes, params, weights_dtype = given
        if weights is not None and (weights_bytes is not None or params is not None):
            raise ApronInputError(
                "give --weights DIR or --weights-bytes / --params, not both: the figure given "
                "replaces the checkpoint's"
            )
        model = (
            load_sample(sample) if sample is not None else load_config(config, revision=revision)  # type: ignore[arg-type]
        )
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
            deployment=deployment,
        )
    except ApronInputError as err:
        fail(str(err))
        raise AssertionError("unreachable") from err
    except OSError as err:  # a path from the command line the system refuses (too long, a loop)
        fail(os_error(err))
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
    tp: TpOpt = "1",
    max_model_len: MaxModelLenOpt = None,
    kv_cache_dtype: KvCacheDtypeOpt = None,
    tensor_parallel_size: TensorParallelOpt = None,
    follow_symlinks: Annotated[
        bool,
        typer.Option(
            "--follow-symlinks", help="Write through --out when it is a symlink (else refused)."
        ),
    ] = False,
) -> None:
    """Plot KV bytes against context for each engine, with the naive figure beside it."""
    context = aliased(
        ctx, "context", context, max_model_len, "--max-model-len", count_option(bounds.CONTEXT)
    )
    kv_dtype = aliased(ctx, "kv_dtype", kv_dtype, kv_cache_dtype, "--kv-cache-dtype")
    tp = aliased(
        ctx, "tp", tp, tensor_parallel_size, "--tensor-parallel-size", count_option(bounds.TP)
    )
    from apron.command_line.plot import check_out
    from apron.output_files import discard

    try:
        output = check_out(out, follow_symlinks=follow_symlinks)
    except ApronInputError as err:
        fail(str(err))
        return
    try:
        written = _plot(output, config, sample, context, kv_dtype, tp)
    finally:
        discard(output)
    typer.echo(printable(f"wrote {written}"))


def _plot(output, config, sample, context, kv_dtype, tp) -> str:
    """Plan at increasing contexts and draw the plot into the checked output."""
    from apron.command_line.plot import contexts_up_to, kv_curves, plans_for_plot, write_plot

    first = _plan(config, sample, context, kv_dtype, 1, tp, None, None, None)
    maximum = first.request.context or DEFAULT_PLOT_CONTEXT
    try:
        plans = plans_for_plot(
            load_sample(sample) if sample is not None else load_config(config),  # type: ignore[arg-type]
            contexts_up_to(maximum),
            kv_dtype=kv_dtype,
            tp=tp,
        )
        written = write_plot(kv_curves(plans), output)
    except ApronInputError as err:
        fail(str(err))
    return f"{shown(written)} (contexts up to {maximum:,} tokens)"


GgufContextOpt = Annotated[
    str | None,
    typer.Option(
        "--ctx-size",
        "-c",
        "--context",
        help="llama.cpp's n_ctx (all sequences together).",
        show_default=False,
    ),
]
ParallelOpt = Annotated[
    str | None,
    typer.Option(
        "--parallel",
        "-np",
        "--batch",
        help="llama.cpp's n_parallel: sequences.",
        show_default=False,
    ),
]


@app.command("gguf")
def gguf_command(
    path: Annotated[str, typer.Argument(help="A local .gguf file (the first shard is enough).")],
    context: GgufContextOpt = None,
    parallel: ParallelOpt = None,
    kv_dtype: Annotated[
        str | None, typer.Option("--kv-dtype", help="llama.cpp cache type for K and V.")
    ] = None,
    cache_type_k: CacheTypeKOpt = None,
    cache_type_v: CacheTypeVOpt = None,
    flash_attn: FlashAttnOpt = None,
    kv_unified: KvUnifiedOpt = False,
    swa_full: SwaFullOpt = False,
    batch_size: NBatchOpt = None,
    ubatch_size: NUbatchOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """The llama.cpp column for a GGUF file, read header-only, with llama.cpp's own flags: -c is
    n_ctx (0 or none: the model's context_length; split across -np sequences unless -kvu), cache
    types as llama.cpp spells them (f16, q8_0, ...), -fa, -kvu, --swa-full, -b, -ub."""
    engine = EngineOptions(
        cache_type_k=cache_type_k or kv_dtype,
        cache_type_v=cache_type_v or kv_dtype,
        flash_attn=flash_attn,
        kv_unified=kv_unified or None,
        swa_full=swa_full or None,
        batch_size=batch_size,
        ubatch_size=ubatch_size,
    )
    _gguf(path, context, parallel, None, engine, json_output)


def _is_gguf(source: str) -> bool:
    """A local file that is a GGUF: named .gguf, or starting with GGUF's magic."""
    from pathlib import Path

    path = Path(source)
    if path.suffix.lower() == ".gguf":
        return True
    try:
        if not path.is_file():
            return False
        with path.open("rb") as handle:
            return handle.read(4) == b"GGUF"
    except OSError:
        return False


def _gguf(path, context, parallel, kv_dtype, engine: EngineOptions, json_output: bool) -> None:
    """llama.cpp's figures for a GGUF file: `context` is n_ctx, `parallel` n_seq_max (text, or
    a number from `apron plan`)."""
    from apron.engines.llamacpp.gguf_header import gguf_limits, read_header
    from apron.engines.llamacpp.memory import Unknown, cache_type, figures, render

    constraints = load_constraints().get("llamacpp")
    if constraints is None:
        fail("no generated/llamacpp constraints")
        return
    try:
        if kv_dtype not in (None, "bf16"):
            raise ApronInputError(
                f"--kv-dtype {shown(kv_dtype)} on a GGUF: give llama.cpp's cache types (-ctk / "
                "-ctv)"
            )
        text = None if context is None else str(context)
        n_ctx = llamacpp_option(constraints, "--context", text, low=0)
        n_seq = llamacpp_option(
            constraints, "--batch", None if parallel is None else str(parallel), low=1
        )
        n_seq = 1 if n_seq is None else n_seq
        flags = engine.llamacpp()
        header = read_header(path, gguf_limits(constraints))
        types = [cache_type(constraints, t) if t else None for t in (flags.type_k, flags.type_v)]
        engine_flags.check_flash_attn(flags, types[1] is not None and _quantized(types[1]))
    except (ApronInputError, Unknown) as err:
        fail(str(err))
        return
    except OSError as err:
        fail(os_error(err))
        return
    got = figures(
        header,
        constraints,
        n_ctx=n_ctx,
        n_seq_max=n_seq,
        type_k=types[0],
        type_v=types[1],
        settings=flags.overrides(),
    )
    if got.refused:
        fail(f"{shown(path)}: llama.cpp at {constraints.commit[:12]} refuses it: {got.refused}")
    if json_output:
        import json

        from apron.json_model import _as_data

        data = {
            "schema_version": GGUF_SCHEMA_VERSION,
            "path": str(path),
            "architecture": header.architecture,
            "engine": "llamacpp",
            "commit": constraints.commit,
            "n_ctx": n_ctx,
            "n_seq_max": n_seq,
            "settings": flags._asdict(),
            "figures": _as_data(got),
        }
        typer.echo(printable_json(json.dumps(data, indent=2, default=str)))
        return
    typer.echo(printable(render(header, constraints, got, n_seq)))


GGUF_SCHEMA_VERSION = 1  # `apron gguf --json` layout


def _quantized(ggml_type: str) -> bool:
    return not any(ggml_type.endswith(t) for t in ("F32", "F16", "BF16"))


# option -> (the limit row that bounds it, what it is in llama.cpp); the C type of the setting the
# option sets gives the upper bound, LLAMA_MAX_SEQ caps n_seq_max
LLAMACPP_OPTIONS = {
    "--context": ("common_params::n_ctx", "-c (common_params.n_ctx)"),
    "--batch": ("LLAMA_MAX_SEQ", "n_seq_max (llama_context refuses more than LLAMA_MAX_SEQ)"),
}


def llamacpp_option(constraints, option: str, text: str | None, *, low: int) -> int | None:
    """A llama.cpp option's value within the bound extracted from llama.cpp (generated/llamacpp
    limits); None when not given."""
    from apron.engines.llamacpp.memory import limit

    if text is None:
        return None
    name, what = LLAMACPP_OPTIONS[option]
    bound = bounds.Bound(low, limit(constraints, name), f"llama.cpp's {what}: {name}")
    return bounds.parse_int(text, bound, option)


def main() -> None:
    """Console entry point: bad input is one message (exit 2); a bug is one line too (exit 70),
    unless APRON_DEBUG is set, then it is the full traceback."""
    try:
        app()
    except Exception as err:  # a bug, not bad input
        if os.environ.get("APRON_DEBUG"):
            raise
        err_console.print(
            printable(
                f"internal error: {type(err).__name__}: {shown(str(err))} "
                "(set APRON_DEBUG=1 for a traceback)"
            ),
            markup=False,
        )
        sys.exit(70)
