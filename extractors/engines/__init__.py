"""The explicit list of engines: one module each, one line here."""

from __future__ import annotations

from apron.extractors.engine_api import EngineSpec
from apron.extractors.errors import UsageError
from apron.extractors.llamacpp import ENGINE as LLAMACPP
from apron.extractors.sglang import ENGINE as SGLANG
from apron.extractors.trtllm import ENGINE as TRTLLM
from apron.extractors.vllm import ENGINE as VLLM

# In the order apron reports engines (rendered into generated/__init__.py).
ENGINES: dict[str, EngineSpec] = {
    VLLM.engine_id: VLLM,
    SGLANG.engine_id: SGLANG,
    LLAMACPP.engine_id: LLAMACPP,
    TRTLLM.engine_id: TRTLLM,
}

ALIASES = {
    "llama.cpp": "llamacpp",
    "llama-cpp": "llamacpp",
    "tensorrt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
    "trt-llm": "trtllm",
}


def engine_by_id(name: str) -> EngineSpec:
    engine_id = ALIASES.get(name.lower(), name.lower())
    try:
        return ENGINES[engine_id]
    except KeyError:
        known = ", ".join(sorted(ENGINES))
        raise UsageError(f"unknown engine {name!r}; known engines: {known}") from None


def all_record_types() -> list[type]:
    from apron.extractors.records import ExtractionWarning

    types = {ExtractionWarning}
    for engine in ENGINES.values():
        types.update(kind.record for kind in engine.fact_kinds)
    return sorted(types, key=lambda t: t.__name__)
