"""The vLLM code facts from miniature convertor/config text: one pure function per fact."""

from __future__ import annotations

import pytest

from apron.expressions import infix
from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.serving import kv_heads
from apron.extractors.vllm import convertor
from tests.vllm_miniatures import (
    CONFIG_SINGLE_PATH,
    CONVERTOR_PATH,
    CONVERTOR_V1,
    CONVERTOR_V2,
    MODEL_CONFIG_OLD,
)

BASE = "ModelArchConfigConvertorBase"


def mla(text, path=CONVERTOR_PATH, cls=BASE):
    return [(r.scope, r.model_type) for r in convertor.mla_model_types(text, path, cls)]


def gates(text, path=CONVERTOR_PATH, cls=BASE):
    rows = convertor.mla_gates(text, path, cls)
    for g in rows:  # the words are rendered from the structured condition
        assert g.when == infix(g.condition)
    return [(g.scope, g.when, g.requires_non_null, g.other_conditions) for g in rows]


def test_mla_model_types_main_and_eagle_in_source_order():
    assert mla(CONVERTOR_V1) == [
        ("main", "deepseek_v2"),
        ("main", "deepseek_v3"),
        ("eagle_inner", "deepseek_v3"),
    ]


def test_mla_model_types_second_commit_adds_kimi():
    assert ("main", "kimi_k2") in mla(CONVERTOR_V2)


def test_mla_model_types_older_layout_with_line_continuation():
    assert mla(MODEL_CONFIG_OLD, CONFIG_SINGLE_PATH, "ModelConfig") == [
        ("main", "deepseek_v2"),
        ("main", "deepseek_v3"),
        ("eagle_inner", "deepseek_v2"),
    ]


def test_mla_model_types_resolve_module_constant():
    text = (
        'MLA_TYPES = ("deepseek_v2", "glm_moe_dsa")\n'
        "class ModelConfig:\n"
        "    def is_deepseek_mla(self):\n"
        "        if self.hf_text_config.model_type in MLA_TYPES:\n"
        "            return self.hf_text_config.kv_lora_rank is not None\n"
        "        return False\n"
    )
    assert mla(text, "vllm/config.py", "ModelConfig") == [
        ("main", "deepseek_v2"),
        ("main", "glm_moe_dsa"),
    ]


def test_mla_gate_always_kv_lora_rank():
    assert gates(CONVERTOR_V1) == [
        ("main", "always", ("kv_lora_rank",), ()),
        ("eagle_inner", "always", ("kv_lora_rank",), ()),
    ]


def test_mla_gate_compress_ratios_needs_head_dim():
    assert gates(CONVERTOR_V2)[:2] == [
        ("main", "'compress_ratios' in hparams", ("head_dim",), ()),
        ("main", "not ('compress_ratios' in hparams)", ("kv_lora_rank",), ()),
    ]
    rows = convertor.mla_gates(CONVERTOR_V2, CONVERTOR_PATH, BASE)
    assert [g.condition for g in rows[:2]] == [
        ("has", "compress_ratios"),
        ("not", ("has", "compress_ratios")),
    ]


def test_mla_gate_branch_on_an_unstructured_test_is_opaque():
    text = CONVERTOR_V2.replace(
        'if hasattr(self.hf_text_config, "compress_ratios"):', "if self.check_v4(1):", 1
    )
    assert text != CONVERTOR_V2
    (main,) = [g for g in convertor.mla_gates(text, CONVERTOR_PATH, BASE) if g.scope == "main"]
    assert main.condition == () and main.other_conditions[0].startswith("opaque: if self.check_v4")


def test_mla_gate_unrecognised_condition_is_kept_in_words():
    text = CONVERTOR_V1.replace(
        'return getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n        elif',
        'return self.use_mla and getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n'
        "        elif",
        1,
    )
    assert gates(text)[0] == ("main", "always", ("kv_lora_rank",), ("use_mla",))


