"""TensorRT-LLM's registry fact: every architecture a @register_auto_model decorator registers in
the PyTorch backend's modeling_*.py modules."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.errors import MissingPathError
from apron.extractors.records import FactKind, Record, SupportScan
from apron.extractors.snapshot import Snapshot
from apron.extractors.trtllm.records import (
    TrtllmRegisteredArchitecture,
)
from apron.extractors.trtllm.registry import arch_index, import_order, registered_architectures

MODELS_DIRS = ("tensorrt_llm/_torch/models",)
MODULE_PREFIX = "modeling_"
ARCH_INDEX_FILE = "_arch_index.py"
PACKAGE_INIT = "__init__.py"


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


REGISTRY_ROWS = FactKind(
    "registry_rows",
    "Registered architectures",
    TrtllmRegisteredArchitecture,
    "every string a @register_auto_model decorator registers in tensorrt_llm/_torch/models/"
    "modeling_*.py, with the decorated class (the two can differ).",
    support=SupportScan("architecture", "registry"),
)

REGISTRY_ROWS_FACT = FactExtractor(REGISTRY_ROWS, _registry_rows, reads=REGISTRY_READS)
