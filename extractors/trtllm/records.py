"""Record types of the TensorRT-LLM facts."""

from __future__ import annotations

from typing import ClassVar

from apron.extractors.records import Record


class TrtllmRegisteredArchitecture(Record):
    """An architecture string a `@register_auto_model("<Arch>")` decorator registers."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str  # the registered string
    class_name: str  # the decorated class; may differ (DeciLMForCausalLM on NemotronNASForCausalLM)
    module: str  # e.g. "modeling_nemotron_nas"
    also_in: tuple[str, ...]  # "<module>.<class>" of the other registrations of the same string
    resolved_by: str = ""  # how a string registered twice is resolved; "" when registered once
    component: str = ""  # "vision-encoder" for a vision tower registered like a model; else ""
    path: str


class TrtllmSupportedModel(Record):
    """One row of the supported-models architecture table (Architecture, Model, HF example)."""

    KEY: ClassVar[tuple[str, ...]] = ("section", "architecture")

    section: str
    architecture: str
    architecture_notes: tuple[str, ...]  # "[^5] <footnote text>" on the architecture cell
    model: str
    model_notes: tuple[str, ...]
    hf_examples: tuple[str, ...]
    example_notes: tuple[str, ...]  # footnotes written in the HuggingFace Example cell
    path: str


class TrtllmFeatureCell(Record):
    """One cell of a feature support matrix: an architecture, a feature, a status and its notes."""

    KEY: ClassVar[tuple[str, ...]] = ("matrix", "architecture", "feature")

    matrix: str  # the heading the matrix sits under
    architecture: str
    feature: str
    status: str  # yes, no, untested, n/a; "text" for descriptive columns (Modality); unknown
    raw: str  # the cell as written, footnote references removed
    notes: tuple[str, ...]  # "[^1] <footnote text>" written in this cell
    row_notes: tuple[str, ...]  # footnotes on the architecture name: they qualify the whole row
    path: str
