"""llama.cpp sliding-window rules: the single `switch (arch)` loader and per-model loaders."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.llamacpp import sliding_window
from apron.extractors.parsing.cpp_ts import parse_cpp
from tests.llamacpp_miniatures import (
    MODEL_CPP,
    MODEL_CPP_V1,
    MODEL_CPP_V2,
    MODEL_FILES_V2,
    MODELS_H,
    MODELS_H_TEXT,
)

NAMES = {
    "LLM_ARCH_GEMMA2": "gemma2",
    "LLM_ARCH_BERT": "bert",
    "LLM_ARCH_JAMBA": "jamba",
    "LLM_ARCH_DEEPSEEK2": "deepseek2",
    "LLM_ARCH_LLAMA": "llama",
}


def rules_v1():
    code = sliding_window.switch_layout_code(MODEL_CPP_V1, MODEL_CPP)
    rules, warnings = sliding_window.sliding_window_rules(code, NAMES)
    return {r.arch: r for r in rules}, warnings


def rules_v2(files=None, models_h=MODELS_H_TEXT):
    pairs = sliding_window.mapping_classes(MODEL_CPP_V2, MODEL_CPP)
    methods = sliding_window.hparams_methods(sorted((files or MODEL_FILES_V2).items()))
    bases = sliding_window.struct_bases(models_h, MODELS_H)
    code, warnings = sliding_window.per_model_code(pairs, methods, bases, MODELS_H)
    rules, more = sliding_window.sliding_window_rules(code, NAMES)
    return {r.arch: r for r in rules}, warnings + more


@pytest.mark.parametrize("read", [rules_v1, rules_v2], ids=["switch", "per-model"])
def test_period_pattern_with_gguf_overrides(read):
    rules, _ = read()
    gemma = rules["LLM_ARCH_GEMMA2"]
    assert gemma.swa_types == ("standard",) and not gemma.conditional
    assert (gemma.pattern, gemma.period_default, gemma.dense_first) == ("period", 2, False)
    assert gemma.pattern_gguf_key == "LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN"
    assert gemma.window_literals == (4096,)
    assert (gemma.window_gguf_key, gemma.window_gguf_required) == (
        "LLM_KV_ATTENTION_SLIDING_WINDOW",
        False,
    )
    assert "LLM_ARCH_LLAMA" not in rules  # no sliding-window code at all


@pytest.mark.parametrize("read", [rules_v1, rules_v2], ids=["switch", "per-model"])
def test_conditional_window_type_and_dense_first(read):
    rules, _ = read()
    bert = rules["LLM_ARCH_BERT"]
    assert bert.swa_types == ("symmetric", "none") and bert.conditional
    assert bert.conditions == (
        "symmetric when has(LLM_KV_ATTENTION_SLIDING_WINDOW) && hparams.n_swa > 0",
        "pattern when has(LLM_KV_ATTENTION_SLIDING_WINDOW) && hparams.n_swa > 0",
        "none when !(has(LLM_KV_ATTENTION_SLIDING_WINDOW) && hparams.n_swa > 0)",
    )
    assert (bert.period_default, bert.dense_first) == (3, True)
    # grouped case labels (v1) and an inherited loader (v2) give DEEPSEEK2 the same rule
    deepseek = rules["LLM_ARCH_DEEPSEEK2"]
    assert deepseek.model_copy(
        update={"arch": "", "gguf_name": "", "model_class": "", "symbol": ""}
    ) == bert.model_copy(update={"arch": "", "gguf_name": "", "model_class": "", "symbol": ""})


@pytest.mark.parametrize("read", [rules_v1, rules_v2], ids=["switch", "per-model"])
def test_per_layer_pattern_and_required_window(read):
    rules, _ = read()
    jamba = rules["LLM_ARCH_JAMBA"]
    assert jamba.swa_types == ("chunked",)
    assert (jamba.pattern, jamba.period_default, jamba.dense_first) == (
        "per-layer array",
        None,
        None,
    )
    assert jamba.window_gguf_required is True


def test_per_model_layout_names_class_and_method():
    rules, warnings = rules_v2()
    assert rules["LLM_ARCH_DEEPSEEK2"].model_class == "llama_model_deepseek2"
    assert rules["LLM_ARCH_DEEPSEEK2"].symbol == "llama_model_bert::load_arch_hparams"
    assert rules["LLM_ARCH_DEEPSEEK2"].path == "src/models/bert.cpp"
    assert warnings == []
    old, _ = rules_v1()
    assert old["LLM_ARCH_GEMMA2"].symbol == "llama_model::load_hparams case LLM_ARCH_GEMMA2"


def test_computed_pattern_is_kept_as_code():
    files = dict(MODEL_FILES_V2)
    files["src/models/jamba.cpp"] = """\
