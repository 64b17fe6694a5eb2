"""vLLM: MLA model types and gates, the KV-head alias scan and overrides, registry rows.

The registry of the engine's facts, in the order of its README; each fact, its kind and
the function that reads it live in the module named beside it."""

from __future__ import annotations

from apron.extractors.engine_api import EngineSpec
from apron.extractors.vllm import convertor_facts, registry_facts, serving_facts

ENGINE = EngineSpec(
    engine_id="vllm",
    title="vLLM",
    upstream_url="https://github.com/vllm-project/vllm",
    release_tags=r"v\d+\.\d+\.\d+",
    support_facts=("mla_model_types", "model_class_flags", "attn_type_rule", "registry_notices"),
    calculator_facts=(
        "mla_model_types",
        "mla_gates",
        "kv_head_aliases",
        "kv_head_fallback",
        "kv_head_overrides",
        "mamba_ssm_dtype_defaults",
        "attn_type_rule",
        "serving_defaults",
        "tp_rules",
        "attention_backends",
        "ssm_tp_splits",
        "mamba_state_calculators",
        "mamba_state_hooks",
        "kv_dtype_literals",
        "hybrid_page_rules",
        "indexer_layer_rules",
        "kv_sizing_paths",
        "option_literals",
    ),
    facts=(
        convertor_facts.MLA_MODEL_TYPES_FACT,
        convertor_facts.MLA_GATES_FACT,
        convertor_facts.KV_HEAD_ALIASES_FACT,
        convertor_facts.KV_HEAD_FALLBACK_FACT,
        convertor_facts.KV_HEAD_OVERRIDES_FACT,
        registry_facts.REGISTRY_ROWS_FACT,
        registry_facts.DOCS_TABLE_ROWS_FACT,
        registry_facts.DOCS_REGISTRY_FINDINGS_FACT,
        registry_facts.MAMBA_SSM_DTYPE_DEFAULTS_FACT,
        registry_facts.MODEL_CLASS_FLAGS_FACT,
        registry_facts.INTERFACE_FLAGS_FACT,
        registry_facts.REGISTRY_NOTICES_FACT,
        serving_facts.ATTN_TYPE_RULE_FACT,
        serving_facts.SERVING_DEFAULTS_FACT,
        serving_facts.TP_RULES_FACT,
        serving_facts.ATTENTION_BACKENDS_FACT,
        serving_facts.SSM_TP_SPLITS_FACT,
        serving_facts.MAMBA_STATE_CALCULATORS_FACT,
        serving_facts.MAMBA_STATE_HOOKS_FACT,
        serving_facts.KV_DTYPE_LITERALS_FACT,
        serving_facts.OPTION_LITERALS_FACT,
        serving_facts.KV_SIZING_PATHS_FACT,
        serving_facts.INDEXER_LAYER_RULES_FACT,
        serving_facts.HYBRID_PAGE_RULES_FACT,
    ),
)
