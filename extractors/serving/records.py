"""Record types of the serving rules that more than one engine's source states alike (vLLM's
ModelConfig and SGLang's, which follows it): the KV-head scan and its per-model overrides, the
serving defaults, the tensor-parallel rules and the state splits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import model_validator

from apron.extractors.parsing.expressions import Expression, checked, infix
from apron.extractors.records import Record


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
    "conditional" gives `gives` when the condition `when` holds and does `otherwise` when not
    ("" = no else branch: the next rule, then the scan). "derived" computes the count from
    `derived_from` in a loop and "opaque" is code the extractor did not structure: neither can
    be evaluated from its fields, and `reason` says why.
    A "*" rule does not apply when `excludes` holds. `rule` is rendered from the
    other fields."""

    KEY: ClassVar[tuple[str, ...]] = ("model_type", "rule_order")

    model_type: str
    rule_order: int  # position among the rules that apply to this model type
    convertor_class: str  # "" when the rule sits inline in ModelConfig (older layouts)
    kind: str  # one of RULE_KINDS
    when: Expression  # conditional: the condition (apron/expressions.py); () = none
    gives: str  # one of RULE_VALUES; "" for derived and opaque rules
    gives_key: str  # the config key (dotted path) read when gives == "key"
    gives_constant: int | None  # the count when gives == "constant"
    otherwise: str  # one of RULE_VALUES, or "" when there is no else branch
    otherwise_key: str
    otherwise_constant: int | None
    derived_from: str  # derived: the config key the code loops over; "" when not one key
    reason: str  # derived, opaque: why the fields cannot be evaluated (the code, in words)
    excludes: Expression  # "*" rules: the condition under which the rule does not apply
    rule: str  # words rendered from the fields above
    path: str
    symbol: str

    @model_validator(mode="before")
    @classmethod
    def _render_rule(cls, data: Any) -> Any:
        return rendered_field(data, "rule", kv_rule_words)

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
        when = infix(checked(fields.get("when", ())))
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
    problem = _value_problem(
        "gives", rule.gives, rule.gives_key, rule.gives_constant
    ) or _value_problem("otherwise", rule.otherwise, rule.otherwise_key, rule.otherwise_constant)
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
        return "a conditional rule needs a condition"
    if rule.kind != "conditional" and rule.when:
        return f"a {rule.kind} rule has no condition"
    if (rule.kind in ("derived", "opaque")) != bool(rule.reason):
        return "reason is set exactly for derived and opaque rules"
    if rule.kind != "derived" and rule.derived_from:
        return "derived_from is set only for derived rules"
    if rule.excludes and rule.model_type != "*":
        return "only a '*' rule has excludes"
    return ""


def rendered_field(data: Any, name: str, render: Callable[[Mapping[str, Any]], str]) -> Any:
    """`data` with `name` rendered from the other fields; an error when a given text differs."""
    if not isinstance(data, Mapping):
        return data
    words = render(data)
    given = data.get(name)
    if given is not None and given != words:
        raise ValueError(f"{name} {given!r} is not what the fields say ({words!r})")
    return {**data, name: words}


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
    when: Expression  # the condition under which the rule applies; () = always
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
        return self

    def label(self) -> str:
        when = f" when {infix(self.when)}" if self.when != () else ""
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