def test_kv_head_aliases_keep_upstream_order():
    rows = kv_heads.kv_head_aliases(CONVERTOR_V2, CONVERTOR_PATH, BASE)
    assert [(r.position, r.key) for r in rows] == [
        (0, "n_head_kv"),
        (1, "num_kv_heads"),
        (2, "num_key_value_heads"),
        (3, "num_attention_groups"),
    ]


def test_kv_head_aliases_ignore_a_list_used_for_membership():
    rows = kv_heads.kv_head_aliases(MODEL_CONFIG_OLD, CONFIG_SINGLE_PATH, "ModelConfig")
    assert [r.key for r in rows] == ["n_head_kv", "num_kv_heads", "num_key_value_heads"]


@pytest.mark.parametrize(
    ("text", "path", "cls", "expected"),
    [
        (
            CONVERTOR_V1,
            CONVERTOR_PATH,
            BASE,
            ("num_attention_heads", "self.get_total_num_attention_heads"),
        ),
        (
            MODEL_CONFIG_OLD,
            CONFIG_SINGLE_PATH,
            "ModelConfig",
            ("num_attention_heads", "self.hf_text_config.num_attention_heads"),
        ),
    ],
)
def test_kv_head_fallback_is_silent_mha(text, path, cls, expected):
    (row,) = kv_heads.kv_head_fallback(text, path, cls)
    assert (row.fallback, row.expression) == expected


def test_kv_head_overrides_by_convertor_class_and_inheritance():
    rows = convertor.kv_head_overrides_by_convertor(CONVERTOR_V1, CONVERTOR_PATH, BASE)
    assert {(r.model_type, r.convertor_class, r.kind, r.rule) for r in rows} == {
        ("mamba", "MambaConvertor", "constant", "constant 0"),
        ("falcon_mamba", "FalconMambaConvertor", "constant", "constant 0"),  # inherited
        (
            "falcon",
            "FalconConvertor",
            "conditional",
            "1 when not hparams.get('new_decoder_architecture', False) and "
            "hparams.get('multi_query', False); else base scan",
        ),
        ("mpt", "MptConvertor", "reads", "reads attn_config.kv_n_heads, else num_attention_heads"),
    }  # "quiet" inherits the plain scan: no row
    inherited = next(r for r in rows if r.model_type == "falcon_mamba")
    assert inherited.symbol == "MambaConvertor.get_total_num_kv_heads"


def test_kv_head_override_of_an_unknown_class_is_opaque_not_dropped():
    text = CONVERTOR_V1.replace('"mamba": MambaConvertor,', '"mamba": ImportedConvertor,')
    rows = convertor.kv_head_overrides_by_convertor(text, CONVERTOR_PATH, BASE)
    mamba = next(r for r in rows if r.model_type == "mamba")
    assert mamba.kind == "opaque" and "ImportedConvertor" in mamba.rule


def test_kv_head_override_too_complex_is_opaque_with_location():
    text = CONVERTOR_V1.replace(
        "    def get_total_num_kv_heads(self) -> int:\n        return 0\n",
        "    def get_total_num_kv_heads(self) -> int:\n        x = compute(self)\n"
        "        while x:\n            x -= 1\n        return x\n",
        1,
    )
    rows = convertor.kv_head_overrides_by_convertor(text, CONVERTOR_PATH, BASE)
    mamba = next(r for r in rows if r.model_type == "mamba")
    assert mamba.kind == "opaque"
    assert mamba.rule == f"opaque: see {CONVERTOR_PATH}::MambaConvertor.get_total_num_kv_heads"


