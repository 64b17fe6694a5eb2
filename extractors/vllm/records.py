"""Record types of the vLLM facts."""

from __future__ import annotations

from typing import ClassVar

from extractors.records import Record


class MlaModelType(Record):
    """A model_type that vLLM's is_deepseek_mla() treats as MLA (scope main or eagle_inner)."""

    KEY: ClassVar[tuple[str, ...]] = ("scope", "model_type")

    scope: str  # "main": hf_text_config.model_type; "eagle_inner": the EAGLE module's inner model
    model_type: str
    path: str
    symbol: str


class MlaGate(Record):
    """A condition a listed model_type must also meet to be MLA (e.g. kv_lora_rank non-null)."""

    KEY: ClassVar[tuple[str, ...]] = ("scope", "when")

    scope: str
    when: str  # "always", "has <field>", "not has <field>"
    requires_non_null: tuple[str, ...]  # config fields that must be present and not None
    other_conditions: tuple[str, ...]  # anything not of that form, in words; empty when none
    path: str
    symbol: str


class KvHeadAlias(Record):
    """One config key get_total_num_kv_heads() scans; the first present key wins."""

    KEY: ClassVar[tuple[str, ...]] = ("key",)

    position: int
    key: str
    path: str
    symbol: str


class KvHeadFallback(Record):
    """What get_total_num_kv_heads() returns when no alias key is present (silent MHA)."""

    KEY: ClassVar[tuple[str, ...]] = ("symbol",)

    fallback: str
    expression: str
    path: str
    symbol: str


class KvHeadOverride(Record):
    """A per-model_type rule that replaces or precedes the alias scan ("*" = every model type)."""

    KEY: ClassVar[tuple[str, ...]] = ("model_type", "rule_order")

    model_type: str
    rule_order: int  # position among the rules that apply to this model type
    convertor_class: str  # "" when the rule sits inline in ModelConfig (older layouts)
    kind: str  # constant, reads, conditional, derived, base, opaque
    rule: str
    excludes: str  # words for the model types a "*" rule does not apply to; "" when none
    path: str
    symbol: str


class RegistryRow(Record):
    """One HF architecture vLLM registers, after the merged _VLLM_MODELS dict resolved it."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str
    task_group: str
    module: str
    class_name: str
    section: str  # the `# [Section]` comment above the row, "" when none
    dict_name: str
    also_in: tuple[str, ...]  # task groups of earlier dicts whose row for it is shadowed
    path: str
