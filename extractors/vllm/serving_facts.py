"""vLLM's serving facts: defaults, tensor-parallel rules, recurrent state, attention backends,
KV sizing and dtype rules, command-line literals and the attention type rule."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.records import FactKind, Record, warning
from apron.extractors.serving.records import (
    ServingDefault,
    SsmTpSplit,
    TpRule,
)
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm import (
    attention_backends,
    attn_type_rule,
    index_cache,
    kv_dtype_rules,
    option_literals,
    serving_rules,
    sizing_rules,
    state_shapes,
)
from apron.extractors.vllm.records import (
    AttentionBackendChoice,
    AttnTypeRule,
    HybridPageRule,
    IndexerLayerRule,
    KvDtypeLiteral,
    MambaStateCalculator,
    MambaStateHook,
    OptionLiteral,
    SizingPath,
)
from apron.extractors.vllm.registry_facts import snapshot_reader


def _attn_type_rule(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    tried = []
    for path in attn_type_rule.CONFIG_PATHS:
        tried.append(path)
        if snapshot.exists(path):
            text = snapshot.read_text(path)
            if "def attn_type" in text:
                return FactOutput((attn_type_rule.attn_type_rule(text, path),))
    absent = warning(
        code="absent",
        subject="ModelConfig.attn_type",
        message="no ModelConfig.attn_type at this commit in " + ", ".join(tried),
        path=tried[0],
        symbol="ModelConfig.attn_type",
    )
    return FactOutput((), (absent,))


def _defining(snapshot: Snapshot, paths: tuple[str, ...], *markers: str) -> str | None:
    """The first of `paths` present at the commit whose text holds every marker."""
    for path in paths:
        if snapshot.exists(path):
            text = snapshot.read_text(path)
            if all(marker in text for marker in markers):
                return path
    return None


def _absent(what: str, tried: tuple[str, ...], symbol: str) -> FactOutput:
    """No rows, and a warning: the concept does not exist in any known layout at this commit."""
    message = f"no {what} at this commit in " + ", ".join(tried)
    return FactOutput((), (warning("absent", symbol, message, tried[0], symbol),))


def _serving_defaults(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    cls = serving_rules.CACHE_CLASS
    path = _defining(snapshot, serving_rules.CACHE_PATHS, f"class {cls}")
    if path is None:
        raise snapshot.missing_anchor(
            f"class {cls} is not defined in any known layout", serving_rules.CACHE_PATHS, cls
        )
    text = snapshot.read_text(path)
    rows = serving_rules.cache_defaults(text, path)
    cuda = serving_rules.CUDA_PLATFORM_PATHS[0]
    if any(r.kind == "opaque" for r in rows) and snapshot.exists(cuda):  # the platform fills it
        rows = serving_rules.cache_defaults(text, path, snapshot.read_text(cuda))
    return FactOutput(tuple(rows))


def _tp_rules(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    method = serving_rules.KV_METHOD
    paths = serving_rules.MODEL_CONFIG_PATHS
    path = _defining(snapshot, paths, f"def {method}")
    if path is None:
        raise snapshot.missing_anchor(
            f"ModelConfig.{method} is not defined in any known layout",
            paths,
            f"ModelConfig.{method}",
        )
    convertor_path = serving_rules.CONVERTOR_PATH
    convertor_text = snapshot.read_text(convertor_path) if snapshot.exists(convertor_path) else None
    rules = serving_rules.tp_rules(snapshot.read_text(path), path, convertor_text)
    linear = snapshot.first_existing(serving_rules.LINEAR_PATHS, anchor=serving_rules.QKV_CLASS)
    rules.append(serving_rules.kv_divisibility_rule(snapshot.read_text(linear), linear))
    return FactOutput(tuple(sorted(rules, key=lambda r: r.rule)))


def _ssm_tp_splits(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    cls = serving_rules.MAMBA_CLASS
    path = _defining(snapshot, serving_rules.MAMBA_PATHS, f"class {cls}")
    if path is None:
        return _absent(cls, serving_rules.MAMBA_PATHS, cls)
    return FactOutput(tuple(serving_rules.ssm_tp_splits(snapshot.read_text(path), path)))


def _hybrid_page_rules(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    layouts = serving_rules.HYBRID_LAYOUTS
    for path, cls, method in layouts:
        if _defining(snapshot, (path,), f"class {cls}", f"def {method}"):
            rows = serving_rules.hybrid_page_rules(snapshot.read_text(path), path, cls, method)
            return FactOutput(tuple(rows))
    symbol = " or ".join(f"{cls}.{method}" for _, cls, method in layouts)
    return _absent("hybrid page rule", tuple(p for p, _, _ in layouts), symbol)


def _attention_backends(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    block = next((r for r in done["serving_defaults"] if r.setting == "block_size"), None)
    default = int(block.value) if block is not None and block.value.isdigit() else None
    cuda, registry, base = (
        attention_backends.CUDA_PATH,
        attention_backends.REGISTRY_PATH,
        attention_backends.BASE_PATH,
    )
    if not snapshot.exists(registry):
        return _absent("attention backend registry", (registry,), attention_backends.ENUM)
    for path in (cuda, base):
        snapshot.first_existing((path,), anchor=attention_backends.FACT)
    rows = attention_backends.attention_backends(
        snapshot.read_text(cuda),
        snapshot.read_text(registry),
        snapshot.read_text(base),
        snapshot_reader(snapshot),
        default,
    )
    return FactOutput(tuple(rows))


ATTENTION_BACKENDS = FactKind(
    attention_backends.FACT,
    "CUDA attention backends and their block sizes",
    AttentionBackendChoice,
    "the backends _get_backend_priorities lists per branch (use_mla, GPU generation), in "
    "order, with each backend's kernel block sizes and the block size get_preferred_block_size "
    "picks from the default; the first backend that supports the setup is chosen at startup.",
)


SERVING_DEFAULTS = FactKind(
    "serving_defaults",
    "Serving defaults",
    ServingDefault,
    "the KV cache block size and the GPU memory fraction a server starts with when they are not "
    "given: a literal, a value computed at startup, or code not evaluated.",
)
TP_RULES = FactKind(
    "tp_rules",
    "Tensor-parallel rules",
    TpRule,
    "how ModelConfig splits KV heads across GPUs (replicated when fewer than tp), the MLA head "
    "count per GPU, and what tp must divide.",
)
SSM_TP_SPLITS = FactKind(
    "ssm_tp_splits",
    "Recurrent state split under tensor parallelism",
    SsmTpSplit,
    "the dimensions each MambaStateShapeCalculator method divides by the tensor-parallel size.",
)
INDEXER_LAYER_RULES = FactKind(
    index_cache.FACT,
    "Sparse-attention indexer layers",
    IndexerLayerRule,
    "which layers of a DSA (sparse-attention) MLA model build an indexer and its cache: the "
    "config key that makes the model sparse and the IndexCache rule that skips a layer.",
)
HYBRID_PAGE_RULES = FactKind(
    "hybrid_page_rules",
    "Hybrid page-size unification",
    HybridPageRule,
    "how the attention block size of a hybrid model is raised (kernel-aligned) so that one "
    "attention page holds one mamba state, per mamba_cache_mode branch.",
)

KV_SIZING_PATHS = FactKind(
    sizing_rules.FACT,
    "KV cache sizing rules",
    SizingPath,
    "the ways through the methods that size a request's KV cache (the pages a full-attention, "
    "sliding-window, chunked-local or Mamba group takes at max_model_len), the in-flight tokens "
    "a windowed group reserves for, and the scheduler's batch defaults: tests and value as "
    "expressions, in source order.",
)


def _option_literals(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows, warnings = [], []
    for path, reader in (
        (option_literals.CACHE_PATH, option_literals.literal_members),
        (option_literals.ARGPARSE_PATH, option_literals.length_parser),
    ):
        if not snapshot.exists(path):
            warnings.append(warning("absent", path, f"no {path} at this commit", path, path))
            continue
        found, warned = reader(snapshot.read_text(path), path)
        rows += found
        warnings += warned
    return FactOutput(tuple(rows), tuple(warnings))


OPTION_LITERALS = FactKind(
    "option_literals",
    "Command-line literals",
    OptionLiteral,
    "the values vLLM's command line accepts for flags apron also takes: the members of "
    "CacheDType (--kv-cache-dtype) and the suffixes and auto spellings of "
    "human_readable_int_or_auto (--max-model-len).",
)

MAMBA_STATE_CALCULATORS = FactKind(
    state_shapes.CALCULATORS_FACT,
    "Recurrent state calculators",
    MambaStateCalculator,
    "each MambaStateShapeCalculator / MambaStateDtypeCalculator method: its parameters and the "
    "state tensors it returns (dims, or dtype, as expressions over the parameters).",
)
MAMBA_STATE_HOOKS = FactKind(
    state_shapes.HOOKS_FACT,
    "Recurrent state hooks of model classes",
    MambaStateHook,
    "each model class's get_mamba_state_shape_from_config / get_mamba_state_dtype_from_config: "
    "the calculator method it calls and what it passes (paths from vllm_config), or the class it "
    "delegates to.",
)

KV_DTYPE_LITERALS = FactKind(
    kv_dtype_rules.FACT,
    "KV cache dtype literals",
    KvDtypeLiteral,
    "the model types _get_and_verify_dtype refuses in float16, the ModelOpt KV algorithm -> cache "
    "dtype map, and the ModelOpt quant_algo -> quant_method normalisation (others are refused).",
)


ATTN_TYPE_RULE = FactKind(
    attn_type_rule.FACT,
    "Attention type rule",
    AttnTypeRule,
    "ModelConfig.attn_type: a pooling run is encoder-only (no KV cache) for the listed default "
    "sequence pooling types or a false causal key; otherwise the class's attn_type.",
)

ATTN_TYPE_RULE_FACT = FactExtractor(
    ATTN_TYPE_RULE, _attn_type_rule, reads=attn_type_rule.CONFIG_PATHS, allow_empty=True
)

SERVING_DEFAULTS_FACT = FactExtractor(
    SERVING_DEFAULTS,
    _serving_defaults,
    reads=(*serving_rules.CACHE_PATHS, *serving_rules.CUDA_PLATFORM_PATHS),
)

TP_RULES_FACT = FactExtractor(
    TP_RULES,
    _tp_rules,
    reads=(
        *serving_rules.MODEL_CONFIG_PATHS,
        serving_rules.CONVERTOR_PATH,
        *serving_rules.LINEAR_PATHS,
    ),
)

ATTENTION_BACKENDS_FACT = FactExtractor(
    ATTENTION_BACKENDS,
    _attention_backends,
    reads=attention_backends.READS,
    needs=("serving_defaults",),
    allow_empty=True,
)

SSM_TP_SPLITS_FACT = FactExtractor(
    SSM_TP_SPLITS, _ssm_tp_splits, reads=serving_rules.MAMBA_PATHS, allow_empty=True
)

MAMBA_STATE_CALCULATORS_FACT = FactExtractor(
    MAMBA_STATE_CALCULATORS,
    state_shapes.calculators_fact,
    reads=state_shapes.CALCULATOR_PATHS,
    allow_empty=True,
)

MAMBA_STATE_HOOKS_FACT = FactExtractor(
    MAMBA_STATE_HOOKS,
    state_shapes.hooks_fact,
    reads=(state_shapes.MODELS_DIR,),
    needs=(state_shapes.CALCULATORS_FACT,),
    allow_empty=True,
)

KV_DTYPE_LITERALS_FACT = FactExtractor(
    KV_DTYPE_LITERALS,
    kv_dtype_rules.kv_dtype_literals,
    reads=kv_dtype_rules.READS,
    allow_empty=True,
)

OPTION_LITERALS_FACT = FactExtractor(
    OPTION_LITERALS, _option_literals, reads=option_literals.READS, allow_empty=True
)

KV_SIZING_PATHS_FACT = FactExtractor(
    KV_SIZING_PATHS,
    sizing_rules.kv_sizing_paths,
    reads=sizing_rules.READS,
    allow_empty=True,
)

INDEXER_LAYER_RULES_FACT = FactExtractor(
    INDEXER_LAYER_RULES,
    index_cache.indexer_layer_rules,
    reads=index_cache.PATHS,
    allow_empty=True,
)

HYBRID_PAGE_RULES_FACT = FactExtractor(
    HYBRID_PAGE_RULES,
    _hybrid_page_rules,
    reads=tuple(p for p, _, _ in serving_rules.HYBRID_LAYOUTS),
    allow_empty=True,
)