void llama_model_jamba::load_arch_hparams(llama_model_loader & ml) {
    if (const auto is_swa = ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false); is_swa && hparams.n_swa > 0) {
        hparams.swa_type = LLAMA_SWA_TYPE_STANDARD;
        for (uint32_t il = 0; il < hparams.n_layer; ++il) {
            hparams.swa_layers[il] = !hparams.recurrent_layer_arr[il];
        }
    }
}
"""
    rules, _ = rules_v2(files)
    jamba = rules["LLM_ARCH_JAMBA"]
    assert jamba.pattern == "computed"
    assert jamba.other == ("hparams.swa_layers[il] = !hparams.recurrent_layer_arr[il]",)
    assert jamba.conditions[0] == (
        "standard when has(LLM_KV_ATTENTION_SLIDING_WINDOW) && hparams.n_swa > 0"
    )


def _renamed(text: str) -> str:
    """llama.cpp after the 2026-05-16 pin: the per-layer SWA member is `is_swa_impl`."""
    return text.replace("hparams.swa_layers", "hparams.is_swa_impl")


def test_the_renamed_per_layer_member_reads_as_the_old_one():
    old, old_warnings = rules_v1()
    assert _renamed(MODEL_CPP_V1) != MODEL_CPP_V1
    code = sliding_window.switch_layout_code(_renamed(MODEL_CPP_V1), MODEL_CPP)
    rules, warnings = sliding_window.sliding_window_rules(code, NAMES)
    assert {r.arch: r for r in rules} == old and warnings == old_warnings
    assert old["LLM_ARCH_JAMBA"].pattern == "per-layer array"
    files = {path: _renamed(text) for path, text in MODEL_FILES_V2.items()}
    assert files != dict(MODEL_FILES_V2)
    assert rules_v2(files) == rules_v2()


def test_a_computed_pattern_through_the_renamed_member_is_computed():
    files = dict(MODEL_FILES_V2)
    files["src/models/jamba.cpp"] = """\
void llama_model_jamba::load_arch_hparams(llama_model_loader & ml) {
    hparams.swa_type = LLAMA_SWA_TYPE_STANDARD;
    for (uint32_t il = 0; il < hparams.n_layer; ++il) {
        hparams.is_swa_impl[il] = il % 2 == 0;
    }
}
"""
    rules, warnings = rules_v2(files)
    assert rules["LLM_ARCH_JAMBA"].pattern == "computed"
    assert not [w for w in warnings if w.code == "unknown-pattern"]


def test_a_swa_type_without_a_pattern_it_knows_is_unknown_with_a_warning():
    files = dict(MODEL_FILES_V2)
    files["src/models/jamba.cpp"] = """\
void llama_model_jamba::load_arch_hparams(llama_model_loader & ml) {
    hparams.swa_type = LLAMA_SWA_TYPE_STANDARD;
    for (uint32_t il = 0; il < hparams.n_layer; ++il) {
        hparams.layer_is_sliding[il] = il % 2 == 0;  // a member this reader does not know
    }
}
"""
    rules, warnings = rules_v2(files)
    assert rules["LLM_ARCH_JAMBA"].pattern == "unknown"  # never "none"
    unknown = [w for w in warnings if w.code == "unknown-pattern"]
    assert [(w.subject, w.path) for w in unknown] == [("LLM_ARCH_JAMBA", "src/models/jamba.cpp")]
    assert "is_swa_impl" in unknown[0].message


def test_missing_loader_is_a_warning():
    files = dict(MODEL_FILES_V2)
    files.pop("src/models/jamba.cpp")
    rules, warnings = rules_v2(files)
    assert "LLM_ARCH_JAMBA" not in rules
    assert [(w.code, w.subject) for w in warnings] == [("no-hparams-method", "LLM_ARCH_JAMBA")]


def test_neither_layout_is_an_anchor_error():
    text = "void llama_model::load_tensors(llama_model_loader & ml) {}\n"
    assert sliding_window.mapping_classes(text, MODEL_CPP) is None
    with pytest.raises(AnchorError) as err:
        sliding_window.switch_layout_code(text, MODEL_CPP)
    assert err.value.anchor == "llama_model_mapping or llama_model::load_hparams"


def test_loader_that_does_not_parse_is_a_parse_error():
    files = dict(MODEL_FILES_V2)
    files["src/models/gemma2.cpp"] = files["src/models/gemma2.cpp"].replace(
        "uint32_t swa_period = 2;", "uint32_t swa_period = = 2 )) ;"
    )
    with pytest.raises(ParseError) as err:
        rules_v2(files)
    assert err.value.paths == ("src/models/gemma2.cpp",)
    assert err.value.anchor == "llama_model_gemma2::load_arch_hparams"


def test_errors_outside_the_loader_do_not_matter():
    # real model files end with explicit template instantiations tree-sitter cannot parse
    source = parse_cpp(MODEL_FILES_V2["src/models/llama.cpp"], "src/models/llama.cpp")
    assert source.root.has_error
    rules_v2()  # no error: the loader itself parses
