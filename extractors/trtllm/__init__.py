"""TensorRT-LLM: registered architectures (@register_auto_model), the supported-models page
(architecture table and feature matrices with their footnotes), documented vs registered."""

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
from apron.extractors.engine_api import EngineSpec, FactExtractor, FactOutput
from apron.extractors.errors import MissingPathError
from apron.extractors.parsing.markdown import parse_document
from apron.extractors.records import FactKind, Record, SupportScan
from apron.extractors.snapshot import Snapshot
from apron.extractors.trtllm import docs_tables
from apron.extractors.trtllm.records import (
    TrtllmFeatureCell,
    TrtllmRegisteredArchitecture,
    TrtllmSupportedModel,
)
from apron.extractors.trtllm.registry import arch_index, import_order, registered_architectures

MODELS_DIRS = ("tensorrt_llm/_torch/models",)
MODULE_PREFIX = "modeling_"
ARCH_INDEX_FILE = "_arch_index.py"
PACKAGE_INIT = "__init__.py"
SUPPORTED_PAGES = ("docs/source/models/supported-models.md",)
MODELS_READS = tuple(f"{d}/{MODULE_PREFIX}*.py" for d in MODELS_DIRS)
REGISTRY_READS = (
    *MODELS_READS,
    *(f"{d}/{ARCH_INDEX_FILE}" for d in MODELS_DIRS),
    *(f"{d}/{PACKAGE_INIT}" for d in MODELS_DIRS),
)


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
    directory = modules[0].rsplit("/", 1)[0]
    index_path, init_path = f"{directory}/{ARCH_INDEX_FILE}", f"{directory}/{PACKAGE_INIT}"
    index = (
        arch_index(snapshot.read_text(index_path), index_path)
        if snapshot.exists(index_path)
        else None
    )
    order = (
        import_order(snapshot.read_text(init_path), init_path) if snapshot.exists(init_path) else []
    )
    rows, warnings = registered_architectures(
        {p: snapshot.read_text(p) for p in modules}, index=index, index_path=index_path, order=order
    )
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
    "e.g. 'Supported via the AutoDeploy backend'), registered strings the page does not name "
    "(vision encoders registered like models left out), names spelled differently (case, the "
    "class name of a registration, a version token), and rows footnoted AutoDeploy-only that "
    "the PyTorch backend registers.",
    support=SupportScan("architecture", "finding"),
)

ENGINE = EngineSpec(
    engine_id="trtllm",
    title="TensorRT-LLM",
    upstream_url="https://github.com/NVIDIA/TensorRT-LLM",
    release_tags=r"v\d+\.\d+\.\d+",
    support_facts=("feature_matrix",),
    facts=(
        FactExtractor(REGISTRY_ROWS, _registry_rows, reads=REGISTRY_READS),
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
