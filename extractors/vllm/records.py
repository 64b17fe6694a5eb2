"""Record types of the vLLM facts."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from apron.extractors.parsing.expressions import Expression, checked, infix
from apron.extractors.records import Record
from apron.extractors.serving.records import rendered_field


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
    when: str  # words of `condition`, rendered from it ("always", "'f' in hparams")
    condition: Expression  # apron/expressions.py, the config read as hparams; () = always
    requires_non_null: tuple[str, ...]  # config fields that must be present and not None
    other_conditions: tuple[str, ...]  # anything not of that form, in words; empty when none
    path: str
    symbol: str

    @model_validator(mode="before")
    @classmethod
    def _render_when(cls, data: Any) -> Any:
        return rendered_field(data, "when", lambda d: infix(checked(d.get("condition", ()))))

    def label(self) -> str:
        needs = (
            " and ".join(
                [f"{f} is not None" for f in self.requires_non_null] + list(self.other_conditions)
            )
            or "nothing"
        )
        return f"{self.scope}, when {self.when}: requires {needs}"


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


# Shapes of the hybrid page rule: "align_ceil" is align * cdiv(mamba_page, align * attn_page)
# (the smallest multiple of `align` tokens whose attention page holds one mamba page);
# "chunk_align_ceil" is lcm(chunk, align) * cdiv(cdiv(mamba_page, attn_page), lcm(chunk, align));
# "opaque" is code the extractor did not structure.
HYBRID_PAGE_SHAPES = ("align_ceil", "chunk_align_ceil", "opaque")


class HybridPageRule(Record):
    """How a hybrid model's attention block size is raised so its page holds one mamba state."""

    KEY: ClassVar[tuple[str, ...]] = ("when",)

    when: Expression  # the condition under which this branch runs (mamba_cache_mode a name)
    shape: str  # one of HYBRID_PAGE_SHAPES
    alignment: str  # the code of the alignment the block size is rounded to
    alignment_floor_is_block_size: bool  # the alignment is never below the current block size
    kernel_sizes_from: str  # the backend method the alignment's minimum reads
    raises_only: bool  # the block size is raised to the result, never lowered
    pads_mamba_page: bool  # the mamba page is then padded to equal the attention page
    formula: str  # the assignment, on one line
    path: str
    symbol: str

    @model_validator(mode="after")
    def _check(self) -> HybridPageRule:
        if self.shape not in HYBRID_PAGE_SHAPES:
            raise ValueError(f"hybrid page rule shape {self.shape!r} is not known")
        return self

    def label(self) -> str:
        return f"when {infix(self.when)}: {self.shape} ({self.formula})"


class AttentionBackendChoice(Record):
    """One attention backend of a CUDA priority list and the KV block size it gives."""

    KEY: ClassVar[tuple[str, ...]] = ("use_mla", "branch", "rank")

    use_mla: bool
    branch: str  # the conditions leading to the list, in words
    default_branch: bool  # no test but use_mla holds: the GPUs no condition singles out
    rank: int  # position in the list: the first backend that supports the setup is chosen
    backend: str  # the AttentionBackendEnum member
    class_path: str  # the dotted class path the enum names; "" when it names none
    kernel_block_sizes: tuple[str, ...]  # what get_supported_kernel_block_sizes returns, as code
    preferred_block: int | None  # the block size get_preferred_block_size picks; None unknown
    reason: str  # why preferred_block is None, or what set it; "" for the base rule
    path: str
    symbol: str

    def label(self) -> str:
        block = self.preferred_block if self.preferred_block is not None else "unknown"
        return f"{'MLA' if self.use_mla else 'attention'} #{self.rank} {self.backend}: {block}"

    def reading(self, name: str) -> str:
        what = {
            "preferred_block": "the default block size",
            "kernel_block_sizes": "the kernel block sizes",
        }.get(name, f"`{name}`")
        kind = "MLA backend" if self.use_mla else "attention backend"
        return f"{what} of {self.backend} ({kind} #{self.rank} where {self.branch})"


class MambaStateCalculator(Record):
    """One MambaStateShapeCalculator / MambaStateDtypeCalculator method: its parameters and the
    state tensors it returns, in order (shape methods: each tensor's dims as expressions over
    the parameters; dtype methods: each tensor's dtype as one expression)."""

    KEY: ClassVar[tuple[str, ...]] = ("calculator_class", "method")

    calculator_class: str
    method: str  # "mamba2_state_shape"
    kind: str  # the method name without _state_shape / _state_dtype: "mamba2"
    parameters: tuple[str, ...]  # in order, cls left out
    defaults: tuple[Expression, ...]  # one per parameter: its default, () where it has none
    states: tuple[tuple[Expression, ...], ...]  # tensor -> dims; () when unknown
    state_names: tuple[str, ...]  # the locals the return lists ("conv_state_shape"); () if none
    assumes: tuple[str, ...]  # tests a helper's fall-through return takes as not holding
    status: str  # "read" or "unknown" (the warnings say why)
    path: str
    symbol: str

    def label(self) -> str:
        if self.status != "read":
            return f"{self.symbol} (unknown)"
        return f"{self.symbol}({', '.join(self.parameters)}) -> {', '.join(self.tensors())}"

    def tensors(self) -> tuple[str, ...]:
        """Each state tensor's dims in words: "(conv_kernel - 1, divide(intermediate_size, tp))"."""
        return tuple("(" + ", ".join(infix(d) for d in state) + ")" for state in self.states)

    def shown(self, name: str) -> str | tuple[str, ...] | None:
        return self.tensors() if name == "states" else None

    def reading(self, name: str) -> str:
        return f"the state {self.symbol} computes"


