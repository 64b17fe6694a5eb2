"""llama.cpp: architecture names, the architecture class sets (recurrent, hybrid, diffusion, ...),
the HF architecture -> GGUF architecture join, and sliding-window rules per architecture.

The registry of the engine's facts, in the order of its README; each fact, its kind and
the function that reads it live in the module named beside it."""

from __future__ import annotations

from apron.extractors.engine_api import EngineSpec
from apron.extractors.llamacpp import (
    arch_facts,
    converter_facts,
    memory_facts,
    model_facts,
    support,
)

ENGINE = EngineSpec(
    engine_id="llamacpp",
    title="llama.cpp",
    upstream_url="https://github.com/ggml-org/llama.cpp",
    release_tags=r"b\d+",
    support_facts=("arch_names", "class_set_members"),
    support_judge=support.judge,
    calculator_facts=(
        "class_set_members",
        "sliding_window",
        "hparams_formulas",
        "memory_rules",
        "memory_callbacks",
        "cache_sizes",
        "context_defaults",
        "ggml_type_sizes",
        "recurrent_layers",
        "gguf_writer_keys",
        "converter_hparams",
        "hparams_steps",
        "tensor_shapes",
        "limits",
    ),
    facts=(
        arch_facts.ARCH_NAMES_FACT,
        arch_facts.CLASS_PREDICATES_FACT,
        arch_facts.CLASS_SET_LISTED_FACT,
        arch_facts.CLASS_SET_MEMBERS_FACT,
        converter_facts.HF_ARCHITECTURES_FACT,
        model_facts.SLIDING_WINDOW_FACT,
        model_facts.HPARAMS_FORMULAS_FACT,
        model_facts.HPARAMS_STEPS_FACT,
        model_facts.TENSOR_SHAPES_FACT,
        memory_facts.MEMORY_RULES_FACT,
        memory_facts.MEMORY_CALLBACKS_FACT,
        memory_facts.CACHE_SIZES_FACT,
        memory_facts.CONTEXT_DEFAULTS_FACT,
        memory_facts.LIMITS_FACT,
        memory_facts.GGML_TYPE_SIZES_FACT,
        model_facts.RECURRENT_LAYERS_FACT,
        converter_facts.GGUF_WRITER_KEYS_FACT,
        converter_facts.CONVERTER_HPARAMS_FACT,
    ),
)