def test_kv_head_overrides_inline_older_layout_with_scope():
    rows = kv_heads.kv_head_overrides_inline(MODEL_CONFIG_OLD, CONFIG_SINGLE_PATH, "ModelConfig")
    assert [(r.model_type, r.rule_order, r.kind, r.rule, r.excludes) for r in rows] == [
        (
            "*",
            0,
            "conditional",
            "1 when hparams.get('multi_query', False)",
            (
                "and",
                ("in", ("hpget", "model_type"), ("list", ("str", "falcon"), ("str", "RefinedWeb"))),
                ("hpget", "new_decoder_architecture", False),
            ),
        ),
        ("mpt", 1, "reads", "reads attn_config.kv_n_heads, else num_attention_heads", ()),
        ("nemotron-nas", 2, "derived", "derived from block_configs", ()),
        ("*", 3, "conditional", "0 when hparams.get('is_attention_free', False)", ()),
    ]
    star = rows[0]
    assert (star.when, star.gives, star.gives_constant, star.otherwise) == (
        ("hpget", "multi_query", False),
        "constant",
        1,
        "",  # no else branch: the next rule, then the scan
    )
    assert rows[2].derived_from == "block_configs"
    assert rows[2].reason.startswith(
        "computed in a loop: for block in self.hf_config.block_configs"
    )


def test_kv_head_override_fields_by_convertor():
    rows = convertor.kv_head_overrides_by_convertor(CONVERTOR_V1, CONVERTOR_PATH, BASE)
    by_type = {r.model_type: r for r in rows}
    falcon = by_type["falcon"]
    assert falcon.when == (
        "and",
        ("not", ("hpget", "new_decoder_architecture", False)),
        ("hpget", "multi_query", False),
    )
    assert (falcon.gives, falcon.gives_constant, falcon.otherwise) == ("constant", 1, "base scan")
    mpt = by_type["mpt"]
    assert (mpt.gives, mpt.gives_key, mpt.otherwise, mpt.otherwise_key) == (
        "key",
        "attn_config.kv_n_heads",
        "key",
        "num_attention_heads",
    )
    assert (by_type["mamba"].gives, by_type["mamba"].gives_constant) == ("constant", 0)


def _with_falcon_body(body: str) -> str:
    old = (
        '        new_arch = getattr(self.hf_text_config, "new_decoder_architecture", False)\n'
        '        if not new_arch and getattr(self.hf_text_config, "multi_query", False):\n'
        "            return 1\n"
        "        return super().get_total_num_kv_heads()\n"
    )
    assert old in CONVERTOR_V1
    return CONVERTOR_V1.replace(old, body)


def _falcon_rules(body: str):
    rows = convertor.kv_head_overrides_by_convertor(_with_falcon_body(body), CONVERTOR_PATH, BASE)
    return [r for r in rows if r.model_type == "falcon"]


def test_two_branches_become_two_ordered_rules():
    rules = _falcon_rules(
        '        if hasattr(self.hf_text_config, "n_kv"):\n'
        "            return self.hf_text_config.n_kv\n"
        '        if self.hf_config.model_type != "x":\n'
        "            return 2\n"
        "        return 7\n"
    )
    assert [(r.rule_order, r.when, r.rule) for r in rules] == [
        (0, ("has", "n_kv"), "n_kv when 'n_kv' in hparams"),
        (
            1,
            ("!=", ("hpget", "model_type"), ("str", "x")),
            "2 when hparams.get('model_type') != 'x'; else 7",
        ),
    ]


def test_base_scan_in_an_early_branch_ends_the_rules():
    """`if c1: return super()...` returns the scan at once; the later branch is not tried."""
    from apron.config import ModelConfig
    from apron.constraints import load_engine
    from apron.engines.kv_head_scan import resolve_kv_heads
    from apron.generated.schema import KvHeadOverride as Row

    rules = _falcon_rules(
        '        if getattr(self.hf_text_config, "a", False):\n'
        "            return super().get_total_num_kv_heads()\n"
        '        if getattr(self.hf_text_config, "b", False):\n'
        "            return 2\n"
        "        return 7\n"
    )
    assert [r.rule for r in rules] == [
        "base scan when hparams.get('a', False)",
        "2 when hparams.get('b', False); else 7",
    ]
    engine = load_engine("vllm")
    assert engine is not None
    rows = tuple(Row(**r.model_dump()) for r in rules)
    engine = engine._replace(facts={**engine.facts, "kv_head_overrides": rows})

    def heads(**config):
        model = ModelConfig({"model_type": "falcon", "num_key_value_heads": 4, **config}, "t")
        return resolve_kv_heads(model, engine)[0].count

    assert (heads(a=True, b=True), heads(b=True), heads()) == (4, 2, 7)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            '        if hasattr(self.hf_text_config, "a") or self.hf_text_config.b:\n'
            "            return 1\n"
            "        return super().get_total_num_kv_heads()\n",
            "1 when has a or b; else base scan",
        ),
        (  # a getattr default of True: an absent flag does not read as false
            '        if getattr(self.hf_text_config, "multi_query", True):\n'
            "            return 1\n"
            "        return super().get_total_num_kv_heads()\n",
            "1 when multi_query; else base scan",
        ),
        ("        return self.compute()\n", "returns compute()"),
    ],
)
def test_rule_that_cannot_be_structured_is_opaque_with_its_words(body, reason):
    (rule,) = _falcon_rules(body)
    assert (rule.kind, rule.reason, rule.when, rule.gives) == ("opaque", reason, (), "")
    assert rule.rule == f"opaque: {reason}"


