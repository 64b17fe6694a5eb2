"""vLLM: MLA model types and gates, the KV-head alias scan and overrides, registry rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from apron.extractors.doc_findings import DocRegistryFinding
from apron.extractors.engine_api import EngineSpec, FactExtractor, FactOutput
from apron.extractors.records import FactKind, Record, SupportScan, warning
from apron.extractors.serving import kv_heads
from apron.extractors.serving.records import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
    ServingDefault,
    SsmTpSplit,
    TpRule,
)
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm import (
    attention_backends,
    attn_type_rule,
    class_flags,
    convertor,
    docs_tables,
    index_cache,
    kv_dtype_rules,
    model_config_defaults,
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
    InterfaceFlag,
    KvDtypeLiteral,
    MambaSsmDtypeDefault,
    MambaStateCalculator,
    MambaStateHook,
    MlaGate,
    MlaModelType,
    ModelClassFlags,
    OptionLiteral,
    RegistryNotice,
    RegistryRow,
    SizingPath,
    VllmDocsRow,
)
from apron.extractors.vllm.registry_notices import registry_notices
from apron.extractors.vllm.registry_rows import registry_rows


@dataclass(frozen=True)
class ConvertorLayout:
    """Where `is_deepseek_mla` and `get_total_num_kv_heads` live in one era of vLLM."""

    path: str
    class_name: str
    has_convertor_map: bool


# Newest first. 2026-01-02 moved the methods from ModelConfig into the convertor base class.
CONVERTOR_LAYOUTS = (
    ConvertorLayout(
        "vllm/transformers_utils/model_arch_config_convertor.py",
        "ModelArchConfigConvertorBase",
        True,
    ),
    ConvertorLayout("vllm/config/model.py", "ModelConfig", False),  # late 2025
    ConvertorLayout("vllm/config/__init__.py", "ModelConfig", False),  # 2025-08-08 .. 2025-09-19
    ConvertorLayout("vllm/config.py", "ModelConfig", False),  # mid 2025
)
REGISTRY_PATHS = (
    "vllm/model_executor/models/registry.py",
    "vllm/models/registry.py",
)


def find_layout(snapshot: Snapshot, method: str) -> ConvertorLayout:
    """The newest layout whose file defines `<class>.<method>`; an error names all tried."""
    tried = []
    for layout in CONVERTOR_LAYOUTS:
        tried.append(layout.path)
        if not snapshot.exists(layout.path):
            continue
        text = snapshot.read_text(layout.path)
        if convertor.defines_method(text, layout.path, layout.class_name, method):
            return layout
    anchors = " or ".join(f"{lay.class_name}.{method}" for lay in CONVERTOR_LAYOUTS)
    raise snapshot.missing_anchor(f"{method} is not defined in any known layout", tried, anchors)


CONVERTOR_READS = tuple(lay.path for lay in CONVERTOR_LAYOUTS)


def _layout_fact(method: str, extract: Callable[[str, ConvertorLayout], list[Record]]):
    """A fact read from the newest convertor layout that defines `<class>.<method>`."""

    def run(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        layout = find_layout(snapshot, method)
        return FactOutput(tuple(extract(snapshot.read_text(layout.path), layout)))

    return run


def _kv_head_overrides(text: str, layout: ConvertorLayout) -> list[Record]:
    if layout.has_convertor_map:
        return convertor.kv_head_overrides_by_convertor(text, layout.path, layout.class_name)
    return kv_heads.kv_head_overrides_inline(text, layout.path, layout.class_name)


_mla_model_types = _layout_fact(
    kv_heads.MLA_METHOD,
    lambda text, lay: convertor.mla_model_types(text, lay.path, lay.class_name),
)
_mla_gates = _layout_fact(
    kv_heads.MLA_METHOD, lambda text, lay: convertor.mla_gates(text, lay.path, lay.class_name)
)
_kv_head_aliases = _layout_fact(
    kv_heads.KV_METHOD, lambda text, lay: kv_heads.kv_head_aliases(text, lay.path, lay.class_name)
)
_kv_head_fallback = _layout_fact(
    kv_heads.KV_METHOD,
    lambda text, lay: kv_heads.kv_head_fallback(text, lay.path, lay.class_name),
)
_kv_head_overrides_fact = _layout_fact(kv_heads.KV_METHOD, _kv_head_overrides)


def _registry_rows(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="_VLLM_MODELS")
    rows, warnings = registry_rows(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


def _mamba_ssm_dtype_defaults(
    snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]
) -> FactOutput:
    path = snapshot.first_existing(model_config_defaults.PATHS, anchor="MODELS_CONFIG_MAP")
    rows, warnings = model_config_defaults.mamba_ssm_dtype_defaults(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


MODEL_DIRS = (
    "vllm/model_executor/models",
    "vllm/model_executor/models/transformers",
    "vllm/models",
)


def _reader(snapshot: Snapshot):
    """`path -> text or None` over the snapshot, for the class tree's on-demand module reads."""

    def read_text(path: str) -> str | None:
        return snapshot.read_text(path) if snapshot.exists(path) else None

    return read_text


