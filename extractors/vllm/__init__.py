"""vLLM: MLA model types and gates, the KV-head alias scan and overrides, registry rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from extractors.base import EngineSpec, FactExtractor, FactOutput
from extractors.doc_findings import DocRegistryFinding
from extractors.records import FactKind, Record, SupportScan
from extractors.snapshot import Snapshot
from extractors.vllm import convertor, docs_tables, matrix_cells, model_config_defaults
from extractors.vllm.records import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
    MambaSsmDtypeDefault,
    MlaGate,
    MlaModelType,
    RegistryRow,
    VllmDocsRow,
)
from extractors.vllm.registry_rows import registry_rows


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
    return convertor.kv_head_overrides_inline(text, layout.path, layout.class_name)


_mla_model_types = _layout_fact(
    convertor.MLA_METHOD,
    lambda text, lay: convertor.mla_model_types(text, lay.path, lay.class_name),
)
_mla_gates = _layout_fact(
    convertor.MLA_METHOD, lambda text, lay: convertor.mla_gates(text, lay.path, lay.class_name)
)
_kv_head_aliases = _layout_fact(
    convertor.KV_METHOD, lambda text, lay: convertor.kv_head_aliases(text, lay.path, lay.class_name)
)
_kv_head_fallback = _layout_fact(
    convertor.KV_METHOD,
    lambda text, lay: convertor.kv_head_fallback(text, lay.path, lay.class_name),
)
_kv_head_overrides_fact = _layout_fact(convertor.KV_METHOD, _kv_head_overrides)


def _registry_rows(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="_VLLM_MODELS")
    rows, warnings = registry_rows(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


def _mamba_ssm_dtype_defaults(
    snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]
) -> FactOutput:
    path = snapshot.first_existing(model_config_defaults.PATHS, anchor="MODELS_CONFIG_MAP")
    return FactOutput(
        tuple(model_config_defaults.mamba_ssm_dtype_defaults(snapshot.read_text(path), path))
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

ENGINE = EngineSpec(
    engine_id="vllm",
    title="vLLM",
    upstream_url="https://github.com/vllm-project/vllm",
    matrix_cells=matrix_cells.matrix_cells,
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
    ),
)
