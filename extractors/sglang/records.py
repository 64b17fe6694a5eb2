"""Record types of the SGLang facts."""

from __future__ import annotations

from typing import ClassVar

from apron.extractors.parsing.expressions import Expression, infix
from apron.extractors.records import Record


class SglangRegistryRow(Record):
    """One architecture SGLang registers: a class named by a models module's `EntryClass`."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str  # the class's __name__, which is what SGLang registers
    module: str  # the models module whose EntryClass names it, e.g. "deepseek_v2"
    entry_name: str  # the name written in EntryClass (differs from the class for an alias)
    class_name: str
    resolved_via: str  # "class", "alias X", "import from <module>", chains joined by " -> "
    class_path: str  # file that defines the class
    also_in: tuple[str, ...]  # later modules that register the same architecture (a conflict)
    import_error: str  # why the module fails to import at this commit, statically ("" when not)
    path: str


class SglangMlaArchitecture(Record):
    """An architecture the attention if/elif chain in ModelConfig sets to AttentionArch.MLA."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str
    branch: int  # 1-based position of the if/elif branch in the chain
    conditional: bool  # True when the branch also requires config conditions (see mla_conditions)
    path: str
    symbol: str


class SglangMlaCondition(Record):
    """A config condition an MLA architecture must also meet: as written (`expression`, the
    reviewer's words) and in the rule language (`rule`, parsing.expressions.config_condition),
    which apron evaluates."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture", "expression")

    architecture: str
    expression: str  # the condition as written, whitespace collapsed
    rule: Expression
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.architecture}: {self.expression}"


class SglangExplicitMha(Record):
    """An architecture an elif branch explicitly sets to AttentionArch.MHA (not the else default).

    `mla_fields_read` lists latent-attention config fields (and helpers) the branch still reads:
    a model SGLang runs as MHA that another engine (vLLM's is_deepseek_mla) may treat as MLA."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture",)

    architecture: str
    branch: int
    mla_fields_read: tuple[str, ...]
    path: str
    symbol: str


class SglangDocsRow(Record):
    """One row of an SGLang supported-models table (2025 .md or 2026 .mdx layout)."""

    KEY: ClassVar[tuple[str, ...]] = ("path", "section", "family", "example_hf_ids")

    path: str
    section: str  # heading path above the table, from level 2 down
    family: str  # first column ("Model Family ..."), as plain text
    architectures: tuple[str, ...]  # architecture class names the row writes (often none)
    example_hf_ids: tuple[str, ...]  # code spans of the "Example ..." column
    other_columns: tuple[str, ...]  # "<column>=<text>" except the long Description column
    notes: tuple[str, ...]  # "<column>: [^label] <footnote text>"


class SglangArchitectureSet(Record):
    """An architecture named in one of the name sets ModelConfig's module tests (model_config.py).

    `set_name` is the predicate function (`is_hybrid_swa_model`) or the ModelConfig attribute
    (`ModelConfig.is_hybrid_swa_compress`) that tests the set; `architecture` "*" stands for
    any architecture whose config meets the condition (an opt-in by config field)."""

    KEY: ClassVar[tuple[str, ...]] = ("set_name", "architecture")

    set_name: str
    architecture: str
    member_returns: bool  # what the test gives for a member (False: the set lists exceptions)
    via: str  # "" when written in the set; "*NAME" when spread from a constant; "append"
    condition: str | None  # the extra condition as written; None when membership decides alone
    condition_rule: Expression  # the condition in the rule language; () when there is none
    path: str
    symbol: str  # the function or variable whose literal names the architecture

    def label(self) -> str:
        cond = f" when {self.condition}" if self.condition else ""
        return f"{self.set_name}: {self.architecture}{cond}"


class SglangHybridConfigClass(Record):
    """A config class one of SGLang's hybrid-arch functions (configs/hybrid_arch.py) accepts:
    the function returns a config for it, which selects the Mamba / linear-attention state pool.

    Matching is by `isinstance`, so subclasses defined in configs/ count (`via` names the class
    written in the check); `model_type` is the class's own attribute ("" when not found)."""

    KEY: ClassVar[tuple[str, ...]] = ("function", "config_class", "config_read")

    function: str  # e.g. "mamba2_config", "hybrid_gdn_config", "mambaish_config"
    config_class: str
    via: str  # "" when the check names the class; the named base class; "<function>()"
    model_type: str
    config_read: str  # which config is tested: "hf_config", "hf_config.get_text_config()", ...
    condition: str | None  # an extra condition as written; None when the class alone decides
    path: str
    symbol: str

    def label(self) -> str:
        cond = f" when {self.condition}" if self.condition else ""
        read = f" on {self.config_read}" if self.config_read != "hf_config" else ""
        return f"{self.function}: {self.config_class} ({self.model_type or '?'}){read}{cond}"


class SglangMemoryStep(Record):
    """One step of ServerArgs' static memory-fraction heuristic (`_handle_gpu_memory_settings`
    and the methods it calls), as data apron evaluates in `order`.

    part: "band" (chunked prefill size / decode cuda-graph max_bs per GPU-memory band and tp),
    "prefill_max_bs", "prefill_capture" (one range of the prefill capture sizes), "reserve" (a
    term of reserved_mem, MiB), "fraction", "vlm" (a constant of the VLM adjustment). `op`:
    "set", "add", "at_least" (max with `value`), "at_most" (min with `value`), "range" (the
    capture sizes: `value` is the max_bs, or the `range(...)` of one part), "round" (`value` is
    the fraction's expression), "constant", "default" (a getattr default), "test" (an `if`
    test taken when the `if` is reached: `target` is its code, a name the steps under it read),
    "unread" (a shape not read: `value` is (), see `code`). `value` and `when` are expressions of
    apron/expressions.py over the program's quantities, each a name spelled as its code
    (`self.tp_size`, `decode_cuda_graph_config.max_bs`, `self.use_mla_backend()`); `when` is the
    condition of the branches the step sits in (() = always)."""

    KEY: ClassVar[tuple[str, ...]] = ("part", "order")

    part: str
    order: int
    target: str
    op: str
    value: Expression
    when: Expression
    code: str
    path: str
    symbol: str


class SglangKvDtypeSet(Record):
    """A member of an architecture set SGLang's KV-cache dtype default reads
    (apron.extractors.sglang.kv_dtype_sets)."""

    KEY: ClassVar[tuple[str, ...]] = ("set_name", "architecture")

    set_name: str  # "_DEEPSEEK_FAMILY_ARCHS"
    architecture: str  # "" when the set is unknown
    status: str  # "read" or "unknown"
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.set_name}: {self.architecture or 'unknown'}"