CLASS_FLAG_READS = (*REGISTRY_PATHS, *MODEL_DIRS, *class_flags.WALK_READS)


def _model_class_flags(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows = done["registry_rows"]
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="_ModelInfo")
    records, _, warnings, _ = class_flags.model_class_flags(_reader(snapshot), path, rows)
    return FactOutput(tuple(records), tuple(warnings))


def _interface_flags(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="interfaces")
    return FactOutput(tuple(class_flags.interface_flags_at(_reader(snapshot), path)))


def _registry_notices(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="_PREVIOUSLY_SUPPORTED_MODELS")
    notices, warnings = registry_notices(snapshot.read_text(path), path)
    return FactOutput(tuple(notices), tuple(warnings))


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
        _reader(snapshot),
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
    "postfix terms, in source order.",
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
    "state tensors it returns (dims, or dtype, as postfix terms over the parameters).",
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


MLA_MODEL_TYPES = FactKind(
    "mla_model_types",
    "MLA model types",
    MlaModelType,
    "model_type values is_deepseek_mla() treats as MLA; eagle_inner rows are checked against "
    "an EAGLE module's inner model.",
)
MLA_GATES = FactKind(
    "mla_gates",
    "MLA gates",
    MlaGate,
    "what a listed model_type must also have to be MLA; when the gate fails vLLM uses "
    "full attention.",
)
KV_HEAD_ALIASES = FactKind(
    "kv_head_aliases",
    "KV-head alias scan",
    KvHeadAlias,
    "config keys get_total_num_kv_heads() tries in order; the first present key wins.",
    ordered=True,
)
KV_HEAD_FALLBACK = FactKind(
    "kv_head_fallback",
    "KV-head fallback",
    KvHeadFallback,
    "the value used when no alias key is present: vLLM silently assumes MHA.",
)
KV_HEAD_OVERRIDES = FactKind(
    "kv_head_overrides",
    "KV-head overrides",
    KvHeadOverride,
    "per-model_type rules that replace or precede the alias scan; '*' applies to every "
    "model type except `excludes`.",
)
REGISTRY_ROWS = FactKind(
    "registry_rows",
    "Registry rows",
    RegistryRow,
    "every HF architecture vLLM registers, with module, class, task group and section.",
    support=SupportScan("architecture", "registry"),
)
DOCS_TABLE_ROWS = FactKind(
    "docs_table_rows",
    "Supported-model docs tables",
    VllmDocsRow,
    "every row of the tables with an Architecture column in docs/models/supported_models.md and "
    "the pooling pages, with the heading path it sits under, example HF ids and feature marks.",
    support=SupportScan("architectures", "documented"),
)
DOCS_REGISTRY_FINDINGS = FactKind(
    "docs_registry_findings",
    "Documented vs registered",
    DocRegistryFinding,
    "architectures the docs tables name that the registry lacks, registered architectures no "
    "docs table names, and names the docs spell differently (case or punctuation).",
    support=SupportScan("architecture", "finding"),
)

MAMBA_SSM_DTYPE_DEFAULTS = FactKind(
    "mamba_ssm_dtype_defaults",
    "SSM cache dtype defaults",
    MambaSsmDtypeDefault,
    "architectures whose MODELS_CONFIG_MAP hook sets --mamba-ssm-cache-dtype when it is 'auto': "
    "the config field read and the literal used when the field is absent.",
)
MODEL_CLASS_FLAGS = FactKind(
    class_flags.FACT,
    "Model-class flags",
    ModelClassFlags,
    "what _ModelInfo.from_model_cls computes for each registered architecture's class, "
    "evaluated statically through imports, adapters, decorators and the MRO; empty = unknown "
    "(see the warnings).",
    page_omit=("class_mro", "resolved_class"),
)
INTERFACE_FLAGS = FactKind(
    class_flags.INTERFACE_FACT,
    "Interface flags",
    InterfaceFlag,
    "the ClassVar flags each interface class of interfaces.py / interfaces_base.py sets; a "
    "model class inherits them through its MRO.",
)
REGISTRY_NOTICES = FactKind(
    "registry_notices",
    "Previously supported and out-of-tree architectures",
    RegistryNotice,
    "_PREVIOUSLY_SUPPORTED_MODELS (the last version that served it) and _OOT_SUPPORTED_MODELS "
    "(the plugin that serves it).",
)

