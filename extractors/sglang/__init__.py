"""SGLang: registry rows (EntryClass), the MLA attention chain, supported-model docs tables."""

from __future__ import annotations

from collections.abc import Mapping

from extractors.base import EngineSpec, FactExtractor, FactOutput
from extractors.doc_findings import DocRegistryFinding
from extractors.errors import MissingPathError
from extractors.records import ExtractionWarning, FactKind, Record, SupportScan
from extractors.sglang import attention_chain, docs_tables, matrix_cells
from extractors.sglang.records import (
    SglangDocsRow,
    SglangExplicitMha,
    SglangMlaArchitecture,
    SglangMlaCondition,
    SglangRegistryRow,
)
from extractors.sglang.registry_rows import models_registry
from extractors.snapshot import Snapshot

MODELS_DIRS = ("python/sglang/srt/models",)
MODEL_CONFIG_PATHS = ("python/sglang/srt/configs/model_config.py",)
SKIPPED_MODULES = ("__init__.py", "registry.py")
MODELS_READS = tuple(f"{d}/*.py" for d in MODELS_DIRS)


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

ENGINE = EngineSpec(
    engine_id="sglang",
    title="SGLang",
    upstream_url="https://github.com/sgl-project/sglang",
    matrix_cells=matrix_cells.matrix_cells,
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
        FactExtractor(DOCS_TABLE_ROWS, docs_tables.docs_table_rows, reads=docs_tables.READS),
        FactExtractor(
            DOCS_REGISTRY_FINDINGS,
            docs_tables.docs_findings,
            needs=("docs_table_rows", "registry_rows"),
            allow_empty=True,
        ),
    ),
)