class SglangArgOverride(Record):
    """A value SGLang's override registry (arg_groups/overrides.py) gives a pool-sizing server arg
    for some architectures: `architectures` (exact names) or `predicate` (its code), the `if`
    tests that lead to it, and whether a server started with default args gets it."""

    KEY: ClassVar[tuple[str, ...]] = ("function", "setting", "order")

    setting: str  # swa_full_tokens_ratio, mamba_full_memory_ratio, disable_hybrid_swa_memory, ...
    value: str  # the literal's code; "" when it is not a literal
    architectures: tuple[str, ...]
    predicate: str  # "" when keyed by exact names
    guards: tuple[str, ...]  # the tests on the way, as code
    applies_by_default: bool  # no test, or only "the field was left at its default"
    function: str
    order: int
    path: str
    symbol: str

    def label(self) -> str:
        who = ", ".join(self.architectures) or self.predicate
        when = f" when {' and '.join(self.guards)}" if self.guards else ""
        return f"{self.setting} = {self.value or '?'} for {who}{when}"


class SglangContextRule(Record):
    """One part of SGLang's default context length (`get_context_length` over the text config,
    apron.extractors.sglang.context_length): kind "key" (a config key tried, in `order`),
    "default" (returned when no key is set), "factor_key" (the rope-scaling key that multiplies
    the key's value, `value` its default), "factor_one_when_key" / "factor_one_when_rope_type"
    (the factor is 1 when rope scaling has that key / that rope_type), "scaling_attribute" (the
    config attribute holding rope scaling), "unread" (a statement not read: `code`)."""

    KEY: ClassVar[tuple[str, ...]] = ("kind", "order")

    kind: str
    order: int
    name: str
    value: str
    code: str
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.kind} {self.order}: {self.name or self.code} {self.value}".strip()


