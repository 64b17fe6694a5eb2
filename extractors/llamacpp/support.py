"""What `extract support` says for llama.cpp: an HF architecture is supported when the converter
registers it for a text model and joins it to an LLM_ARCH_* the runtime names (LLM_ARCH_NAMES):
the GGUF file it writes is one llama.cpp loads."""

from __future__ import annotations

from collections.abc import Sequence

from extractors.llamacpp.records import HfArchitecture
from extractors.records import Record


def judge(rows: Sequence[Record]) -> tuple[str, str]:
    """yes / no / unknown and why, from one architecture's hf_architectures rows."""
    found = [r for r in rows if isinstance(r, HfArchitecture)]
    text = [r for r in found if r.model_type == "text"]
    resolved = [r for r in text if r.resolution == "resolved"]
    if resolved:
        row = resolved[0]
        return (
            "yes",
            f"{row.path} registers {row.architecture} ({row.converter_class}); it writes GGUF "
            f"architecture {row.gguf_arch!r}, which llama.cpp loads as {row.llm_arch}; class "
            f"predicates true for it: {', '.join(row.properties) or 'none'}",
        )
    if text:
        row = text[0]
        return (
            "unknown",
            f"{row.path} registers {row.architecture} ({row.converter_class}), but the join "
            f"to an LLM_ARCH_* stops: {row.resolution}",
        )
    if found:
        row = found[0]
        return (
            "no",
            f"{row.path} registers {row.architecture} only for a multimodal projector (mmproj) "
            "file, not for a text model",
        )
    return "no", "the converter does not register it"
