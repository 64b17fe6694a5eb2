"""vLLM's registry facts: the registry rows and notices, the docs tables against them, what each
registered class and interface sets, and the SSM cache dtype defaults of MODELS_CONFIG_MAP."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.doc_findings import DocRegistryFinding
from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.records import FactKind, Record, SupportScan
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm import (
    class_flags,
    docs_tables,
    model_config_defaults,
)
from apron.extractors.vllm.records import (
    InterfaceFlag,
    MambaSsmDtypeDefault,
    ModelClassFlags,
    RegistryNotice,
    RegistryRow,
    VllmDocsRow,
)
from apron.extractors.vllm.registry_notices import registry_notices
from apron.extractors.vllm.registry_rows import registry_rows

REGISTRY_PATHS = (
    "vllm/model_executor/models/registry.py",
    "vllm/models/registry.py",
)


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


def snapshot_reader(snapshot: Snapshot):
    """`path -> text or None` over the snapshot, for the class tree's on-demand module reads."""

    def read_text(path: str) -> str | None:
        return snapshot.read_text(path) if snapshot.exists(path) else None

    return read_text


CLASS_FLAG_READS = (*REGISTRY_PATHS, *MODEL_DIRS, *class_flags.WALK_READS)


def _model_class_flags(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows = done["registry_rows"]
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="_ModelInfo")
    records, _, warnings, _ = class_flags.model_class_flags(snapshot_reader(snapshot), path, rows)
    return FactOutput(tuple(records), tuple(warnings))


def _interface_flags(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="interfaces")
    return FactOutput(tuple(class_flags.interface_flags_at(snapshot_reader(snapshot), path)))


def _registry_notices(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing(REGISTRY_PATHS, anchor="_PREVIOUSLY_SUPPORTED_MODELS")
    notices, warnings = registry_notices(snapshot.read_text(path), path)
    return FactOutput(tuple(notices), tuple(warnings))


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

REGISTRY_ROWS_FACT = FactExtractor(REGISTRY_ROWS, _registry_rows, reads=REGISTRY_PATHS)

DOCS_TABLE_ROWS_FACT = FactExtractor(
    DOCS_TABLE_ROWS, docs_tables.docs_table_rows, reads=docs_tables.READS
)

DOCS_REGISTRY_FINDINGS_FACT = FactExtractor(
    DOCS_REGISTRY_FINDINGS,
    docs_tables.docs_findings,
    needs=("docs_table_rows", "registry_rows"),
    allow_empty=True,
)

MAMBA_SSM_DTYPE_DEFAULTS_FACT = FactExtractor(
    MAMBA_SSM_DTYPE_DEFAULTS,
    _mamba_ssm_dtype_defaults,
    reads=model_config_defaults.PATHS,
    allow_empty=True,
)

MODEL_CLASS_FLAGS_FACT = FactExtractor(
    MODEL_CLASS_FLAGS, _model_class_flags, reads=CLASS_FLAG_READS, needs=("registry_rows",)
)

INTERFACE_FLAGS_FACT = FactExtractor(INTERFACE_FLAGS, _interface_flags, reads=CLASS_FLAG_READS)

REGISTRY_NOTICES_FACT = FactExtractor(
    REGISTRY_NOTICES, _registry_notices, reads=REGISTRY_PATHS, allow_empty=True
)