class MambaStateHook(Record):
    """A model class's get_mamba_state_shape_from_config / get_mamba_state_dtype_from_config:
    the calculator method it calls with the expression it passes per parameter (paths from
    vllm_config), or the class it delegates to (with hf_config replaced by `delegate_config`)."""

    KEY: ClassVar[tuple[str, ...]] = ("model_class", "hook")

    model_class: str  # dotted: vllm.model_executor.models.jamba.JambaForCausalLM
    hook: str  # "shape" or "dtype"
    calculator: str  # "MambaStateShapeCalculator.mamba1_state_shape"; "" when delegating
    parameters: tuple[str, ...]  # the calculator parameters passed, in the calculator's order
    arguments: tuple[Expression, ...]  # the expression passed for each of `parameters`
    delegate: str  # dotted class whose hook is returned; "" when calling a calculator
    delegate_config: str  # the path given to vllm_config.with_hf_config; "" when unchanged
    status: str  # "read" or "unknown"
    path: str
    symbol: str

    def label(self) -> str:
        target = self.calculator or f"{self.delegate}" + (
            f" (hf_config = {self.delegate_config})" if self.delegate_config else ""
        )
        return f"{self.model_class} {self.hook}: {target if self.status == 'read' else 'unknown'}"

    def shown(self, name: str) -> tuple[str, ...] | None:
        if name != "arguments":
            return None
        return tuple(
            f"{p}={infix(a)}" for p, a in zip(self.parameters, self.arguments, strict=False)
        )

    def reading(self, name: str) -> str:
        short = self.model_class.rpartition(".")[2]
        return f"the recurrent state {self.hook} of {short} (its {self.symbol.rpartition('.')[2]})"


class KvDtypeLiteral(Record):
    """One entry of a literal vLLM's KV-cache dtype choice reads (apron.extractors.vllm.kv_dtype_rules):
    `float16_not_supported` model_type -> reason, `modelopt_kv_cache_dtype` ModelOpt KV algorithm
    -> cache dtype, `modelopt_quant_method` ModelOpt quant_algo -> the quant_method it sets."""

    KEY: ClassVar[tuple[str, ...]] = ("literal", "key")

    literal: str
    key: str
    value: str  # "" when unknown
    status: str  # "read" or "unknown"
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.literal}: {self.key} -> {self.value if self.status == 'read' else 'unknown'}"


class SizingPath(Record):
    """One way through a vLLM KV cache sizing method (vllm/v1/kv_cache_interface.py,
    vllm/config/vllm.py, vllm/engine/arg_utils.py): the tests that lead to a `return` (or, in
    get_batch_defaults, to the assignment of a default, or to a `raise`) and the value, as
    expressions over the method's parameters and `self` paths. In source order: the first
    return whose tests hold is what the method gives; the last assignment whose tests hold is the
    default it sets."""

    KEY: ClassVar[tuple[str, ...]] = ("symbol", "order")

    symbol: str  # "SlidingWindowSpec.max_admission_blocks_per_request"
    order: int  # the path's place in source order
    effect: str  # "return", "assign" or "raise"; "" when the method is unknown
    target: str  # what an assignment sets: "default_max_num_batched_tokens[UsageContext.X]"
    conditions: tuple[Expression, ...]  # the tests that all hold on this path
    value: Expression  # what it returns or assigns; () for a raise
    code: str  # the value's code on one line, for people
    status: str  # "read" or "unknown" (the reason says why)
    reason: str
    path: str

    def label(self) -> str:
        if self.status != "read":
            return f"{self.symbol} (unknown: {self.reason})"
        where = (
            f" when {' and '.join(infix(c) for c in self.conditions)}" if self.conditions else ""
        )
        target = f" {self.target} =" if self.target else ""
        return f"{self.symbol}: {self.effect}{target} {self.code}{where}"


class OptionLiteral(Record):
    """A literal vLLM's command line accepts for a flag apron also takes: a member of a `Literal`
    option type (CacheDType: --kv-cache-dtype), or a suffix and its multiplier (or an auto
    spelling and its value) of the parser of --max-model-len."""

    KEY: ClassVar[tuple[str, ...]] = ("symbol", "key")

    symbol: str  # "CacheDType", "human_readable_int.decimal", "human_readable_int_or_auto.auto"
    key: str  # the member or suffix as written: "fp8_inc", "k", "auto"
    value: str  # the multiplier or value ("1000", "-1"); "" for a Literal member
    order: int
    path: str

    def label(self) -> str:
        return f"{self.symbol}: {self.key}" + (f" = {self.value}" if self.value else "")


class IndexerLayerRule(Record):
    """Which layers of a sparse-attention (DSA) MLA model build an indexer, and so an indexer
    cache: the model's attention class gates the indexer on a config key (`hasattr`), and skips
    it on a layer where `skip` holds (the IndexCache rule). `skip` is an expression over
    `layer_id` and `config.<key>` paths (a `getattr` node carries the default)."""

    KEY: ClassVar[tuple[str, ...]] = ("model_class",)

    model_class: str  # the attention class: DeepseekV2MLAAttention
    gate_key: str  # the config key whose presence makes the model sparse: index_topk
    skip: Expression  # a layer builds no indexer where this holds
    builds_when: str  # the condition building the indexer, for people
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.model_class}: skip when {infix(self.skip)}"
