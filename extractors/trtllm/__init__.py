"""TensorRT-LLM: registered architectures (@register_auto_model), the supported-models page
(architecture table and feature matrices with their footnotes), documented vs registered."""

from __future__ import annotations

from collections.abc import Mapping

from extractors.base import EngineSpec, FactExtractor, FactOutput
from extractors.doc_findings import DocRegistryFinding, Documented, Registered, compare
from extractors.errors import MissingPathError
from extractors.parsing.markdown import parse_document
from extractors.records import FactKind, Record, SupportScan
from extractors.snapshot import Snapshot
from extractors.trtllm import docs_tables, matrix_cells
from extractors.trtllm.records import (
    TrtllmFeatureCell,
    TrtllmRegisteredArchitecture,
    TrtllmSupportedModel,
)
from extractors.trtllm.registry import registered_architectures

MODELS_DIRS = ("tensorrt_llm/_torch/models",)
MODULE_PREFIX = "modeling_"
SUPPORTED_PAGES = ("docs/source/models/supported-models.md",)
MODELS_READS = tuple(f"{d}/{MODULE_PREFIX}*.py" for d in MODELS_DIRS)


def _registry_rows(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    modules: list[str] = []
    for directory in MODELS_DIRS:
        modules = [
            p
            for p in snapshot.list_files(directory)
            if p.rsplit("/", 1)[-1].startswith(MODULE_PREFIX) and p.endswith(".py")
        ]
        if modules:
            break
    if not modules:
        raise MissingPathError(
            "no modeling_*.py module exists at this commit",
            engine=snapshot.engine,
            commit=snapshot.commit,
            paths=[f"{d}/{MODULE_PREFIX}*.py" for d in MODELS_DIRS],
            anchor="@register_auto_model",
        )
    rows, warnings = registered_architectures({p: snapshot.read_text(p) for p in modules})
    return FactOutput(tuple(rows), tuple(warnings))


def _page(snapshot: Snapshot):
    path = snapshot.first_existing(SUPPORTED_PAGES, anchor="supported-models page")
    return parse_document(snapshot.read_text(path), path)


def _supported_models(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows, warnings = docs_tables.architecture_table(_page(snapshot))
    return FactOutput(tuple(rows), tuple(warnings))


def _feature_matrix(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    cells, warnings = docs_tables.feature_matrices(_page(snapshot))
    return FactOutput(tuple(cells), tuple(warnings))


def _findings(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    documented = [
        Documented(
            name=r.architecture,
            where=f"{r.path} § {r.section}",
            note=" ".join(r.architecture_notes),
        )
        for r in needed[SUPPORTED_MODELS.name]
        if isinstance(r, TrtllmSupportedModel)
    ]
    documented += [
        Documented(name=c.architecture, where=f"{c.path} § {c.matrix}", note=" ".join(c.row_notes))
        for c in needed[FEATURE_MATRIX.name]
        if isinstance(c, TrtllmFeatureCell)
    ]
    registered = [
        Registered(name=r.architecture, where=f"{r.path}: {r.class_name}", group=r.module)
        for r in needed[REGISTRY_ROWS.name]
        if isinstance(r, TrtllmRegisteredArchitecture)
    ]
    return FactOutput(tuple(compare(documented, registered)))


REGISTRY_ROWS = FactKind(
    "registry_rows",
    "Registered architectures",
    TrtllmRegisteredArchitecture,
    "every string a @register_auto_model decorator registers in tensorrt_llm/_torch/models/"
    "modeling_*.py, with the decorated class (the two can differ).",
    support=SupportScan("architecture", "registry"),
)
SUPPORTED_MODELS = FactKind(
    "supported_models",
    "Supported models",
    TrtllmSupportedModel,
    "the architecture table of docs/source/models/supported-models.md, footnotes resolved to "
    "their text on the cell that references them.",
    support=SupportScan("architecture", "documented"),
)
FEATURE_MATRIX = FactKind(
    "feature_matrix",
    "Feature support matrices",
    TrtllmFeatureCell,
    "every cell of the model-feature matrices (Yes/No/Untested/N/A), with the footnotes of the "
    "cell and of the architecture name (hardware and backend constraints).",
    support=SupportScan("architecture", "matrix"),
)
DOCS_REGISTRY_FINDINGS = FactKind(
    "docs_registry_findings",
    "Documented vs registered",
    DocRegistryFinding,
    "architectures the page names that no decorator registers (the note keeps the footnote, "
    "e.g. 'Supported via the AutoDeploy backend'), registered strings the page does not name, "
    "and names spelled differently.",
    support=SupportScan("architecture", "finding"),
)

ENGINE = EngineSpec(
    engine_id="trtllm",
    title="TensorRT-LLM",
    upstream_url="https://github.com/NVIDIA/TensorRT-LLM",
    matrix_cells=matrix_cells.matrix_cells,
    facts=(
        FactExtractor(REGISTRY_ROWS, _registry_rows, reads=MODELS_READS),
        FactExtractor(SUPPORTED_MODELS, _supported_models, reads=SUPPORTED_PAGES),
        FactExtractor(FEATURE_MATRIX, _feature_matrix, reads=SUPPORTED_PAGES),
        FactExtractor(
            DOCS_REGISTRY_FINDINGS,
            _findings,
            needs=("registry_rows", "supported_models", "feature_matrix"),
            allow_empty=True,
        ),
    ),
)