ATTN_TYPE_RULE = FactKind(
    attn_type_rule.FACT,
    "Attention type rule",
    AttnTypeRule,
    "ModelConfig.attn_type: a pooling run is encoder-only (no KV cache) for the listed default "
    "sequence pooling types or a false causal key; otherwise the class's attn_type.",
)

ENGINE = EngineSpec(
    engine_id="vllm",
    title="vLLM",
    upstream_url="https://github.com/vllm-project/vllm",
    release_tags=r"v\d+\.\d+\.\d+",
    support_facts=("mla_model_types", "model_class_flags", "attn_type_rule", "registry_notices"),
    facts=(
        FactExtractor(MLA_MODEL_TYPES, _mla_model_types, reads=CONVERTOR_READS),
        FactExtractor(MLA_GATES, _mla_gates, reads=CONVERTOR_READS),
        FactExtractor(KV_HEAD_ALIASES, _kv_head_aliases, reads=CONVERTOR_READS),
        FactExtractor(KV_HEAD_FALLBACK, _kv_head_fallback, reads=CONVERTOR_READS),
        FactExtractor(KV_HEAD_OVERRIDES, _kv_head_overrides_fact, reads=CONVERTOR_READS),
        FactExtractor(REGISTRY_ROWS, _registry_rows, reads=REGISTRY_PATHS),
        FactExtractor(DOCS_TABLE_ROWS, docs_tables.docs_table_rows, reads=docs_tables.READS),
        FactExtractor(
            DOCS_REGISTRY_FINDINGS,
            docs_tables.docs_findings,
            needs=("docs_table_rows", "registry_rows"),
            allow_empty=True,
        ),
        FactExtractor(
            MAMBA_SSM_DTYPE_DEFAULTS,
            _mamba_ssm_dtype_defaults,
            reads=model_config_defaults.PATHS,
            allow_empty=True,
        ),
        FactExtractor(
            MODEL_CLASS_FLAGS, _model_class_flags, reads=CLASS_FLAG_READS, needs=("registry_rows",)
        ),
        FactExtractor(INTERFACE_FLAGS, _interface_flags, reads=CLASS_FLAG_READS),
        FactExtractor(REGISTRY_NOTICES, _registry_notices, reads=REGISTRY_PATHS, allow_empty=True),
        FactExtractor(
            ATTN_TYPE_RULE, _attn_type_rule, reads=attn_type_rule.CONFIG_PATHS, allow_empty=True
        ),
        FactExtractor(
            SERVING_DEFAULTS,
            _serving_defaults,
            reads=(*serving_rules.CACHE_PATHS, *serving_rules.CUDA_PLATFORM_PATHS),
        ),
        FactExtractor(
            TP_RULES,
            _tp_rules,
            reads=(
                *serving_rules.MODEL_CONFIG_PATHS,
                serving_rules.CONVERTOR_PATH,
                *serving_rules.LINEAR_PATHS,
            ),
        ),
        FactExtractor(
            ATTENTION_BACKENDS,
            _attention_backends,
            reads=attention_backends.READS,
            needs=("serving_defaults",),
            allow_empty=True,
        ),
        FactExtractor(
            SSM_TP_SPLITS, _ssm_tp_splits, reads=serving_rules.MAMBA_PATHS, allow_empty=True
        ),
        FactExtractor(
            MAMBA_STATE_CALCULATORS,
            state_shapes.calculators_fact,
            reads=state_shapes.CALCULATOR_PATHS,
            allow_empty=True,
        ),
        FactExtractor(
            MAMBA_STATE_HOOKS,
            state_shapes.hooks_fact,
            reads=(state_shapes.MODELS_DIR,),
            needs=(state_shapes.CALCULATORS_FACT,),
            allow_empty=True,
        ),
        FactExtractor(
            KV_DTYPE_LITERALS,
            kv_dtype_rules.kv_dtype_literals,
            reads=kv_dtype_rules.READS,
            allow_empty=True,
        ),
        FactExtractor(
            OPTION_LITERALS, _option_literals, reads=option_literals.READS, allow_empty=True
        ),
        FactExtractor(
            KV_SIZING_PATHS,
            sizing_rules.kv_sizing_paths,
            reads=sizing_rules.READS,
            allow_empty=True,
        ),
        FactExtractor(
            INDEXER_LAYER_RULES,
            index_cache.indexer_layer_rules,
            reads=index_cache.PATHS,
            allow_empty=True,
        ),
        FactExtractor(
            HYBRID_PAGE_RULES,
            _hybrid_page_rules,
            reads=tuple(p for p, _, _ in serving_rules.HYBRID_LAYOUTS),
            allow_empty=True,
        ),
    ),
)
