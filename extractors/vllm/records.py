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


class ModelClassFlags(Record):
    """What `_ModelInfo.from_model_cls` computes for one registered architecture's class,
    evaluated statically (None: not statically known; the warnings say why)."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str
    class_name: str
    resolved_class: str  # dotted module + class; adapter-built classes name the adapter
    status: str  # "resolved" or "unresolved"
    is_text_generation_model: bool | None
    is_pooling_model: bool | None
    attn_type: str | None
    default_seq_pooling_type: str | None
    default_tok_pooling_type: str | None
    score_type: str | None
    supports_multimodal: bool | None
    supports_multimodal_raw_input_only: bool | None
    requires_raw_input_tokens: bool | None
    supports_multimodal_encoder_tp_data: bool | None
    supports_pp: bool | None
    has_inner_state: bool | None
    is_attention_free: bool | None
    is_hybrid: bool | None
    has_noops: bool | None
    supports_mamba_prefix_caching: bool | None
    supports_transcription: bool | None
    supports_transcription_only: bool | None
    supports_lora: bool | None
    supports_eagle: bool | None
    supports_eagle3: bool | None
    supports_quant: bool | None  # SupportsQuant is in the MRO
    class_mro: tuple[str, ...]  # classes of the vLLM tree, in method resolution order
    path: str  # the file defining the resolved class
    symbol: str

    def label(self) -> str:
        if self.status != "resolved":
            return f"{self.architecture} (unresolved)"
        set_flags = [
            name
            for name in MODEL_CLASS_BOOL_FLAGS
            if getattr(self, name) is True and name != "supports_quant"
        ]
        return f"{self.architecture} attn_type={self.attn_type} " + ",".join(set_flags)


MODEL_CLASS_BOOL_FLAGS = tuple(
    name for name, info in ModelClassFlags.model_fields.items() if info.annotation == (bool | None)
)


class InterfaceFlag(Record):
    """A class-level flag an interface class sets (`IsHybrid.is_hybrid: ClassVar[Literal[True]]
    = True`): every model class with it in its MRO inherits the value."""

    KEY: ClassVar[tuple[str, ...]] = ("protocol", "attribute")

    protocol: str
    attribute: str
    value: str  # the literal, as Python writes it
    annotation: str
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.protocol}.{self.attribute} = {self.value}"


class RegistryNotice(Record):
    """An architecture vLLM names outside its registry: previously supported up to a version,
    or supported out of tree by a plugin."""

    KEY: ClassVar[tuple[str, ...]] = ("kind", "architecture")

    architecture: str
    kind: str  # "previously-supported" or "out-of-tree"
    detail: str  # the last version, or the plugin URL
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.architecture} ({self.kind} {self.detail})"


class AttnTypeRule(Record):
    """`ModelConfig.attn_type`: a pooling run is encoder-only for the listed default sequence
    pooling types or when the causal key is false; otherwise the class's attn_type."""

    KEY: ClassVar[tuple[str, ...]] = ("symbol",)

    pooling_condition: str  # the branch that applies to pooling runs ("pooler_config")
    encoder_only_seq_pooling_types: tuple[str, ...]
    causal_key: str  # hf_config key read in the pooling branch; false -> encoder_only
    causal_default: str
    branches: tuple[str, ...]  # every branch in order, "condition -> value"
    path: str
    symbol: str

    def label(self) -> str:
        return (
            f"pooling: encoder_only if seq pooling in {list(self.encoder_only_seq_pooling_types)}"
            f" or {self.causal_key} is false; " + "; ".join(self.branches)
        )
