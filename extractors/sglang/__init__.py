"""SGLang: registry rows (EntryClass), the MLA attention chain, the architecture sets and KV-head
rule of model_config.py, the hybrid-arch config classes, supported-model docs tables.

The registry of the engine's facts, in the order of its README; each fact, its kind and
the function that reads it live in the module named beside it."""

from __future__ import annotations

from apron.extractors.engine_api import EngineSpec
from apron.extractors.sglang import model_facts, serving_facts

ENGINE = EngineSpec(
    engine_id="sglang",
    title="SGLang",
    upstream_url="https://github.com/sgl-project/sglang",
    release_tags=r"v\d+\.\d+\.\d+(\.post\d+)?",
    support_facts=("mla_architectures", "explicit_mha_architectures", "architecture_sets"),
    calculator_facts=(
        "mla_architectures",
        "mla_conditions",
        "explicit_mha_architectures",
        "architecture_sets",
        "hybrid_config_classes",
        "config_class_attributes",
        "config_rewrites",
        "kv_head_aliases",
        "kv_head_fallback",
        "kv_head_overrides",
        "serving_defaults",
        "server_arg_defaults",
        "tp_rules",
        "ssm_tp_splits",
        "memory_fraction_steps",
        "kv_dtype_sets",
        "context_length_rules",
        "prefill_graph_rules",
        "arg_overrides",
    ),
    facts=(
        model_facts.REGISTRY_ROWS_FACT,
        model_facts.MLA_ARCHITECTURES_FACT,
        model_facts.MLA_CONDITIONS_FACT,
        model_facts.EXPLICIT_MHA_FACT,
        model_facts.ARCHITECTURE_SETS_FACT,
        model_facts.HYBRID_CONFIG_CLASSES_FACT,
        model_facts.CONFIG_CLASS_ATTRIBUTES_FACT,
        model_facts.CONFIG_REWRITES_FACT,
        model_facts.KV_HEAD_ALIASES_FACT,
        model_facts.KV_HEAD_FALLBACK_FACT,
        model_facts.KV_HEAD_OVERRIDES_FACT,
        model_facts.DOCS_TABLE_ROWS_FACT,
        model_facts.DOCS_REGISTRY_FINDINGS_FACT,
        serving_facts.SERVING_DEFAULTS_FACT,
        serving_facts.SERVER_ARG_DEFAULTS_FACT,
        serving_facts.TP_RULES_FACT,
        serving_facts.SSM_TP_SPLITS_FACT,
        serving_facts.MEMORY_FRACTION_STEPS_FACT,
        serving_facts.ARG_OVERRIDES_FACT,
        serving_facts.PREFILL_GRAPH_RULES_FACT,
        serving_facts.CONTEXT_LENGTH_RULES_FACT,
        serving_facts.KV_DTYPE_SETS_FACT,
    ),
)
