"""What `extract support` says for llama.cpp. An HF architecture is supported when the converter
registers it for a text model and joins it to an LLM_ARCH_* the runtime names (LLM_ARCH_NAMES):
the GGUF file it writes is one llama.cpp loads. A GGUF architecture name (`qwen3next`) or an
LLM_ARCH_* value is supported when LLM_ARCH_NAMES lists it."""

from __future__ import annotations

from apron.extractors.llamacpp.records import ArchName, ClassSetMember, HfArchitecture
from apron.extractors.records import EngineFacts

HF_FACT, NAMES_FACT = "hf_architectures", "arch_names"
CLASS_WORDS = {
    "llm_arch_is_hybrid": "hybrid",
    "llm_arch_is_recurrent": "recurrent",
    "llm_arch_is_diffusion": "diffusion",
}


def _classes(predicates: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The predicates true for an architecture, the class sets in words first."""
    words = [CLASS_WORDS[p] for p in predicates if p in CLASS_WORDS]
    return (*words, *sorted(p for p in predicates if p not in CLASS_WORDS))


def judge(facts: EngineFacts, architecture: str) -> tuple[str, str, str, tuple[str, ...]]:
    """yes / no / unknown, the fact that decided, why, and the class predicates true for it."""
    found = [
        r
        for r in facts.records("hf_architectures")
        if isinstance(r, HfArchitecture) and r.architecture == architecture
    ]
    text = [r for r in found if r.model_type == "text"]
    resolved = [r for r in text if r.resolution == "resolved"]
    if resolved:
        row = resolved[0]
        return (
            "yes",
            HF_FACT,
            f"{row.path} registers {row.architecture} ({row.converter_class}); it writes GGUF "
            f"architecture {row.gguf_arch!r}, which llama.cpp loads as {row.llm_arch}",
            _classes(row.properties),
        )
    if text:
        row = text[0]
        return (
            "unknown",
            HF_FACT,
            f"{row.path} registers {row.architecture} ({row.converter_class}), but the join "
            f"to an LLM_ARCH_* stops: {row.resolution}",
            (),
        )
    if found:
        row = found[0]
        return (
            "no",
            HF_FACT,
            f"{row.path} registers {row.architecture} only for a multimodal projector (mmproj) "
            "file, not for a text model",
            (),
        )
    for name in facts.records("arch_names"):
        if isinstance(name, ArchName) and architecture in (name.gguf_name, name.arch):
            predicates = sorted(
                {
                    m.predicate
                    for m in facts.records("class_set_members")
                    if isinstance(m, ClassSetMember) and m.arch == name.arch
                }
            )
            return (
                "yes",
                NAMES_FACT,
                f"{name.path} {name.symbol} names GGUF architecture {name.gguf_name!r} "
                f"({name.arch}): llama.cpp loads GGUF files with that general.architecture",
                _classes(predicates),
            )
    return (
        "no",
        f"{HF_FACT}, {NAMES_FACT}",
        "the converter does not register it and LLM_ARCH_NAMES does not name it",
        (),
    )
