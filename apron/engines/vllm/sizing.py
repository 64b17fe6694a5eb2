"""vLLM's extracted KV cache sizing rules (generated/vllm `kv_sizing_paths`) evaluated for one
deployment: the scheduler's batch defaults for `vllm serve` on this GPU, the in-flight tokens a
windowed group reserves for, and the pages one request at max_model_len takes in each group.

Bound as apron runs: a CUDA device (not a TPU or CPU), `vllm serve` (UsageContext
OPENAI_API_SERVER), asynchronous scheduling on (what VllmConfig chooses for a generation model
when nothing disables it), no speculative decoding, decode context parallel 1. Where the Model Runner V2 choice changes
a value (pipeline parallel > 1), the value is unknown."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from apron.constraints import Citation, EngineConstraints
from apron.engines.vllm.kv_cache import CHUNKED, FULL, MAMBA, SLIDING, LayerSpec
from apron.expressions import Unknown as ExpressionUnknown
from apron.expressions import evaluate, names_in
from apron.record import Record
from apron.vllm_rule_env import CALLS

FACT = "kv_sizing_paths"
SERVER = "UsageContext.OPENAI_API_SERVER"
BATCH_DEFAULTS = "EngineArgs.get_batch_defaults"
IN_FLIGHT = "VllmConfig.max_in_flight_tokens"
CONCURRENT = "VllmConfig.max_concurrent_batches"
SPEC_METHODS = {
    FULL: "FullAttentionSpec.max_memory_usage_bytes",
    SLIDING: "SlidingWindowSpec.max_admission_blocks_per_request",
    CHUNKED: "ChunkedLocalAttentionSpec.max_admission_blocks_per_request",
    MAMBA: "MambaSpec.max_memory_usage_bytes",
}
# the methods that return bytes (pages x page bytes); the admission caps return blocks
RETURNS_BYTES = frozenset({FULL, MAMBA})
GIB_BYTES = 1 << 30  # vllm/utils/mem_constants.py GiB_bytes
UNDECIDED = "self.use_v2_model_runner"  # decided at startup from the model and the features
SPEC_BINDINGS = {
    "self.num_speculative_blocks": 0,
    "vllm_config.parallel_config.decode_context_parallel_size": 1,
    "dcp_world_size": 1,
}


# the platform probes the rules call, answered as apron runs: a CUDA device, not a TPU or a CPU
RULE_CALLS = {
    **CALLS,
    "current_platform.is_tpu": lambda: False,
    "current_platform.is_cpu": lambda: False,
}


class Unknown(Exception):
    """A sizing value the extracted rules do not give for this deployment (the message says)."""


class Scheduler(Record):
    """The scheduler settings a windowed group's reservation depends on."""

    max_num_batched_tokens: int
    max_num_seqs: int
    concurrent_batches: int
    in_flight_tokens: int
    lines: tuple[str, ...]
    citations: tuple[Citation, ...]


def _rows(vllm: EngineConstraints, symbol: str) -> list[Any]:
    rows = sorted((r for r in vllm.rows(FACT) if r.symbol == symbol), key=lambda r: r.order)
    if not rows:
        raise Unknown(f"vLLM's {symbol} is not among the extracted sizing rules ({FACT})")
    bad = [r for r in rows if r.status != "read"]
    if bad:
        raise Unknown(f"vLLM's {symbol} could not be read: {bad[0].reason}")
    return rows


def _unbound(expression: Any, bindings: Mapping[str, Any]) -> list[str]:
    """The names the expression reads that apron does not bind."""
    return sorted({n for n in names_in(expression) if n not in bindings})


def _evaluate(row: Any, expression: Any, bindings: Mapping[str, Any]) -> Any:
    try:
        return evaluate(expression, bindings, RULE_CALLS)
    except ExpressionUnknown as err:
        raise Unknown(f"{row.symbol}: {err}") from None


def _holds(row: Any, bindings: Mapping[str, Any]) -> bool | None:
    """Whether every test of the path holds; None when one needs an unbound name."""
    for test in row.conditions:
        if _unbound(test, bindings):
            return None
        if not _evaluate(row, test, bindings):
            return False
    return True


def _value(row: Any, bindings: Mapping[str, Any]) -> Any:
    names = _unbound(row.value, bindings)
    if names:
        raise Unknown(f"{row.symbol}: {row.code} needs {', '.join(names)} bound")
    return _evaluate(row, row.value, bindings)


def _first_return(rows: Sequence[Any], bindings: Mapping[str, Any]) -> tuple[Any, Any]:
    for row in rows:
        if row.effect != "return":
            continue
        holds = _holds(row, bindings)
        if holds is None:
            names = sorted({n for test in row.conditions for n in _unbound(test, bindings)})
            raise Unknown(f"{row.symbol}: the test needs {', '.join(names)} bound")
        if holds:
            return _value(row, bindings), row
    raise Unknown(f"{rows[0].symbol}: no return path holds")


def returned(
    vllm: EngineConstraints, symbol: str, bindings: Mapping[str, Any], undecided: Sequence[str] = ()
) -> tuple[Any, Any]:
    """(value, the path taken) of a method; a name in `undecided` is tried both ways, and a value
    that depends on it is unknown."""
    rows = _rows(vllm, symbol)
    results = []
    for choice in itertools.product((True, False), repeat=len(undecided)):
        results.append(
            _first_return(rows, {**bindings, **dict(zip(undecided, choice, strict=True))})
        )
    values = {value for value, _row in results}
    if len(values) > 1:
        raise Unknown(
            f"{symbol} depends on {', '.join(undecided)}, decided at startup "
            f"({', '.join(map(str, sorted(values)))})"
        )
    return results[0]