class SglangPrefillGraphRule(Record):
    """One step of how ServerArgs settles the prefill cuda-graph backend before it sizes the
    memory fraction (apron.extractors.sglang.prefill_graph): kind "switch" (the default backend
    `backend` becomes `target` when `condition` holds, `_apply_cuda_graph_compatibility`) or
    "disable" (a rule of the backend's `_disable_<backend>_..._if_incompatible` list: when
    `condition` holds the prefill graph is turned off); "unread" for a shape not read (`code`).
    `condition` is the rule's code, canonical (the reviewer's words); `rule` is the condition in
    the rule language, what apron evaluates (() for a row with no condition)."""

    KEY: ClassVar[tuple[str, ...]] = ("backend", "kind", "order")

    backend: str  # "breakable", "tc_piecewise", "full"
    kind: str
    order: int
    name: str  # the rule's label as SGLang logs it
    condition: str
    rule: Expression
    target: str
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.backend} {self.kind} {self.order}: {self.name or self.condition}"


class SglangServerArgDefault(Record):
    """The default a ServerArgs field starts with (apron.extractors.sglang.server_arg_defaults):
    an expression of the rule language; ("undef", code) for a default the reader does not read."""

    KEY: ClassVar[tuple[str, ...]] = ("field",)

    field: str
    default: Expression
    path: str
    symbol: str

    def label(self) -> str:
        return f"{self.field} = {infix(self.default)}"


class SglangConfigAttribute(Record):
    """An attribute one of SGLang's own configuration classes (configs/*.py) sets in its
    `__init__`, and from what: how SGLang presents a config.json's field through the class.

    kind: "kwarg" (the keyword argument `kwarg`, default `default` as written, "" without one),
    "sub_config" (`sub_class(**kwarg)` when the argument is a dict), "unread" (other code,
    `code`). `after_super`: set after `super().__init__(**kwargs)`, which sets the remaining
    keyword arguments as attributes, so this assignment wins over a JSON key of the same name."""

    KEY: ClassVar[tuple[str, ...]] = ("config_class", "attribute")

    config_class: str
    model_type: str  # the class's model_type ("" when not found)
    registered: bool  # in utils/hf_transformers' _CONFIG_REGISTRY (what AutoConfig builds)
    attribute: str
    kind: str
    kwarg: str
    default: str
    sub_class: str
    after_super: bool
    code: str
    path: str
    symbol: str

    def label(self) -> str:
        source = {
            "kwarg": f"{self.kwarg} (default {self.default or 'none'})",
            "sub_config": f"{self.sub_class}(**{self.kwarg})",
        }.get(self.kind, f"`{self.code}`")
        return f"{self.config_class}.{self.attribute} <- {source}"


class SglangConfigRewrite(Record):
    """An attribute SGLang's config loader sets on a sub-configuration for the model_types an
    `if config.model_type in (...)` block names (Gemma 4: the full-attention `global_*` values
    onto the base names, the sliding-window ones onto `swa_*`), in statement `order`.

    `source` is the sub-configuration's attribute the value is read from, as it is at that
    statement; `read`: "getattr" (None when absent) or "attribute" (AttributeError when absent);
    `when`: "always", "source_not_none" (`if local is not None:`) or "target_absent"
    (`if not hasattr(sub, target):`). kind "unread": a statement of another shape that touches
    the sub-configuration (`code`); apron then reads nothing of the block."""

    KEY: ClassVar[tuple[str, ...]] = ("model_type", "order")

    model_type: str
    sub_config: str  # e.g. "text_config"
    order: int
    kind: str  # "copy" or "unread"
    attribute: str
    source: str
    read: str
    when: str
    code: str
    path: str
    symbol: str

    def label(self) -> str:
        if self.kind != "copy":
            return f"{self.model_type} {self.order}: `{self.code}` (not read)"
        return (
            f"{self.model_type} {self.order}: {self.sub_config}.{self.attribute} <- "
            f"{self.sub_config}.{self.source} ({self.when})"
        )
