"""TensorRT-LLM's docs facts: the supported-models page (architecture table, feature matrices
with their footnotes) and what it says against the registry."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.doc_findings import (
    OTHER_SPELLING,
    REGISTERED_NOT_DOCUMENTED,
    DocRegistryFinding,
    Documented,
    Registered,
    compare,
)
from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.parsing.markdown import parse_document
from apron.extractors.records import FactKind, Record, SupportScan
from apron.extractors.snapshot import Snapshot
from apron.extractors.trtllm import docs_tables
from apron.extractors.trtllm.records import (
    TrtllmFeatureCell,
    TrtllmRegisteredArchitecture,
    TrtllmSupportedModel,
)
from apron.extractors.trtllm.registry_facts import REGISTRY_ROWS

SUPPORTED_PAGES = ("docs/source/models/supported-models.md",)


def _page(snapshot: Snapshot):
    path = snapshot.first_existing(SUPPORTED_PAGES, anchor="supported-models page")
    return parse_document(snapshot.read_text(path), path)


def _supported_models(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows, warnings = docs_tables.architecture_table(_page(snapshot))
    return FactOutput(tuple(rows), tuple(warnings))


def _feature_matrix(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    cells, warnings = docs_tables.feature_matrices(_page(snapshot))
    return FactOutput(tuple(cells), tuple(warnings))


AUTODEPLOY_ONLY = "documented-autodeploy-only-registered"


def _autodeploy_only(notes: tuple[str, ...]) -> str:
    """The footnote that says a row runs only through AutoDeploy ("Supported via the AutoDeploy
    backend"; not "Also supports ... via AutoDeploy"), else ""."""
    for note in notes:
        if "autodeploy" in note.casefold() and "also" not in note.casefold():
            return note
    return ""


def _findings(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    models = [r for r in needed[SUPPORTED_MODELS.name] if isinstance(r, TrtllmSupportedModel)]
    documented = [
        Documented(
            name=r.architecture,
            where=f"{r.path} § {r.section}",
            note=" ".join(r.architecture_notes),
        )
        for r in models
    ]
    documented += [
        Documented(name=c.architecture, where=f"{c.path} § {c.matrix}", note=" ".join(c.row_notes))
        for c in needed[FEATURE_MATRIX.name]
        if isinstance(c, TrtllmFeatureCell)
    ]
    rows = [r for r in needed[REGISTRY_ROWS.name] if isinstance(r, TrtllmRegisteredArchitecture)]
    registered = [
        Registered(
            name=r.architecture,
            where=f"{r.path}: {r.class_name}",
            group=r.module,
            class_name=r.class_name,
        )
        for r in rows
    ]
    findings = compare(documented, registered, spelling_variants=True)
    encoders = {r.architecture for r in rows if r.component == "vision-encoder"}
    findings = [
        f
        for f in findings
        if not (f.finding == REGISTERED_NOT_DOCUMENTED and f.architecture in encoders)
    ]
    by_name = {r.architecture: r for r in rows}
    paired = {f.architecture: f.registered_as for f in findings if f.finding == OTHER_SPELLING}
    flagged: set[str] = set()
    for model in models:
        footnote = _autodeploy_only(model.architecture_notes)
        names = (model.architecture,) if model.architecture in by_name else ()
        names = names or paired.get(model.architecture, ())
        if not footnote or not names or model.architecture in flagged:
            continue
        flagged.add(model.architecture)
        where = [f"{by_name[n].path}: {by_name[n].class_name}" for n in names if n in by_name]
        findings.append(
            DocRegistryFinding(
                finding=AUTODEPLOY_ONLY,
                architecture=model.architecture,
                registered_as=tuple(names),
                match="exact-name" if names == (model.architecture,) else "paired-spelling",
                documented_in=(f"{model.path} § {model.section}",),
                registered_in=tuple(sorted(where)),
                note=f"the page footnotes it as AutoDeploy only ({footnote}), but the PyTorch "
                f"backend registers {', '.join(names)}",
            )
        )
    return FactOutput(tuple(findings))


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
    "e.g. 'Supported via the AutoDeploy backend'), registered strings the page does not name "
    "(vision encoders registered like models left out), names spelled differently (case, the "
    "class name of a registration, a version token), and rows footnoted AutoDeploy-only that "
    "the PyTorch backend registers.",
    support=SupportScan("architecture", "finding"),
)

SUPPORTED_MODELS_FACT = FactExtractor(SUPPORTED_MODELS, _supported_models, reads=SUPPORTED_PAGES)

FEATURE_MATRIX_FACT = FactExtractor(FEATURE_MATRIX, _feature_matrix, reads=SUPPORTED_PAGES)

DOCS_REGISTRY_FINDINGS_FACT = FactExtractor(
    DOCS_REGISTRY_FINDINGS,
    _findings,
    needs=("registry_rows", "supported_models", "feature_matrix"),
    allow_empty=True,
)
