"""SGLang's serving facts: server defaults and argument overrides, tensor-parallel rules,
recurrent state splits, the memory fraction, prefill graphs, context length and KV dtypes."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.records import FactKind, Record, warning
from apron.extractors.serving.records import (
    ServingDefault,
    SsmTpSplit,
    TpRule,
)
from apron.extractors.sglang import (
    arg_overrides,
    context_length,
    kv_dtype_sets,
    memory_fraction,
    prefill_graph,
    server_arg_defaults,
    serving_defaults,
    serving_rules,
)
from apron.extractors.sglang.model_facts import MODEL_CONFIG_PATHS
from apron.extractors.sglang.records import (
    SglangArgOverride,
    SglangMemoryStep,
    SglangServerArgDefault,
)
from apron.extractors.snapshot import Snapshot

OVERRIDES_PATHS = ("python/sglang/srt/arg_groups/overrides.py",)
KV_DTYPE_SETS = FactKind(
    kv_dtype_sets.FACT,
    "KV cache dtype architecture sets",
    kv_dtype_sets.SglangKvDtypeSet,
    "_DEEPSEEK_FAMILY_ARCHS: the architectures whose DeepSeek-family overrides (the DSA KV-cache "
    "dtype default among them) run.",
)

CONTEXT_LENGTH_RULES = FactKind(
    context_length.FACT,
    "Default context length",
    context_length.SglangContextRule,
    "get_context_length over the text config: the keys tried in order (CONTEXT_LENGTH_KEYS), the "
    "rope-scaling factor and when it is 1, and the number returned when no key is set.",
)

PREFILL_GRAPH_RULES = FactKind(
    prefill_graph.FACT,
    "Prefill cuda-graph backend rules",
    prefill_graph.SglangPrefillGraphRule,
    "how ServerArgs settles the prefill cuda-graph backend before the memory fraction: the "
    "switch of _apply_cuda_graph_compatibility and each backend's rules that turn capture off.",
)

SERVER_ARG_DEFAULTS = FactKind(
    server_arg_defaults.FACT,
    "ServerArgs defaults",
    SglangServerArgDefault,
    "the default each ServerArgs field starts with: what the rules apron evaluates read as "
    "default server args (the memory fraction, the prefill cuda-graph backend).",
)


def _serving_defaults(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(serving_defaults.SERVER_ARGS_PATHS, anchor="ServerArgs")
    text = snapshot.read_text(path)
    page = serving_defaults.page_size_source(text, path)
    if isinstance(page, tuple):
        module, function, handler = page
        source = snapshot.first_existing((module,), anchor=function)
        page = serving_defaults.page_size_from_pass(
            snapshot.read_text(source), source, function, handler
        )
    ratios = serving_defaults.pool_ratio_defaults(text, path)
    return FactOutput((serving_defaults.mem_fraction_default(text, path), page, *ratios))


def _tp_rules(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    config = snapshot.first_existing(MODEL_CONFIG_PATHS, anchor="ModelConfig.get_num_kv_heads")
    pool = next(
        (
            p
            for p in serving_rules.POOL_PATHS
            if snapshot.exists(p)
            and any(f"def {m}" in snapshot.read_text(p) for m in serving_rules.CELL_METHODS)
        ),
        None,
    )
    if pool is None:
        raise snapshot.missing_anchor(
            "no per-token cell size method in any known layout",
            serving_rules.POOL_PATHS,
            " or ".join(serving_rules.CELL_METHODS),
        )
    llama = snapshot.first_existing(serving_rules.LLAMA_PATHS, anchor=serving_rules.LLAMA_ATTENTION)
    rules = [
        *serving_rules.kv_split_rules(snapshot.read_text(config), config),
        serving_rules.mla_cell_rule(snapshot.read_text(pool), pool),
        *serving_rules.attention_head_rules(snapshot.read_text(llama), llama),
    ]
    return FactOutput(tuple(sorted(rules, key=lambda r: r.rule)))


def _ssm_tp_splits(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(serving_rules.MAMBA_PATHS, anchor="*StateShape.create")
    return FactOutput(tuple(serving_rules.ssm_tp_splits(snapshot.read_text(path), path)))


SERVING_DEFAULTS = FactKind(
    "serving_defaults",
    "Serving defaults",
    ServingDefault,
    "the KV page size and the static memory fraction a server starts with when they are not "
    "given: a literal, the value on CUDA of a platform-guarded pass (other values as "
    "candidates), or a value computed at startup.",
)
TP_RULES = FactKind(
    "tp_rules",
    "Tensor-parallel rules",
    TpRule,
    "how ModelConfig splits KV heads across GPUs (replicated when fewer than tp), whether the "
    "MLA cell size depends on tp, and the head checks of LlamaAttention.",
)
SSM_TP_SPLITS = FactKind(
    "ssm_tp_splits",
    "Recurrent state split under tensor parallelism",
    SsmTpSplit,
    "the dimensions each *StateShape.create of configs/mamba_utils.py divides by the "
    "tensor-parallel size to size a state.",
)


def _arg_overrides(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = next((p for p in arg_overrides.OVERRIDES_PATHS if snapshot.exists(p)), None)
    if path is None:
        name = "the server-arg override registry"
        message = f"no {name} at this commit in " + ", ".join(arg_overrides.OVERRIDES_PATHS)
        return FactOutput(
            (), (warning("absent", name, message, arg_overrides.OVERRIDES_PATHS[0], name),)
        )
    rows, warnings = arg_overrides.arg_overrides(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


ARG_OVERRIDES = FactKind(
    "arg_overrides",
    "Per-architecture overrides of the pool settings",
    SglangArgOverride,
    "the values the override registry (arg_groups/overrides.py) declares per architecture for the "
    "SWA and Mamba pool ratios, the page size and the hybrid-SWA switch, with the tests on the way "
    "and whether a server with default args gets them.",
)


def _memory_fraction_steps(
    snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]
) -> FactOutput:
    path = snapshot.first_existing(
        serving_defaults.SERVER_ARGS_PATHS, anchor=memory_fraction.HANDLER
    )
    steps, warnings = memory_fraction.memory_fraction_steps(snapshot.read_text(path), path)
    return FactOutput(tuple(steps), tuple(warnings))


MEMORY_FRACTION_STEPS = FactKind(
    memory_fraction.FACT,
    "Static memory-fraction heuristic",
    SglangMemoryStep,
    "the steps of ServerArgs._handle_gpu_memory_settings (and the reserve methods it calls) that "
    "compute mem_fraction_static when it is not given, in program order: chunked prefill size "
    "and decode cuda-graph max_bs per GPU-memory band and tp, the prefill cuda-graph sizes, the "
    "reserved-memory terms (MiB) with their conditions, the floor, the rounding and the VLM "
    "adjustment's constants.",
    ordered=True,
)

SERVING_DEFAULTS_FACT = FactExtractor(
    SERVING_DEFAULTS,
    _serving_defaults,
    reads=(*serving_defaults.SERVER_ARGS_PATHS, *OVERRIDES_PATHS),
)

TP_RULES_FACT = FactExtractor(
    TP_RULES,
    _tp_rules,
    reads=(*MODEL_CONFIG_PATHS, *serving_rules.POOL_PATHS, *serving_rules.LLAMA_PATHS),
)

SSM_TP_SPLITS_FACT = FactExtractor(SSM_TP_SPLITS, _ssm_tp_splits, reads=serving_rules.MAMBA_PATHS)

MEMORY_FRACTION_STEPS_FACT = FactExtractor(
    MEMORY_FRACTION_STEPS,
    _memory_fraction_steps,
    reads=serving_defaults.SERVER_ARGS_PATHS,
)

ARG_OVERRIDES_FACT = FactExtractor(
    ARG_OVERRIDES,
    _arg_overrides,
    reads=arg_overrides.OVERRIDES_PATHS,
    allow_empty=True,
)

SERVER_ARG_DEFAULTS_FACT = FactExtractor(
    SERVER_ARG_DEFAULTS,
    server_arg_defaults.server_arg_defaults_fact,
    reads=serving_defaults.SERVER_ARGS_PATHS,
)

PREFILL_GRAPH_RULES_FACT = FactExtractor(
    PREFILL_GRAPH_RULES,
    prefill_graph.prefill_graph_fact,
    reads=serving_defaults.SERVER_ARGS_PATHS,
)

CONTEXT_LENGTH_RULES_FACT = FactExtractor(
    CONTEXT_LENGTH_RULES,
    context_length.context_length_fact,
    reads=context_length.PATHS,
)

KV_DTYPE_SETS_FACT = FactExtractor(
    KV_DTYPE_SETS,
    kv_dtype_sets.kv_dtype_sets,
    reads=kv_dtype_sets.OVERRIDES_PATHS,
    allow_empty=True,
)
