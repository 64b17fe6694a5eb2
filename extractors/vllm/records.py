"""Record types of the vLLM facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import model_validator

from apron.extractors.records import Record
from apron.extractors.rule_terms import condition_problem, condition_words


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
    when: str  # words of `condition`, rendered from it ("always", "has f", "not has f")
    condition: tuple[tuple[str, ...], ...]  # terms (see apron.extractors.rule_terms); () = always
    requires_non_null: tuple[str, ...]  # config fields that must be present and not None
    other_conditions: tuple[str, ...]  # anything not of that form, in words; empty when none
    path: str
    symbol: str

    @model_validator(mode="before")
    @classmethod
    def _render_when(cls, data: Any) -> Any:
        return _rendered(data, "when", lambda d: condition_words(d.get("condition", ())))

    @model_validator(mode="after")
    def _check(self) -> MlaGate:
        problem = condition_problem(self.condition)
        if problem:
            raise ValueError(f"MLA gate condition: {problem}")
        return self

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
    fallback_key: str  # the config key the fallback reads; "" when it is not one key
    expression: str
    path: str
    symbol: str

    def label(self) -> str:
        return f"fallback {self.fallback}"


# What a KV-head rule gives (`gives`) or does otherwise (`otherwise`): a constant, the value of a
# config key, or the base alias scan; "" for nothing (see KvHeadOverride).
CONSTANT, KEY_VALUE, BASE_SCAN = "constant", "key", "base scan"
RULE_VALUES = (CONSTANT, KEY_VALUE, BASE_SCAN)
# The shapes of a rule. "derived" and "opaque" rules cannot be evaluated from their fields.
RULE_KINDS = ("constant", "base", "reads", "conditional", "derived", "opaque")


class KvHeadOverride(Record):
    """A per-model_type rule that replaces or precedes the alias scan ("*" = every model type).

    kind "constant" gives `gives_constant`; "base" runs the alias scan; "reads" gives the value of
    `gives_key` and, when that key is absent or null, does `otherwise` ("" = the read fails);
    "conditional" gives `gives` when every term of `when` holds and does `otherwise` when not
    ("" = no else branch: the next rule, then the scan). "derived" computes the count from
    `derived_from` in a loop and "opaque" is code the extractor did not structure: neither can
    be evaluated from its fields, and `reason` says why.
    A "*" rule does not apply when every term of `excludes` holds. `rule` is rendered from the
    other fields."""

    KEY: ClassVar[tuple[str, ...]] = ("model_type", "rule_order")

    model_type: str
    rule_order: int  # position among the rules that apply to this model type
    convertor_class: str  # "" when the rule sits inline in ModelConfig (older layouts)
    kind: str  # one of RULE_KINDS
    when: tuple[
        tuple[str, ...], ...
    ]  # conditional: terms that must all hold (apron.extractors.rule_terms)
    gives: str  # one of RULE_VALUES; "" for derived and opaque rules
    gives_key: str  # the config key (dotted path) read when gives == "key"
    gives_constant: int | None  # the count when gives == "constant"
    otherwise: str  # one of RULE_VALUES, or "" when there is no else branch
    otherwise_key: str
    otherwise_constant: int | None
    derived_from: str  # derived: the config key the code loops over; "" when not one key
    reason: str  # derived, opaque: why the fields cannot be evaluated (the code, in words)
    excludes: tuple[tuple[str, ...], ...]  # "*" rules: terms under which the rule does not apply
    rule: str  # words rendered from the fields above
    path: str
    symbol: str

    @model_validator(mode="before")
    @classmethod
    def _render_rule(cls, data: Any) -> Any:
        return _rendered(data, "rule", kv_rule_words)

    @model_validator(mode="after")
    def _check(self) -> KvHeadOverride:
        problem = _kv_rule_problem(self)
        if problem:
            raise ValueError(f"KV-head rule for {self.model_type}: {problem}")
        return self

    def label(self) -> str:
        return f"{self.model_type}: {self.rule}"


def _value_words(what: str, key: str, constant: int | None) -> str:
    if what == CONSTANT:
        return str(constant)
    if what == KEY_VALUE:
        return key
    return what


def kv_rule_words(fields: Mapping[str, Any]) -> str:
    """The sentence of a KV-head rule, from its fields ("reads k, else n", "1 when c; else ...")."""
    kind = fields.get("kind", "")
    gives = _value_words(
        fields.get("gives", ""), fields.get("gives_key", ""), fields.get("gives_constant")
    )
    otherwise = _value_words(
        fields.get("otherwise", ""),
        fields.get("otherwise_key", ""),
        fields.get("otherwise_constant"),
    )
    if kind == "constant":
        return f"constant {gives}"
    if kind == "base":
        return BASE_SCAN
    if kind == "reads":
        return f"reads {gives}" + (f", else {otherwise}" if otherwise else "")
    if kind == "conditional":
        when = condition_words(fields.get("when", ()))
        return f"{gives} when {when}" + (f"; else {otherwise}" if otherwise else "")
    if kind == "derived":
        source = fields.get("derived_from", "")
        return f"derived from {source}" if source else "derived in a loop"
    return f"opaque: {fields.get('reason', '')}"


def _value_problem(name: str, what: str, key: str, constant: int | None) -> str:
    if what not in (*RULE_VALUES, ""):
        return f"{name} is {what!r}, not one of {', '.join(RULE_VALUES)}"
    if (what == KEY_VALUE) != bool(key):
        return f"{name}_key must be set exactly when {name} is {KEY_VALUE!r}"
    if (what == CONSTANT) != (constant is not None):
        return f"{name}_constant must be set exactly when {name} is {CONSTANT!r}"
    return ""


def _kv_rule_problem(rule: KvHeadOverride) -> str:
    """Why the fields do not describe one rule of its kind; "" when they do."""
    if rule.kind not in RULE_KINDS:
        return f"kind {rule.kind!r} is not one of {', '.join(RULE_KINDS)}"
    problem = (
        _value_problem("gives", rule.gives, rule.gives_key, rule.gives_constant)
        or _value_problem("otherwise", rule.otherwise, rule.otherwise_key, rule.otherwise_constant)
        or condition_problem(rule.when)
        or condition_problem(rule.excludes)
    )
    if problem:
        return problem
    expected_gives = {
        "constant": (CONSTANT,),
        "base": (BASE_SCAN,),
        "reads": (KEY_VALUE,),
        "conditional": RULE_VALUES,
        "derived": ("",),
        "opaque": ("",),
    }[rule.kind]
    if rule.gives not in expected_gives:
        return f"a {rule.kind} rule gives {rule.gives!r}"
    if rule.kind not in ("reads", "conditional") and rule.otherwise:
        return f"a {rule.kind} rule has no else branch"
    if rule.kind == "conditional" and not rule.when:
        return "a conditional rule needs at least one term"
    if rule.kind != "conditional" and rule.when:
        return f"a {rule.kind} rule has no condition"
    if (rule.kind in ("derived", "opaque")) != bool(rule.reason):
        return "reason is set exactly for derived and opaque rules"
    if rule.kind != "derived" and rule.derived_from:
        return "derived_from is set only for derived rules"
    if rule.excludes and rule.model_type != "*":
        return "only a '*' rule has excludes"
    return ""


def _rendered(data: Any, name: str, render: Callable[[Mapping[str, Any]], str]) -> Any:
    """`data` with `name` rendered from the other fields; an error when a given text differs."""
    if not isinstance(data, Mapping):
        return data
    words = render(data)
    given = data.get(name)
    if given is not None and given != words:
        raise ValueError(f"{name} {given!r} is not what the fields say ({words!r})")
    return {**data, name: words}


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


# The kinds of a serving default. "literal": the value is a literal in the source; "cuda": the
# value on CUDA, found by evaluating platform guards (`candidates` keeps the others); "computed":
# worked out at startup (from GPU memory, ...) by `computed_by`; "opaque": code the extractor
# did not evaluate (`reason` says which).
SERVING_DEFAULT_KINDS = ("literal", "cuda", "computed", "opaque")


class ServingDefault(Record):
    """A serving setting's default as the engine's source sets it (block size, memory fraction)."""

    KEY: ClassVar[tuple[str, ...]] = ("setting",)

    setting: str  # the engine's own name: block_size, gpu_memory_utilization, page_size, ...
    role: str  # what a planner uses it for: "block_tokens" or "memory_fraction"
    kind: str  # one of SERVING_DEFAULT_KINDS
    value: str  # the literal as Python writes it ("16", "0.92"); "" for computed and opaque
    candidates: tuple[str, ...]  # other values the rule gives, "condition -> value"
    computed_by: str  # computed: the function that sets it; "" otherwise
    reason: str  # how the value is found, in words; "" for a plain literal
    path: str
    symbol: str

    @model_validator(mode="after")
    def _check(self) -> ServingDefault:
        if self.kind not in SERVING_DEFAULT_KINDS:
            raise ValueError(f"{self.setting}: kind {self.kind!r} not in {SERVING_DEFAULT_KINDS}")
        if (self.kind in ("literal", "cuda")) != bool(self.value):
            raise ValueError(f"{self.setting}: a value is set exactly for literal and cuda kinds")
        return self

    def label(self) -> str:
        if self.kind in ("literal", "cuda"):
            return f"{self.setting} = {self.value}" + (" on CUDA" if self.kind == "cuda" else "")
        return f"{self.setting}: {self.kind} ({self.reason})"


# Shapes of a tensor-parallel rule. kv_heads_per_gpu: "split_replicate" is max(1, total // tp)
# (split, and replicated so that each GPU keeps one head when total < tp), "split" is
# total // tp; mla_kv_heads_per_gpu: "constant" (`constant` heads on every GPU: the latent is
# replicated), "replicated" (the per-token size does not depend on tp); *_divisible: "divides"
# (tp must divide the keys' value), "divides_or_divided" (the value divides tp when smaller);
# "opaque": code the extractor did not structure.
TP_RULE_SHAPES = (
    "split_replicate",
    "split",
    "constant",
    "replicated",
    "divides",
    "divides_or_divided",
    "opaque",
)
TP_RULES = (
    "kv_heads_per_gpu",
    "mla_kv_heads_per_gpu",
    "attention_heads_divisible",
    "kv_heads_divisible",
)


class TpRule(Record):
    """A tensor-parallel rule: how KV heads are split across GPUs, or what tp must divide."""

    KEY: ClassVar[tuple[str, ...]] = ("rule",)

    rule: str  # one of TP_RULES
    shape: str  # one of TP_RULE_SHAPES
    keys: tuple[str, ...]  # config keys (or the engine's derived quantities) the rule reads
    constant: int | None  # heads per GPU for a "constant" shape
    when: tuple[tuple[str, ...], ...]  # terms under which the rule applies (rule_terms)
    code: str  # the expression or check, on one line
    scope: str  # where it holds: "every model" or the model class it is read from
    path: str
    symbol: str

    @model_validator(mode="after")
    def _check(self) -> TpRule:
        if self.rule not in TP_RULES or self.shape not in TP_RULE_SHAPES:
            raise ValueError(f"tp rule {self.rule!r} of shape {self.shape!r} is not known")
        if (self.shape == "constant") != (self.constant is not None):
            raise ValueError(f"{self.rule}: constant is set exactly for the constant shape")
        problem = condition_problem(self.when)
        if problem:
            raise ValueError(f"{self.rule}: {problem}")
        return self

    def label(self) -> str:
        when = f" when {condition_words(self.when)}" if self.when else ""
        return f"{self.rule}: {self.shape}{when} ({self.code})"


class SsmTpSplit(Record):
    """A dimension of a recurrent state that the engine divides by the tensor-parallel size."""

    KEY: ClassVar[tuple[str, ...]] = ("calculator", "dividend")

    calculator: str  # the state kind ("mamba2" for mamba2_state_shape)
    dividend: str  # the parameter or local that is divided
    dividend_code: str  # a local's expression; "" when the dividend is a parameter
    division: str  # "exact": divide() (fails unless divisible); "floor": //; "ceil": -(-x // tp)
    adjustments: tuple[str, ...]  # reassignments of parameters before the split, on one line
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.calculator}: {self.dividend} / tp ({self.division})"


# Shapes of the hybrid page rule: "align_ceil" is align * cdiv(mamba_page, align * attn_page)
# (the smallest multiple of `align` tokens whose attention page holds one mamba page);
# "chunk_align_ceil" is lcm(chunk, align) * cdiv(cdiv(mamba_page, attn_page), lcm(chunk, align));
# "opaque" is code the extractor did not structure.
HYBRID_PAGE_SHAPES = ("align_ceil", "chunk_align_ceil", "opaque")


class HybridPageRule(Record):
    """How a hybrid model's attention block size is raised so its page holds one mamba state."""

    KEY: ClassVar[tuple[str, ...]] = ("when",)

    when: tuple[tuple[str, ...], ...]  # terms (rule_terms) under which this branch runs
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
        problem = condition_problem(self.when)
        if problem:
            raise ValueError(f"hybrid page rule: {problem}")
        return self

    def label(self) -> str:
        return f"when {condition_words(self.when)}: {self.shape} ({self.formula})"


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
