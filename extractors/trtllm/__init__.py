"""TensorRT-LLM: registered architectures (@register_auto_model), the supported-models page
(architecture table and feature matrices with their footnotes), documented vs registered.

The registry of the engine's facts, in the order of its README; each fact, its kind and
the function that reads it live in the module named beside it."""

from __future__ import annotations

from apron.extractors.engine_api import EngineSpec
from apron.extractors.trtllm import docs_facts, registry_facts

ENGINE = EngineSpec(
    engine_id="trtllm",
    title="TensorRT-LLM",
    upstream_url="https://github.com/NVIDIA/TensorRT-LLM",
    release_tags=r"v\d+\.\d+\.\d+",
    support_facts=("feature_matrix",),
    facts=(
        registry_facts.REGISTRY_ROWS_FACT,
        docs_facts.SUPPORTED_MODELS_FACT,
        docs_facts.FEATURE_MATRIX_FACT,
        docs_facts.DOCS_REGISTRY_FINDINGS_FACT,
    ),
)