def assigned(vllm: EngineConstraints, symbol: str, target: str, bindings: Mapping[str, Any]) -> Any:
    """The value of the last assignment of `target` whose tests hold."""
    found = None
    for row in _rows(vllm, symbol):
        if row.effect != "assign" or row.target != target:
            continue
        holds = _holds(row, bindings)
        if holds is None:
            names = sorted({n for test in row.conditions for n in _unbound(test, bindings)})
            raise Unknown(f"{symbol}: the test of {target} needs {', '.join(names)} bound")
        if holds:
            found = (_value(row, bindings), row)
    if found is None:
        raise Unknown(f"{symbol}: no assignment of {target} holds")
    return found


def scheduler(
    vllm: EngineConstraints,
    *,
    gpu_memory: int,
    gpu_name: str,
    tp: int,
    pp: int,
    max_model_len: int,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    async_scheduling: bool | None = None,
) -> Scheduler:
    """The batch defaults of `vllm serve` on this GPU and the in-flight tokens they give."""
    bindings: dict[str, Any] = {
        "device_memory": gpu_memory,
        "device_name": gpu_name.lower(),
        "GiB_bytes": GIB_BYTES,
        "world_size": tp * pp,
    }
    lines: list[str] = []
    cites: list[Citation] = []
    if max_num_seqs is None:
        max_num_seqs, row = assigned(
            vllm, BATCH_DEFAULTS, f"default_max_num_seqs[{SERVER}]", bindings
        )
        cites.append(vllm.cite(row))
        lines.append(f"max_num_seqs = {max_num_seqs} ({BATCH_DEFAULTS}, vllm serve, this GPU)")
    if max_num_batched_tokens is None:
        default, row = assigned(
            vllm, BATCH_DEFAULTS, f"default_max_num_batched_tokens[{SERVER}]", bindings
        )
        cites.append(vllm.cite(row))
        max_num_batched_tokens = min(max_num_seqs * max_model_len, default)
        lines.append(
            f"max_num_batched_tokens = min(max_num_seqs x max_model_len, {default}) = "
            f"{max_num_batched_tokens:,} ({BATCH_DEFAULTS} for vllm serve on "
            f"{gpu_memory / GIB_BYTES:.0f} GiB"
            + (f", {gpu_name}" if gpu_name else ", assuming it is not an A100")
            + "; EngineArgs._set_default_max_num_seqs_and_batched_tokens_args caps it)"
        )
    engine = {
        # VllmConfig turns async scheduling on for a generation model when nothing disables it
        "self.scheduler_config.async_scheduling": True
        if async_scheduling is None
        else async_scheduling,
        "self.parallel_config.pipeline_parallel_size": pp,
        "self.scheduler_config.max_num_batched_tokens": max_num_batched_tokens,
    }
    batches, row = returned(vllm, CONCURRENT, engine, (UNDECIDED,))
    cites.append(vllm.cite(row))
    engine["self.max_concurrent_batches"] = batches
    in_flight, row = returned(vllm, IN_FLIGHT, engine)
    cites.append(vllm.cite(row))
    lines.append(
        f"in-flight tokens = {batches} concurrent batches (async scheduling "
        f"{'on' if engine['self.scheduler_config.async_scheduling'] else 'off'}, pp {pp}) x "
        f"{max_num_batched_tokens:,} = {in_flight:,} ({IN_FLIGHT})"
    )
    return Scheduler(
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        concurrent_batches=batches,
        in_flight_tokens=in_flight,
        lines=tuple(lines),
        citations=tuple(cites),
    )


def request_pages(vllm: EngineConstraints, in_flight_tokens: int, mamba_cache_mode: str = "none"):
    """A vllm_kv_cache.RequestPages from the extracted methods: pages of one spec's group that a
    request at max_model_len takes (bytes methods divided by the page, as vLLM's
    get_max_concurrency_for_kv_cache_config does with cdiv)."""
    cache: dict[tuple[LayerSpec, int], int] = {}

    def pages(spec: LayerSpec, max_model_len: int) -> int:
        key = (spec, max_model_len)
        if key in cache:
            return cache[key]
        symbol = SPEC_METHODS.get(spec.kind)
        if symbol is None:
            raise Unknown(f"no sizing rule for a {spec.kind} spec")
        bindings = {
            **SPEC_BINDINGS,
            "self.block_size": spec.block_tokens,
            "self.page_size_bytes": spec.page_bytes,
            "self.sliding_window": spec.window,
            "self.attention_chunk_size": spec.window,
            "max_model_len": max_model_len,
            "vllm_config.model_config.max_model_len": max_model_len,
            "max_in_flight_tokens": in_flight_tokens,
            "vllm_config.cache_config.mamba_cache_mode": mamba_cache_mode,
        }
        value, _row = returned(vllm, symbol, bindings)
        if spec.kind in RETURNS_BYTES:
            value = -(-value // spec.page_bytes)
        cache[key] = value
        return value

    return pages


def citations(vllm: EngineConstraints, kinds: Sequence[str]) -> tuple[Citation, ...]:
    """Where each spec kind's rule was read."""
    found = []
    for kind in dict.fromkeys(kinds):
        symbol = SPEC_METHODS.get(kind)
        rows = [r for r in vllm.rows(FACT) if r.symbol == symbol]
        if rows:
            found.append(vllm.cite(rows[0]))
    return tuple(found)
