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

    def label(self) -> str:
        return self.model_type + (" (EAGLE inner model)" if self.scope == "eagle_inner" else "")


class MlaGate(Record):
    """A condition a listed model_type must also meet to be MLA (e.g. kv_lora_rank non-null)."""

    KEY: ClassVar[tuple[str, ...]] = ("scope", "when")

    scope: str
    when: str  # "always", "has <field>", "not has <field>"
    requires_non_null: tuple[str, ...]  # config fields that must be present and not None
    other_conditions: tuple[str, ...]  # anything not of that form, in words; empty when none
    path: str
    symbol: str

    def label(self) -> str:
        needs = (
            " and ".join(
                [f"{f} is not None" for f in self.requires_non_null] + list(self.other_conditions)
            )
            or "nothing"
        )
        return f"{self.scope}, when {self.when}: requires {needs}"


class KvHeadAlias(Record):
    """One config key get_total_num_kv_heads() scans; the first present key wins."""

    KEY: ClassVar[tuple[str, ...]] = ("key",)

    position: int
    key: str
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.key} (position {self.position + 1})"


class KvHeadFallback(Record):
    """What get_total_num_kv_heads() returns when no alias key is present (silent MHA)."""

    KEY: ClassVar[tuple[str, ...]] = ("symbol",)

    fallback: str
    expression: str
    path: str
    symbol: str

    def label(self) -> str:
        return f"fallback {self.fallback}"


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

    def label(self) -> str:
        return f"{self.model_type}: {self.rule}"


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

    def label(self) -> str:
        return f"{self.architecture} ({self.task_group})"


class VllmDocsRow(Record):
    """One row of a vLLM supported-models table (supported_models.md or a pooling page)."""

    KEY: ClassVar[tuple[str, ...]] = ("path", "section", "architectures")

    path: str
    section: str  # heading path above the table, from level 2 down
    architectures: tuple[str, ...]  # as written; `*Model`-style entries are patterns
    architecture_marks: tuple[
        str, ...
    ]  # <sup> marks on the architecture cell, e.g. "C" (converted)
    models: str
    inputs: str  # multimodal Inputs column with <sup> marks as ^X; "" when the table has none
    example_hf_models: tuple[str, ...]
    features: tuple[str, ...]  # "<column>=<yes|no|planned|limited|as-original-model|?raw>"
    other_columns: tuple[str, ...]  # "<column>=<text>" for the remaining text columns
    notes: tuple[str, ...]  # "<column>: [^label] <footnote text>" for footnote refs in the row


class MambaSsmDtypeDefault(Record):
    """An architecture whose vLLM config hook sets --mamba-ssm-cache-dtype when it is 'auto'."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str
    config_class: str  # the MODELS_CONFIG_MAP hook class
    reads: str  # the config field whose value is used when present
    config_object: str  # which config object it is read from (hf_config, hf_text_config, ...)
    default: str  # the literal used when the field is absent; "" keeps 'auto' (model dtype)
    path: str
    symbol: str

    def label(self) -> str:
        fallback = f", else {self.default}" if self.default else ", else auto"
        return f"{self.architecture}: {self.config_object}.{self.reads}{fallback}"
