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

from apron import engine_flags
from apron.config import load_config, load_sample, sample_names
from apron.constraints import load_constraints
from apron.engine_flags import EngineOptions
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
    str | None,
    typer.Option(
        "--context",
        "-c",
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
    int,
    typer.Option(
        "--batch", help="Sequences at once (also vLLM's --max-num-seqs, llama.cpp's -np)."
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
    str | None, typer.Option("--max-model-len", "--context-length", hidden=True)
]
KvCacheDtypeOpt = Annotated[str | None, typer.Option("--kv-cache-dtype", hidden=True)]
MaxNumSeqsOpt = Annotated[
    int | None, typer.Option("--max-num-seqs", "--parallel", "-np", hidden=True)
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
        block_size,
        kv_memory,
        pp,
        cache_type_k,
        cache_type_v,
        flash_attn,
        kv_unified or None,
        swa_full or None,
        batch_size,
        ubatch_size,
    )
    if config is not None and sample is None and _is_gguf(config):
        # plan's meaning: --batch sequences of --context tokens each, which llama.cpp holds in
        # n_ctx = batch x context split across n_seq_max = batch
        sequences = max_num_seqs or batch
        try:
            each = engine_flags.max_model_len(context, "--context", None) if context else None
        except ApronInputError as err:
            fail(str(err))
            return
        n_ctx = each * sequences if each is not None else None
        _gguf(config, n_ctx, sequences, kv_dtype, engine, json_output)
        return
    context_option = "--max-model-len" if max_model_len is not None else "--context"
    context = aliased(ctx, "context", context, max_model_len, "--max-model-len")
    kv_dtype = aliased(ctx, "kv_dtype", kv_dtype, kv_cache_dtype, "--kv-cache-dtype")
    batch = aliased(ctx, "batch", batch, max_num_seqs, "--max-num-seqs")
    engine = engine._replace(context_option=context_option)
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
        gpu,
        revision,
        engine,
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
        length = (
            engine_flags.max_model_len(
                str(context), (engine or EngineOptions()).context_option, vllm
            )
            if context is not None
            else None
        )
        deployment = (
            (engine or EngineOptions())
            .deployment(vllm)
            ._replace(max_model_len_auto=context is not None and length is None)
        )
        if kv_dtype not in KV_DTYPES and kv_dtype != "auto":
            kv_dtype = engine_flags.kv_cache_dtype(kv_dtype, vllm)
        context = length
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
    n_ctx (split across -np sequences unless -kvu), cache types as llama.cpp spells them (f16,
    q8_0, ...), -fa, -kvu, --swa-full, -b, -ub."""
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
    """llama.cpp's figures for a GGUF file: `context` is n_ctx, `parallel` n_seq_max."""
    from apron.gguf_header import read_header
    from apron.llamacpp_memory import Unknown, cache_type, figures, render

    constraints = load_constraints().get("llamacpp")
    if constraints is None:
        fail("no generated/llamacpp constraints")
        return
    try:
        if kv_dtype not in (None, "bf16"):
            raise ApronInputError(
                f"--kv-dtype {kv_dtype} on a GGUF: give llama.cpp's cache types (-ctk / -ctv)"
            )
        n_ctx = engine_flags.positive(str(context), "-c") if context is not None else None
        n_seq = engine_flags.positive(str(parallel), "-np") if parallel is not None else 1
        flags = engine.llamacpp()
        header = read_header(path)
        types = [cache_type(constraints, t) if t else None for t in (flags.type_k, flags.type_v)]
        engine_flags.check_flash_attn(flags, types[1] is not None and _quantized(types[1]))
    except (ApronInputError, Unknown) as err:
        fail(str(err))
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
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    typer.echo(render(header, constraints, got, n_seq))


GGUF_SCHEMA_VERSION = 1  # `apron gguf --json` layout


def _quantized(ggml_type: str) -> bool:
    return not any(ggml_type.endswith(t) for t in ("F32", "F16", "BF16"))


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
