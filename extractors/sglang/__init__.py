"""SGLang: registry rows (EntryClass), the MLA attention chain, the architecture sets and KV-head
rule of model_config.py, the hybrid-arch config classes, supported-model docs tables."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.errors import MissingPathError
from apron.extractors.records import ExtractionWarning, FactKind, Record, SupportScan, warning
from apron.extractors.report.doc_findings import DocRegistryFinding
from apron.extractors.runner.base import EngineSpec, FactExtractor, FactOutput
from apron.extractors.serving.records import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
    ServingDefault,
    SsmTpSplit,
    TpRule,
)
from apron.extractors.sglang import (
    architecture_sets,
    arg_overrides,
    attention_chain,
    config_classes,
    context_length,
    docs_tables,
    families,
    hybrid_configs,
    kv_dtype_sets,
    kv_heads,
    matrix_cells,
    memory_fraction,
    prefill_graph,
    serving_defaults,
    serving_rules,
)
from apron.extractors.sglang.records import (
    SglangArchitectureSet,
    SglangArgOverride,
    SglangConfigAttribute,
    SglangDocsRow,
    SglangExplicitMha,
    SglangHybridConfigClass,
    SglangMemoryStep,
    SglangMlaArchitecture,
    SglangMlaCondition,
    SglangRegistryRow,
)
from apron.extractors.sglang.registry_rows import models_registry
from apron.extractors.snapshot import Snapshot

MODELS_DIRS = ("python/sglang/srt/models",)
MODEL_CONFIG_PATHS = ("python/sglang/srt/configs/model_config.py",)
CONFIGS_DIR = "python/sglang/srt/configs"
HYBRID_ARCH_PATHS = (f"{CONFIGS_DIR}/hybrid_arch.py",)
MODEL_RUNNER_PATH = "python/sglang/srt/model_executor/model_runner.py"
HYBRID_ARCH_CLASS = "ModelRunner"
SKIPPED_MODULES = ("__init__.py", "registry.py")
MODELS_READS = tuple(f"{d}/*.py" for d in MODELS_DIRS)
HYBRID_CONFIG_READS = (*HYBRID_ARCH_PATHS, MODEL_RUNNER_PATH, f"{CONFIGS_DIR}/*.py", *MODELS_READS)


def _registry_rows(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    modules: list[str] = []
    for candidate in MODELS_DIRS:
        modules = [
            p
            for p in snapshot.list_files(candidate)
            if p.endswith(".py") and p.rsplit("/", 1)[-1] not in SKIPPED_MODULES
        ]
        if modules:
            break
    if not modules:
        raise MissingPathError(
            "no models package with Python modules exists at this commit",
            engine=snapshot.engine,
            commit=snapshot.commit,
            paths=[f"{d}/*.py" for d in MODELS_DIRS],
            anchor="EntryClass",
        )
    texts = {path: snapshot.read_text(path) for path in modules}
    rows, warnings = models_registry(
        texts, lambda path: snapshot.read_text(path) if snapshot.exists(path) else None
    )
    return FactOutput(tuple(rows), tuple(warnings))


def _chain(snapshot: Snapshot) -> attention_chain.ChainFacts:
    path = snapshot.first_existing(MODEL_CONFIG_PATHS, anchor="ModelConfig attention_arch chain")
    return attention_chain.attention_chain(snapshot.read_text(path), path)


def _unregistered(
    chain_archs: list[str], needed: Mapping[str, tuple[Record, ...]], path: str, symbol: str
) -> list[ExtractionWarning]:
    registered = {
        r.architecture for r in needed["registry_rows"] if isinstance(r, SglangRegistryRow)
    }
    return [
        ExtractionWarning(
            code="not-registered",
            subject=arch,
            message=f"the attention chain names {arch}, which no models module registers",
            path=path,
            symbol=symbol,
        )
        for arch in chain_archs
        if arch not in registered
    ]


def _mla_architectures(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    chain = _chain(snapshot)
    symbol = chain.mla[0].symbol
    archs = [r.architecture for r in chain.mla] + [r.architecture for r in chain.explicit_mha]
    warnings = chain.warnings + _unregistered(archs, needed, chain.mla[0].path, symbol)
    return FactOutput(tuple(chain.mla), tuple(warnings))


def _mla_conditions(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    return FactOutput(tuple(_chain(snapshot).conditions))


def _explicit_mha(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    return FactOutput(tuple(_chain(snapshot).explicit_mha))


def _model_config(snapshot: Snapshot, anchor: str) -> tuple[str, str]:
    path = snapshot.first_existing(MODEL_CONFIG_PATHS, anchor=anchor)
    return snapshot.read_text(path), path


def _architecture_sets(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    text, path = _model_config(snapshot, "is_hybrid_swa_model and the other is_* sets")
    rows, warnings = architecture_sets.architecture_sets(text, path)
    registered = {
        r.architecture for r in needed["registry_rows"] if isinstance(r, SglangRegistryRow)
    }
    sets_naming: dict[str, list[str]] = {}
    for row in rows:
        if row.architecture != "*" and row.architecture not in registered:
            sets_naming.setdefault(row.architecture, []).append(row.set_name)
    warnings += [
        warning(
            "set-member-not-registered",
            arch,
            f"{', '.join(sorted(names))} name{'s' if len(names) == 1 else ''} {arch}, which no "
            "models module registers",
            path,
            sorted(names)[0],
        )
        for arch, names in sorted(sets_naming.items())
    ]
    return FactOutput(tuple(rows), tuple(warnings))


def _hybrid_config_classes(
    snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]
) -> FactOutput:
    path = snapshot.first_existing(
        (*HYBRID_ARCH_PATHS, MODEL_RUNNER_PATH), anchor="hybrid-arch config-class checks"
    )
    class_name = HYBRID_ARCH_CLASS if path == MODEL_RUNNER_PATH else None
    configs = hybrid_configs.config_module_paths(snapshot.list_files(CONFIGS_DIR), CONFIGS_DIR)
    models = [p for d in MODELS_DIRS for p in snapshot.list_files(d) if p.endswith(".py")]
    rows, warnings = hybrid_configs.hybrid_config_classes(
        snapshot.read_text(path),
        path,
        {p: snapshot.read_text(p) for p in configs},
        {p: snapshot.read_text(p) for p in models},
        class_name,
    )
    return FactOutput(tuple(rows), tuple(warnings))


def _config_class_attributes(
    snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]
) -> FactOutput:
    found = [p for p in config_classes.REGISTRY_PATHS if snapshot.exists(p)]
    if not found:  # no _CONFIG_REGISTRY module at this commit: SGLang registers no class
        return FactOutput(())
    registry = found[0]
    configs = hybrid_configs.config_module_paths(snapshot.list_files(CONFIGS_DIR), CONFIGS_DIR)
    rows = config_classes.config_class_attributes(
        {p: snapshot.read_text(p) for p in configs}, snapshot.read_text(registry), registry
    )
    return FactOutput(tuple(rows))


def _kv_head_fact(extract):
    def run(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        text, path = _model_config(snapshot, "ModelConfig.get_total_num_kv_heads")
        return FactOutput(tuple(extract(text, path)))

    return run


REGISTRY_ROWS = FactKind(
    "registry_rows",
    "Registry rows",
    SglangRegistryRow,
    "every architecture SGLang registers: the class each models module names in EntryClass, "
    "resolved through aliases and imports; the architecture is the class's name.",
    support=SupportScan("architecture", "registry"),
)
MLA_ARCHITECTURES = FactKind(
    "mla_architectures",
    "MLA architectures",
    SglangMlaArchitecture,
    "architectures the ModelConfig if/elif chain sets to AttentionArch.MLA; `conditional` rows "
    "also need the conditions in mla_conditions.",
)
MLA_CONDITIONS = FactKind(
    "mla_conditions",
    "MLA conditions",
    SglangMlaCondition,
    "extra conditions of an MLA branch, structured: config object, field, check, getattr default.",
)
EXPLICIT_MHA = FactKind(
    "explicit_mha_architectures",
    "Explicit MHA architectures",
    SglangExplicitMha,
    "architectures an elif branch explicitly sets to AttentionArch.MHA, with the latent-attention "
    "fields the branch still reads (non-empty: another engine may treat the model as MLA).",
)
ARCHITECTURE_SETS = FactKind(
    architecture_sets.FACT,
    "Architecture sets",
    SglangArchitectureSet,
    "every architecture name an `is_*` function or a ModelConfig attribute of model_config.py "
    "tests, by set (function or attribute name); *SPREAD constants resolved (`via`), "
    "`member_returns` False where the set lists exceptions (non-generation models, chunked "
    "prefill unsupported), extra conditions structured; '*' = any architecture whose config "
    "meets the condition. Per-architecture if/elif chains (MLA: mla_architectures; "
    "_config_draft_model, get_hybrid_layer_ids) are not sets and not listed here.",
)
HYBRID_CONFIG_CLASSES = FactKind(
    hybrid_configs.FACT,
    "Hybrid config classes",
    SglangHybridConfigClass,
    "config classes the functions of configs/hybrid_arch.py accept by isinstance (subclasses in "
    "configs/ included, with their model_type); `mambaish_config` is the union that selects the "
    "Mamba / linear-attention state pool. Classes registered at run time in "
    "_LINEAR_ATTN_MODEL_REGISTRY are not statically known (a warning).",
)
CONFIG_CLASS_ATTRIBUTES = FactKind(
    config_classes.FACT,
    "Config class attributes",
    SglangConfigAttribute,
    "what SGLang's own configuration classes (configs/*.py; registered ones are what AutoConfig "
    "builds) set each attribute from in __init__: a keyword argument and its default, a "
    "sub-configuration class built from a dict argument, or code not read.",
)
KV_HEAD_ALIASES = FactKind(
    kv_heads.ALIASES,
    "KV-head alias scan",
    KvHeadAlias,
    "config keys ModelConfig.get_total_num_kv_heads() tries on hf_text_config in order; the "
    "first present (non-None) key wins.",
    ordered=True,
)
KV_HEAD_FALLBACK = FactKind(
    kv_heads.FALLBACK,
    "KV-head fallback",
    KvHeadFallback,
    "the value used when no alias key is present: SGLang silently assumes MHA.",
)
KV_HEAD_OVERRIDES = FactKind(
    kv_heads.OVERRIDES,
    "KV-head overrides",
    KvHeadOverride,
    "the rules before the alias scan, keyed on hf_config.model_type ('*' = every model type "
    "except `excludes`), in the order the method tries them.",
)
DOCS_TABLE_ROWS = FactKind(
    "docs_table_rows",
    "Supported-model docs tables",
    SglangDocsRow,
    "every row of the model-family tables on the supported-models pages (.md 2025 or .mdx 2026 "
    "layout), with its heading path, example HF ids and any architecture names it writes; the "
    "Description column is not kept.",
    support=SupportScan("architectures", "documented"),
)
DOCS_REGISTRY_FINDINGS = FactKind(
    "docs_registry_findings",
    "Documented vs registered",
    DocRegistryFinding,
    "architecture names the docs write that no module registers (or spell differently), family "
    "rows no registered architecture matches, registered architectures no row covers; family "
    "coverage is a normalized-prefix heuristic (match = family-prefix).",
    support=SupportScan("architecture", "finding"),
)

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


ENGINE = EngineSpec(
    engine_id="sglang",
    title="SGLang",
    upstream_url="https://github.com/sgl-project/sglang",
    matrix_cells=matrix_cells.matrix_cells,
    mla_decided_by="architecture",
    mla_verdicts=matrix_cells.mla_verdicts,
    families=families.sglang_families,
    family_rules=families.SGLANG_RULES,
    release_tags=r"v\d+\.\d+\.\d+(\.post\d+)?",
    support_facts=("mla_architectures", "explicit_mha_architectures", "architecture_sets"),
    calculator_facts=(
        "mla_architectures",
        "mla_conditions",
        "explicit_mha_architectures",
        "architecture_sets",
        "hybrid_config_classes",
        "config_class_attributes",
        "kv_head_aliases",
        "kv_head_fallback",
        "kv_head_overrides",
        "serving_defaults",
        "tp_rules",
        "ssm_tp_splits",
        "memory_fraction_steps",
        "kv_dtype_sets",
        "context_length_rules",
        "prefill_graph_rules",
        "arg_overrides",
    ),
    facts=(
        FactExtractor(REGISTRY_ROWS, _registry_rows, reads=MODELS_READS),
        FactExtractor(
            MLA_ARCHITECTURES,
            _mla_architectures,
            reads=MODEL_CONFIG_PATHS,
            needs=("registry_rows",),
        ),
        FactExtractor(MLA_CONDITIONS, _mla_conditions, reads=MODEL_CONFIG_PATHS, allow_empty=True),
        FactExtractor(EXPLICIT_MHA, _explicit_mha, reads=MODEL_CONFIG_PATHS, allow_empty=True),
        FactExtractor(
            ARCHITECTURE_SETS,
            _architecture_sets,
            reads=MODEL_CONFIG_PATHS,
            needs=("registry_rows",),
        ),
        FactExtractor(HYBRID_CONFIG_CLASSES, _hybrid_config_classes, reads=HYBRID_CONFIG_READS),
        FactExtractor(
            CONFIG_CLASS_ATTRIBUTES,
            _config_class_attributes,
            reads=(*config_classes.REGISTRY_PATHS, f"{CONFIGS_DIR}/*.py"),
            allow_empty=True,
        ),
        FactExtractor(
            KV_HEAD_ALIASES, _kv_head_fact(kv_heads.kv_head_aliases), reads=MODEL_CONFIG_PATHS
        ),
        FactExtractor(
            KV_HEAD_FALLBACK, _kv_head_fact(kv_heads.kv_head_fallback), reads=MODEL_CONFIG_PATHS
        ),
        FactExtractor(
            KV_HEAD_OVERRIDES,
            _kv_head_fact(kv_heads.kv_head_overrides),
            reads=MODEL_CONFIG_PATHS,
            allow_empty=True,
        ),
        FactExtractor(DOCS_TABLE_ROWS, docs_tables.docs_table_rows, reads=docs_tables.READS),
        FactExtractor(
            DOCS_REGISTRY_FINDINGS,
            docs_tables.docs_findings,
            needs=("docs_table_rows", "registry_rows"),
            allow_empty=True,
        ),
        FactExtractor(
            SERVING_DEFAULTS,
            _serving_defaults,
            reads=(*serving_defaults.SERVER_ARGS_PATHS, *OVERRIDES_PATHS),
        ),
        FactExtractor(
            TP_RULES,
            _tp_rules,
            reads=(*MODEL_CONFIG_PATHS, *serving_rules.POOL_PATHS, *serving_rules.LLAMA_PATHS),
        ),
        FactExtractor(SSM_TP_SPLITS, _ssm_tp_splits, reads=serving_rules.MAMBA_PATHS),
        FactExtractor(
            MEMORY_FRACTION_STEPS,
            _memory_fraction_steps,
            reads=serving_defaults.SERVER_ARGS_PATHS,
        ),
        FactExtractor(
            ARG_OVERRIDES,
            _arg_overrides,
            reads=arg_overrides.OVERRIDES_PATHS,
            allow_empty=True,
        ),
        FactExtractor(
            PREFILL_GRAPH_RULES,
            prefill_graph.prefill_graph_fact,
            reads=serving_defaults.SERVER_ARGS_PATHS,
        ),
        FactExtractor(
            CONTEXT_LENGTH_RULES,
            context_length.context_length_fact,
            reads=context_length.PATHS,
        ),
        FactExtractor(
            KV_DTYPE_SETS,
            kv_dtype_sets.kv_dtype_sets,
            reads=kv_dtype_sets.OVERRIDES_PATHS,
            allow_empty=True,
        ),
    ),
)