def test_rule_words_must_match_the_fields():
    (rule,) = _falcon_rules("        return 3\n")
    fields = rule.model_dump()
    assert type(rule)(**fields) == rule  # a row read back from generated/ validates
    with pytest.raises(ValueError, match="is not what the fields say"):
        type(rule)(**{**fields, "rule": "constant 4"})
    with pytest.raises(ValueError, match="gives_constant must be set"):
        type(rule)(**{**fields, "gives_constant": None, "rule": None})


def test_kv_head_fallback_names_the_config_key():
    (row,) = kv_heads.kv_head_fallback(CONVERTOR_V1, CONVERTOR_PATH, BASE)
    assert row.fallback_key == "num_attention_heads"


@pytest.mark.parametrize(
    ("mutation", "anchor"),
    [
        (
            ("def is_deepseek_mla(", "def is_mla_model("),
            "ModelArchConfigConvertorBase.is_deepseek_mla",
        ),
        (
            ("class ModelArchConfigConvertorBase:", "class RenamedBase:"),
            "ModelArchConfigConvertorBase.is_deepseek_mla",
        ),
    ],
)
def test_missing_anchor_function_is_an_error_naming_it(mutation, anchor):
    with pytest.raises(AnchorError) as info:
        convertor.mla_model_types(CONVERTOR_V1.replace(*mutation), CONVERTOR_PATH, BASE)
    assert info.value.anchor == anchor
    assert info.value.paths == (CONVERTOR_PATH,)


def test_anchor_present_but_empty_is_an_error():
    text = CONVERTOR_V1.replace('"deepseek_v2",\n            "deepseek_v3",  # the big one\n', "")
    text = text.replace('in ("deepseek_v3",)', "in ()")
    with pytest.raises(AnchorError, match="no `model_type in"):
        convertor.mla_model_types(text, CONVERTOR_PATH, BASE)


def test_alias_list_missing_is_an_error():
    text = CONVERTOR_V1.replace(
        '"n_head_kv",  # falcon\n            "num_kv_heads",\n            "num_key_value_heads",\n',
        "",
    )
    with pytest.raises(AnchorError, match="no list of config keys"):
        kv_heads.kv_head_aliases(text, CONVERTOR_PATH, BASE)


def test_convertor_map_missing_is_an_error():
    text = CONVERTOR_V1.replace("MODEL_ARCH_CONFIG_CONVERTORS", "CONVERTORS_BY_TYPE")
    with pytest.raises(AnchorError) as info:
        convertor.kv_head_overrides_by_convertor(text, CONVERTOR_PATH, BASE)
    assert info.value.anchor == "MODEL_ARCH_CONFIG_CONVERTORS"


def test_malformed_python_is_a_parse_error_naming_the_file():
    with pytest.raises(ParseError) as info:
        convertor.mla_model_types(CONVERTOR_V1 + "\ndef broken(:\n", CONVERTOR_PATH, BASE)
    assert CONVERTOR_PATH in str(info.value)
