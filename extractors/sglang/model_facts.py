"""SGLang's model facts: the registry rows, the docs tables against them, and what ModelConfig
and the hybrid-arch checks decide per architecture (MLA, architecture sets, config classes, KV
heads)."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.doc_findings import DocRegistryFinding
from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.errors import MissingPathError
from apron.extractors.records import ExtractionWarning, FactKind, Record, SupportScan, warning
from apron.extractors.serving.records import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
)
from apron.extractors.sglang import (
    architecture_sets,
    attention_chain,
    config_classes,
    config_rewrites,
    docs_tables,
    hybrid_configs,
    kv_heads,
)
from apron.extractors.sglang.records import (
    SglangArchitectureSet,
    SglangConfigAttribute,
    SglangConfigRewrite,
    SglangDocsRow,
    SglangExplicitMha,
    SglangHybridConfigClass,
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


def _config_rewrites(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(config_rewrites.PATHS, anchor="the config loader (get_config)")
    return FactOutput(tuple(config_rewrites.config_rewrites(snapshot.read_text(path), path)))


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
CONFIG_REWRITES = FactKind(
    config_rewrites.FACT,
    "Config rewrites by model_type",
    SglangConfigRewrite,
    "the attributes SGLang's config loader sets on a sub-configuration for the model_types an "
    "`if config.model_type in (...)` block names (Gemma 4: the full-attention global_* values "
    "onto the base names, the sliding-window ones onto swa_*), in order; a statement of "
    "another shape is a row not read.",
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

REGISTRY_ROWS_FACT = FactExtractor(REGISTRY_ROWS, _registry_rows, reads=MODELS_READS)

MLA_ARCHITECTURES_FACT = FactExtractor(
    MLA_ARCHITECTURES,
    _mla_architectures,
    reads=MODEL_CONFIG_PATHS,
    needs=("registry_rows",),
)

MLA_CONDITIONS_FACT = FactExtractor(
    MLA_CONDITIONS, _mla_conditions, reads=MODEL_CONFIG_PATHS, allow_empty=True
)

EXPLICIT_MHA_FACT = FactExtractor(
    EXPLICIT_MHA, _explicit_mha, reads=MODEL_CONFIG_PATHS, allow_empty=True
)

ARCHITECTURE_SETS_FACT = FactExtractor(
    ARCHITECTURE_SETS,
    _architecture_sets,
    reads=MODEL_CONFIG_PATHS,
    needs=("registry_rows",),
)

HYBRID_CONFIG_CLASSES_FACT = FactExtractor(
    HYBRID_CONFIG_CLASSES, _hybrid_config_classes, reads=HYBRID_CONFIG_READS
)

CONFIG_CLASS_ATTRIBUTES_FACT = FactExtractor(
    CONFIG_CLASS_ATTRIBUTES,
    _config_class_attributes,
    reads=(*config_classes.REGISTRY_PATHS, f"{CONFIGS_DIR}/*.py"),
    allow_empty=True,
)

CONFIG_REWRITES_FACT = FactExtractor(
    CONFIG_REWRITES, _config_rewrites, reads=config_rewrites.PATHS, allow_empty=True
)

KV_HEAD_ALIASES_FACT = FactExtractor(
    KV_HEAD_ALIASES, _kv_head_fact(kv_heads.kv_head_aliases), reads=MODEL_CONFIG_PATHS
)

KV_HEAD_FALLBACK_FACT = FactExtractor(
    KV_HEAD_FALLBACK, _kv_head_fact(kv_heads.kv_head_fallback), reads=MODEL_CONFIG_PATHS
)

KV_HEAD_OVERRIDES_FACT = FactExtractor(
    KV_HEAD_OVERRIDES,
    _kv_head_fact(kv_heads.kv_head_overrides),
    reads=MODEL_CONFIG_PATHS,
    allow_empty=True,
)

DOCS_TABLE_ROWS_FACT = FactExtractor(
    DOCS_TABLE_ROWS, docs_tables.docs_table_rows, reads=docs_tables.READS
)

DOCS_REGISTRY_FINDINGS_FACT = FactExtractor(
    DOCS_REGISTRY_FINDINGS,
    docs_tables.docs_findings,
    needs=("docs_table_rows", "registry_rows"),
    allow_empty=True,
)
