"""Rules as data: structured rule -> code -> extracted fields -> words, and the same meaning.

Hypothesis draws structured KV-head rules and their conditions (drawn as terms, a test's
shorthand: `(key, test, *operands)`, turned into expressions of apron/expressions.py by the
builder's constructors). Each rule is written out as a
miniature convertor method (the shape of vLLM's, hand-made here), extracted back, and must give
the same fields; its rendered words must name every key it reads; and apron's evaluation of the
fields must agree, on drawn configs, with the oracle: Python running that miniature method."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from apron import conditions as apron_conditions
from apron.config import ModelConfig, is_int
from apron.constraints import load_engine
from apron.engines.kv_head_scan import resolve_kv_heads
from apron.expressions import infix
from apron.extractors.parsing.expressions import (
    config_flag,
    config_has,
    config_value,
    equals,
    one_of,
    python_all,
    python_conjuncts,
    python_not,
)
from apron.extractors.serving import kv_heads
from apron.extractors.serving.rule_fields import rule_fields
from apron.extractors.vllm import convertor
from apron.generated.schema import KvHeadOverride as KvHeadOverrideRow

PATH = "vllm/transformers_utils/model_arch_config_convertor.py"
BASE = "ModelArchConfigConvertorBase"
FLAGS = ("ka", "kb", "kc")  # top-level keys a condition tests (none is an attribute-map alias)
VALUE_KEYS = ("ka", "kb", "sub.kd", "sub.ke")  # keys a rule reads its count from
STRINGS = ("x", "y", "z")
SCAN_KEY = "num_key_value_heads"  # the base scan finds this key in every drawn config

# -- strategies -----------------------------------------------------------------------------------

terms = st.one_of(
    st.tuples(st.sampled_from(FLAGS), st.sampled_from(("present", "absent", "truthy", "falsy"))),
    st.tuples(
        st.sampled_from(FLAGS), st.sampled_from(("equals", "not-equals")), st.sampled_from(STRINGS)
    ),
    st.builds(
        lambda key, test, values: (key, test, *values),
        st.sampled_from(FLAGS),
        st.sampled_from(("in", "not-in")),
        st.lists(st.sampled_from(STRINGS), min_size=1, max_size=3, unique=True),
    ),
)


def _expression(term: tuple[str, ...]):
    """The condition a drawn term stands for, as the builder writes it."""
    key, test, *operands = term
    return {
        "present": lambda: config_has(key),
        "absent": lambda: python_not(config_has(key)),
        "truthy": lambda: config_flag(key),
        "falsy": lambda: python_not(config_flag(key)),
        "equals": lambda: equals(config_value(key), operands[0]),
        "not-equals": lambda: equals(config_value(key), operands[0], False),
        "in": lambda: one_of(config_value(key), operands),
        "not-in": lambda: one_of(config_value(key), operands, False),
    }[test]()


def _condition(drawn) -> object:
    return python_all(_expression(t) for t in drawn)


conjunctions = (
    st.lists(terms, min_size=1, max_size=3, unique_by=lambda t: t[0]).map(tuple).map(_condition)
)
constants = st.integers(min_value=0, max_value=64).map(lambda n: ("constant", "", n))
key_values = st.sampled_from(VALUE_KEYS).map(lambda k: ("key", k, None))
base_scan = st.just(("base scan", "", None))
values = st.one_of(constants, key_values, base_scan)

rules = st.one_of(
    constants.map(lambda v: rule_fields("constant", gives=v)),
    base_scan.map(lambda v: rule_fields("base", gives=v)),
    st.builds(
        lambda k, o: rule_fields("reads", gives=k, otherwise=o),
        key_values,
        st.one_of(st.none(), values),
    ),
    st.builds(
        lambda w, g, o: rule_fields("conditional", when=w, gives=g, otherwise=o),
        conjunctions,
        values,
        values,
    ),
)
config_values = st.one_of(
    st.none(), st.integers(min_value=0, max_value=9), st.booleans(), st.sampled_from(STRINGS)
)
configs = st.builds(
    lambda top, sub: {
        **{k: v for k, v in top.items() if v is not None},
        "sub": {k: v for k, v in sub.items() if v is not None},
        SCAN_KEY: 4,
        "model_type": "m",
    },
    st.fixed_dictionaries({k: config_values for k in FLAGS}),
    st.fixed_dictionaries({k: config_values for k in ("kd", "ke")}),
)

# -- the miniature code of a rule -------------------------------------------------------------------


def _read(key: str) -> str:
    if "." in key:
        parent, leaf = key.split(".")
        return f'self.hf_text_config.{parent}["{leaf}"]'
    return f"self.hf_text_config.{key}"


def _has(key: str) -> str:
    if "." in key:
        parent, leaf = key.split(".")
        return f'"{leaf}" in self.hf_text_config.{parent}'
    return f'hasattr(self.hf_text_config, "{key}")'


def _code(condition) -> str:
    """The Python code vLLM writes for a condition of a drawn shape."""
    node = condition[0]
    if node == "and":
        return f"{_code(condition[1])} and {_code(condition[2])}"
    if node == "not" and condition[1][0] == "in":
        value, listed = condition[1][1:]
        return f"{_code(value)} not in {_code(listed)}"
    if node == "not":
        return f"not {_code(condition[1])}"
    if node == "has":
        return _has(condition[1])
    if node == "hpget" and condition[1] == "model_type":
        return "self.hf_config.model_type"
    if node == "hpget":
        default = "False" if len(condition) == 3 else "None"
        return f'getattr(self.hf_text_config, "{condition[1]}", {default})'
    if node in ("==", "!=", "in"):
        return f"{_code(condition[1])} {node} {_code(condition[2])}"
    if node == "str":
        return f'"{condition[1]}"'
    if node == "list":
        return "(" + ", ".join(_code(item) for item in condition[1:]) + ",)"
    raise AssertionError(condition)


def _config_keys(condition) -> set[str]:
    if not isinstance(condition, tuple) or not condition:
        return set()
    if condition[0] in ("has", "hpget"):
        return {condition[1]}
    return set().union(*(_config_keys(part) for part in condition[1:]))


def _value_code(what: str, key: str, constant: int | None) -> str:
    if what == "constant":
        return str(constant)
    if what == "key":
        return _read(key)
    return "super().get_total_num_kv_heads()"


def rule_code(fields: dict) -> str:
    """The body of a get_total_num_kv_heads override that does what `fields` say."""
    gives = _value_code(fields["gives"], fields["gives_key"], fields["gives_constant"])
    otherwise = _value_code(
        fields["otherwise"], fields["otherwise_key"], fields["otherwise_constant"]
    )
    if fields["kind"] in ("constant", "base") or (
        fields["kind"] == "reads" and not fields["otherwise"]
    ):
        return f"        return {gives}\n"
    if fields["kind"] == "reads":
        test = _has(fields["gives_key"])
    else:
        test = _code(fields["when"])
    return f"        if {test}:\n            return {gives}\n        return {otherwise}\n"


def convertor_source(body: str) -> str:
    return (
        f"class {BASE}:\n"
        "    def __init__(self, config):\n"
        "        self.hf_config = self.hf_text_config = config\n"
        "\n"
        "    def get_total_num_kv_heads(self) -> int:\n"
        f'        return getattr(self.hf_text_config, "{SCAN_KEY}")\n'
        "\n"
        "    def is_deepseek_mla(self) -> bool:\n"
        "        return False\n"
        "\n"
        "\n"
        f"class RuleConvertor({BASE}):\n"
        "    def get_total_num_kv_heads(self) -> int:\n"
        f"{body}"
        "\n"
        "\n"
        'MODEL_ARCH_CONFIG_CONVERTORS = {"m": RuleConvertor}\n'
    )


def _namespace(config: dict) -> SimpleNamespace:
    return SimpleNamespace(**config)  # nested dicts stay dicts: `sub["kd"]`, `"kd" in sub`


def oracle(source: str, config: dict) -> int | None:
    """What the miniature method returns for `config`; None when it fails or is not an int."""
    scope: dict = {}
    exec(compile(source, "<miniature>", "exec"), scope)  # noqa: S102 - our own test text
    try:
        value = scope["RuleConvertor"](_namespace(config)).get_total_num_kv_heads()
    except (AttributeError, KeyError, TypeError):
        return None
    return value if is_int(value) else None


def _keys_read(fields: dict) -> set[str]:
    keys = _config_keys(fields["when"]) | _config_keys(fields["excludes"])
    return keys | {k for k in (fields["gives_key"], fields["otherwise_key"]) if k}


# -- properties -------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(rules, st.lists(configs, min_size=1, max_size=4))
def test_rule_round_trips_through_code_words_and_evaluation(fields, sample_configs):
    # `if has k: return k` is how vLLM writes a read with a default: the extractor calls it "reads"
    assume(fields["when"] != config_has(fields["gives_key"]))
    source = convertor_source(rule_code(fields))
    (extracted,) = convertor.kv_head_overrides_by_convertor(source, PATH, BASE)
    assert {k: getattr(extracted, k) for k in fields} == fields  # code -> the same fields

    for key in _keys_read(fields):
        assert key in extracted.rule  # the words name every key the rule reads
    for what in ("gives", "otherwise"):
        if fields[f"{what}_constant"] is not None:
            assert str(fields[f"{what}_constant"]) in extracted.rule

    engine = load_engine("vllm")
    assert engine is not None
    row = KvHeadOverrideRow(**extracted.model_dump())
    engine = engine._replace(facts={**engine.facts, "kv_head_overrides": (row,)})
    for config in sample_configs:
        heads, _ = resolve_kv_heads(ModelConfig(config, "drawn"), engine)
        assert heads.count == oracle(source, config), (extracted.rule, config)


@settings(max_examples=200, deadline=None)
@given(terms, configs)
def test_condition_words_and_truth_match_the_code(term, config):
    condition = _expression(term)
    words = infix(condition)
    assert term[0] in words and all(o in words for o in term[2:])
    scope: dict = {}
    code = f"def check(self):\n    return {_code(condition)}\n"
    exec(compile(code, "<term>", "exec"), scope)  # noqa: S102 - our own test text
    truth = bool(scope["check"](SimpleNamespace(hf_text_config=_namespace(config))))
    model = ModelConfig(config, "drawn")
    assert apron_conditions.holds(model, condition).value is truth
    assert apron_conditions.holds(model, python_not(condition)).value is (not truth)


chains = st.builds(
    lambda first, second, otherwise: [
        rule_fields("conditional", when=first[0], gives=first[1]),
        rule_fields("conditional", when=second[0], gives=second[1], otherwise=otherwise),
    ],
    st.tuples(conjunctions, values),
    st.tuples(conjunctions, values),
    values,
)


@settings(max_examples=100, deadline=None)
@given(chains, st.lists(configs, min_size=1, max_size=4))
def test_branch_chain_round_trips_as_ordered_rules(chain, sample_configs):
    body = "".join(
        f"        if {_code(rule['when'])}:\n"
        f"            return {_value_code(rule['gives'], rule['gives_key'], rule['gives_constant'])}\n"
        for rule in chain
    )
    last = chain[-1]
    body += (
        f"        return "
        f"{_value_code(last['otherwise'], last['otherwise_key'], last['otherwise_constant'])}\n"
    )
    source = convertor_source(body)
    extracted = convertor.kv_head_overrides_by_convertor(source, PATH, BASE)
    assert [r.rule_order for r in extracted] == [0, 1]
    assert [
        {k: getattr(r, k) for k in fields} for r, fields in zip(extracted, chain, strict=True)
    ] == chain

    engine = load_engine("vllm")
    assert engine is not None
    rows = tuple(KvHeadOverrideRow(**r.model_dump()) for r in extracted)
    engine = engine._replace(facts={**engine.facts, "kv_head_overrides": rows})
    for config in sample_configs:
        heads, _ = resolve_kv_heads(ModelConfig(config, "drawn"), engine)
        assert heads.count == oracle(source, config), ([r.rule for r in extracted], config)


model_type_terms = st.one_of(
    st.tuples(
        st.just("model_type"), st.sampled_from(("equals", "not-equals")), st.sampled_from("mx")
    ),
    st.builds(
        lambda test, values: ("model_type", test, *values),
        st.sampled_from(("in", "not-in")),
        st.lists(st.sampled_from(("m", "x", "falcon")), min_size=1, max_size=2, unique=True),
    ),
)
star_rules = st.builds(
    lambda when, gives, mt, flags: rule_fields(
        "conditional", when=_condition(when), gives=gives, excludes=_condition((mt, *flags))
    ),
    st.lists(terms, min_size=1, max_size=2, unique_by=lambda t: t[0]).map(tuple),
    st.one_of(constants, key_values),
    model_type_terms,
    st.lists(terms, min_size=1, max_size=2, unique_by=lambda t: t[0]),
)


def inline_source(fields: dict) -> str:
    """A ModelConfig whose get_total_num_kv_heads starts with this "*" rule (2025 layouts)."""
    excluded = _code(fields["excludes"])
    when = _code(fields["when"])
    gives = _value_code(fields["gives"], fields["gives_key"], fields["gives_constant"])
    return (
        "class ModelConfig:\n"
        "    def __init__(self, config):\n"
        "        self.hf_config = self.hf_text_config = config\n"
        "\n"
        "    def get_total_num_kv_heads(self) -> int:\n"
        f"        excluded = ({excluded})\n"
        f"        if not excluded and {when}:\n"
        f"            return {gives}\n"
        f'        attributes = ["{SCAN_KEY}"]\n'
        "        for attr in attributes:\n"
        "            num_kv_heads = getattr(self.hf_text_config, attr, None)\n"
        "            if num_kv_heads is not None:\n"
        "                return num_kv_heads\n"
        "        return self.hf_text_config.num_attention_heads\n"
    )


@settings(max_examples=100, deadline=None)
@given(star_rules, st.lists(configs, min_size=1, max_size=4), st.sampled_from("mx"))
def test_star_rule_with_excludes_round_trips(fields, sample_configs, model_type):
    source = inline_source(fields)
    (extracted,) = kv_heads.kv_head_overrides_inline(source, "vllm/config.py", "ModelConfig")
    assert extracted.model_type == "*"
    assert {k: getattr(extracted, k) for k in fields} == fields
    for key in _config_keys(fields["when"]) | {fields["gives_key"]} - {""}:
        assert key in extracted.rule

    engine = load_engine("vllm")
    assert engine is not None
    row = KvHeadOverrideRow(**extracted.model_dump())
    engine = engine._replace(facts={**engine.facts, "kv_head_overrides": (row,)})
    scope: dict = {}
    exec(compile(source, "<miniature>", "exec"), scope)  # noqa: S102 - our own test text
    for config in sample_configs:
        config = {**config, "model_type": model_type}
        try:
            expected = scope["ModelConfig"](_namespace(config)).get_total_num_kv_heads()
        except (AttributeError, KeyError):
            expected = None
        heads, _ = resolve_kv_heads(ModelConfig(config, "drawn"), engine)
        assert heads.count == (expected if is_int(expected) else None), (extracted.rule, config)


def test_a_condition_apron_cannot_evaluate_is_unknown_never_a_guess():
    model = ModelConfig({"ka": 1}, "t")
    ev = apron_conditions.holds(model, python_all([config_flag("ka"), ("<", "n_unread", 0)]))
    assert ev.value is None and "n_unread" in ev.problem


def test_the_empty_condition_holds_and_conjuncts_split_back():
    model = ModelConfig({}, "t")
    assert apron_conditions.holds(model, ()).value is True
    parts = [config_has("a"), python_not(config_flag("b")), equals(config_value("c"), "x")]
    assert python_conjuncts(python_all(parts)) == parts


def test_an_absent_flag_reads_as_false_with_a_note():
    ev = apron_conditions.holds(ModelConfig({}, "t"), python_not(config_flag("multi_query")))
    assert ev == (True, ("multi_query absent from the config: read as false",), "")
