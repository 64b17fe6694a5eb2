"""llama.cpp's memory facts: which memory create_memory builds per architecture and its
callbacks, the cache sizes, the context defaults, the limits and the ggml type sizes."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.llamacpp import (
    limits,
    memory_rules,
)
from apron.extractors.llamacpp.layout import (
    COMMON_H,
    CONTEXT_CPP,
    GGML_C,
    GGML_COMMON_H,
    GGML_H,
    KV_ISWA_CPP,
    MEMORY_HEADERS,
    MODEL_CPP,
)
from apron.extractors.llamacpp.records import (
    CacheSizeRule,
    ContextDefault,
    GgmlTypeSize,
    Limit,
    MemoryCallback,
    MemoryRule,
)
from apron.extractors.records import FactKind, Record
from apron.extractors.snapshot import Snapshot


def _create_memory(snapshot: Snapshot) -> tuple[list, list, list]:
    path = snapshot.first_existing([MODEL_CPP], anchor=memory_rules.CREATE_MEMORY)
    text = snapshot.read_text(path)
    parameters = {}
    for name in memory_rules.memory_classes(text, path):
        header = memory_rules.header_of(name)
        parameters[name] = (
            memory_rules.constructor_parameters(snapshot.read_text(header), header, name)
            if snapshot.exists(header)
            else None
        )
    return memory_rules.create_memory_rules(text, path, parameters)


def _memory_rules(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rules, _, warnings = _create_memory(snapshot)
    return FactOutput(tuple(rules), tuple(warnings))


def _memory_callbacks(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    _, callbacks, _ = _create_memory(snapshot)
    return FactOutput(tuple(callbacks))


def _cache_sizes(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    iswa = snapshot.first_existing([KV_ISWA_CPP], anchor=memory_rules.ISWA_CONSTRUCTOR)
    context = snapshot.first_existing([CONTEXT_CPP], anchor=memory_rules.CONTEXT_CONSTRUCTOR)
    a, wa = memory_rules.assignments_in(
        snapshot.read_text(iswa), iswa, memory_rules.ISWA_CONSTRUCTOR, memory_rules.ISWA_VARIABLES
    )
    b, wb = memory_rules.assignments_in(
        snapshot.read_text(context),
        context,
        memory_rules.CONTEXT_CONSTRUCTOR,
        memory_rules.CONTEXT_VARIABLES,
    )
    return FactOutput((*a, *b), (*wa, *wb))


def _context_defaults(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing([COMMON_H], anchor="struct common_params")
    rows, warnings = memory_rules.context_defaults(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


def _limits(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    texts = {
        path: snapshot.read_text(snapshot.first_existing([path], anchor=anchor))
        for path, anchor in _limit_anchors().items()
    }
    rows, warnings = limits.limits(texts)
    return FactOutput(tuple(rows), tuple(warnings))


def _limit_anchors() -> dict[str, str]:
    """Each file the limits fact reads -> the first name it looks for there (for the error when
    the file is missing)."""
    anchors: dict[str, str] = {}
    for name, path in limits.DEFINES.items():
        anchors.setdefault(path, name)
    for (struct, field), path in limits.FIELDS.items():
        anchors.setdefault(path, f"{struct}::{field}")
    return dict(sorted(anchors.items()))


def _ggml_type_sizes(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    ggml_c = snapshot.first_existing([GGML_C], anchor="type_traits")
    common = snapshot.first_existing([GGML_COMMON_H], anchor="block_* static_assert")
    header = snapshot.first_existing([GGML_H], anchor="typedef ggml_fp16_t")
    rows, warnings = memory_rules.ggml_type_sizes(
        snapshot.read_text(ggml_c),
        ggml_c,
        snapshot.read_text(common),
        common,
        snapshot.read_text(header),
        header,
    )
    return FactOutput(tuple(rows), tuple(warnings))


MEMORY_RULES = FactKind(
    "memory_rules",
    "Memory per architecture (create_memory)",
    MemoryRule,
    "what llama_model::create_memory builds: no memory for the listed architectures, else "
    "recurrent, hybrid, hybrid-iswa, iswa or plain KV by the condition, with each "
    "constructor argument (K/V types, r/s types, cache sizes) by parameter name.",
)
MEMORY_CALLBACKS = FactKind(
    "memory_callbacks",
    "Layer filters and reuse (create_memory)",
    MemoryCallback,
    "the per-architecture layer filters (attention / recurrent) and KV reuse callbacks "
    "create_memory passes: what the lambda returns for layer il, as expressions.",
)
CACHE_SIZES = FactKind(
    "cache_sizes",
    "Cache size and context padding",
    CacheSizeRule,
    "the SWA cache size of llama_kv_cache_iswa and the padding of n_ctx / n_ctx_seq in "
    "llama_context: each assignment in order, with its condition, as expressions.",
)
CONTEXT_DEFAULTS = FactKind(
    "context_defaults",
    "Context defaults (common_params)",
    ContextDefault,
    "the defaults llama-server / llama-cli start from: n_ctx (0 = the training context), "
    "n_batch, n_ubatch, n_parallel, cache types, flash attention, kv_unified, swa_full.",
)
LIMITS = FactKind(
    "limits",
    "Limits on what llama.cpp loads and is asked",
    Limit,
    "the #defines llama.cpp checks a GGUF file and a context against (LLAMA_MAX_SEQ, "
    "LLAMA_MAX_LAYERS, GGML_MAX_DIMS, GGML_MAX_NAME, GGUF_VERSION, GGUF_MAX_STRING_LENGTH, "
    "GGUF_MAX_ARRAY_ELEMENTS) and the largest value of the C type of each setting apron takes "
    "as an option (common_params::n_ctx, llama_context_params::n_seq_max, ...).",
)
GGML_TYPE_SIZES = FactKind(
    "ggml_type_sizes",
    "Bytes per block of the cache types (ggml)",
    GgmlTypeSize,
    "ggml's type_traits for the KV cache types: blck_size elements take type_size bytes; "
    "sizeof(block_x) from ggml-common.h's static_assert on the block.",
)

MEMORY_RULES_FACT = FactExtractor(MEMORY_RULES, _memory_rules, reads=(MODEL_CPP, *MEMORY_HEADERS))

MEMORY_CALLBACKS_FACT = FactExtractor(
    MEMORY_CALLBACKS,
    _memory_callbacks,
    reads=(MODEL_CPP, *MEMORY_HEADERS),
    allow_empty=True,
)

CACHE_SIZES_FACT = FactExtractor(CACHE_SIZES, _cache_sizes, reads=(KV_ISWA_CPP, CONTEXT_CPP))

CONTEXT_DEFAULTS_FACT = FactExtractor(CONTEXT_DEFAULTS, _context_defaults, reads=(COMMON_H,))

LIMITS_FACT = FactExtractor(LIMITS, _limits, reads=limits.PATHS)

GGML_TYPE_SIZES_FACT = FactExtractor(
    GGML_TYPE_SIZES, _ggml_type_sizes, reads=(GGML_C, GGML_COMMON_H, GGML_H)
)
