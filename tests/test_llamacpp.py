"""llama.cpp: architecture names and class sets from hand-written C++ miniatures, and the errors."""

from __future__ import annotations

import pytest

from apron.extractors.errors import AnchorError, ExtractionError, ParseError
from apron.extractors.llamacpp import class_sets
from apron.extractors.llamacpp.arch_names import arch_names
from apron.extractors.parsing.cpp_ts import mask_conditionals, parse_cpp, switch_case_groups, walk
from tests.llamacpp_miniatures import (
    ARCH_CPP,
    ARCH_CPP_V1,
    ARCH_CPP_V2,
    ARCH_H,
    ARCH_H_V1,
    ARCH_H_V2,
)


def names_v1():
    records, _ = arch_names(ARCH_CPP_V1, ARCH_CPP, ARCH_H_V1, ARCH_H)
    return records


def scan(cpp: str = ARCH_CPP_V1, header: str = ARCH_H_V1) -> class_sets.PredicateScan:
    return class_sets.scan_predicates(cpp, ARCH_CPP, header, ARCH_H)


def members(cpp: str = ARCH_CPP_V1, header: str = ARCH_H_V1) -> dict[str, set[str]]:
    rows, _ = class_sets.members(scan(cpp, header), names_v1())
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row.predicate, set()).add(row.arch)
    return found


def predicate(name: str, body: str) -> str:
    return f"bool {name}(const llm_arch & arch) {{\n{body}\n}}\n"


# ---------------------------------------------------------------- preprocessor masking


def test_masking_keeps_offsets_and_names_each_branch():
    text = "a\n#ifdef X\nb\n#elif defined(Y)\nc\n#else\nd\n#endif\ne\n"
    masked, conditions = mask_conditionals(text)
    assert len(masked) == len(text) and "#" not in masked
    assert conditions == (
        "",
        "defined(X)",
        "defined(X)",
        "!(defined(X)) && defined(Y)",
        "!(defined(X)) && defined(Y)",
        "!(defined(X)) && !(defined(Y))",
        "!(defined(X)) && !(defined(Y))",
        "",
        "",
        "",
    )


def test_masking_nests_and_skips_continuation_lines():
    text = "#if A && \\\n    B\n#ifndef C\nx\n#endif\n#endif\ny"
    masked, conditions = mask_conditionals(text)
    assert masked.split("\n")[3] == "x" and masked.split("\n")[1].strip() == ""
    assert conditions[3] == "A && B && !defined(C)"
    assert conditions[6] == ""


def test_grouped_labels_share_one_body():
    source = parse_cpp(
        "int f(int a) { switch (a) { case 1: case 2: return 3; default: return 4; } }", "f.cpp"
    )
    switch = next(n for n in walk(source.root) if n.type == "switch_statement")
    groups = switch_case_groups(switch)
    assert [[label.text.decode() for label in g.labels] for g in groups] == [["1", "2"], []]
    assert [g.has_default for g in groups] == [False, True]


# ---------------------------------------------------------------- architecture names


def test_names_map_with_ifdef_and_cross_check_warnings():
    records, warnings = arch_names(ARCH_CPP_V1, ARCH_CPP, ARCH_H_V1, ARCH_H)
    by_arch = {r.arch: r for r in records}
    assert by_arch["LLM_ARCH_LLAMA"].gguf_name == "llama"
    assert by_arch["LLM_ARCH_GEMMA2"].gguf_name == "gemma2"  # a trailing comment does not matter
    toy = by_arch["LLM_ARCH_TOYMODEL"]  # inside #ifdef in both the map and the enum
    assert toy.gguf_name == "toymodel" and toy.in_enum
    assert toy.preprocessor_condition == "defined(LLAMA_EXPERIMENTAL)"
    assert by_arch["LLM_ARCH_GHOST"].in_enum is False
    assert len(records) == 12
    codes = {(w.code, w.subject) for w in warnings}
    assert codes == {
        ("name-without-enum", "LLM_ARCH_GHOST"),
        ("enum-without-name", "LLM_ARCH_ORPHAN"),
    }


def test_duplicate_key_keeps_the_first_entry():
    cpp = ARCH_CPP_V1.replace(
        '{ LLM_ARCH_GHOST,            "ghost"            },', '{ LLM_ARCH_LLAMA, "llama-again" },'
    )
    records, warnings = arch_names(cpp, ARCH_CPP, ARCH_H_V1, ARCH_H)
    assert {r.arch: r.gguf_name for r in records}["LLM_ARCH_LLAMA"] == "llama"
    assert any(w.code == "duplicate-key" and w.subject == "LLM_ARCH_LLAMA" for w in warnings)


def test_missing_names_map_is_an_anchor_error():
    cpp = ARCH_CPP_V1.replace("LLM_ARCH_NAMES =", "LLM_ARCH_TITLES =")
    with pytest.raises(AnchorError) as err:
        arch_names(cpp, ARCH_CPP, ARCH_H_V1, ARCH_H)
    assert err.value.anchor == "LLM_ARCH_NAMES" and err.value.paths == (ARCH_CPP,)
    assert "LLM_ARCH_NAMES map not found in src/llama-arch.cpp" in str(err.value)


def test_empty_names_map_is_an_error_not_an_empty_list():
    start = ARCH_CPP_V1.index("LLM_ARCH_NAMES = {") + len("LLM_ARCH_NAMES = {")
    end = ARCH_CPP_V1.index("};", start)
    cpp = ARCH_CPP_V1[:start] + "\n" + ARCH_CPP_V1[end:]
    with pytest.raises(AnchorError, match="has no"):
        arch_names(cpp, ARCH_CPP, ARCH_H_V1, ARCH_H)


def test_missing_enum_is_an_anchor_error():
    header = ARCH_H_V1.replace("enum llm_arch {", "enum llm_architecture {")
    with pytest.raises(AnchorError) as err:
        arch_names(ARCH_CPP_V1, ARCH_CPP, header, ARCH_H)
    assert err.value.anchor == "enum llm_arch" and err.value.paths == (ARCH_H,)


def test_names_map_that_does_not_parse_is_a_parse_error():
    cpp = ARCH_CPP_V1.replace(
        '{ LLM_ARCH_MAMBA,            "mamba"            },', '{ LLM_ARCH_MAMBA,  "mamba" ;; ] },'
    )
    with pytest.raises(ParseError) as err:
        arch_names(cpp, ARCH_CPP, ARCH_H_V1, ARCH_H)
    assert err.value.anchor == "LLM_ARCH_NAMES" and "does not parse as C++" in str(err.value)


def test_truncated_file_is_a_parse_error_naming_the_anchor():
    cpp = ARCH_CPP_V1[: ARCH_CPP_V1.index("LLM_ARCH_NAMES") + 30]
    with pytest.raises(ParseError) as err:
        arch_names(cpp, ARCH_CPP, ARCH_H_V1, ARCH_H)
    assert err.value.paths == (ARCH_CPP,) and err.value.anchor == "LLM_ARCH_NAMES"


# ---------------------------------------------------------------- class sets


def test_class_sets_v1_members_and_polarity():
    found = members()
    assert found["llm_arch_is_recurrent"] == {"LLM_ARCH_MAMBA"}
    # grouped labels on one line; the comments that contain `case LLM_ARCH_X:` do not count
    assert found["llm_arch_is_hybrid"] == {"LLM_ARCH_JAMBA", "LLM_ARCH_QWEN3NEXT"}
    # inverted polarity: listed return false, default true, over every named architecture
    # but LLM_ARCH_UNKNOWN
    assert found["llm_arch_supports_sm_tensor"] == {
        "LLM_ARCH_CLIP",
        "LLM_ARCH_LLAMA",
        "LLM_ARCH_GEMMA2",
        "LLM_ARCH_QWEN3NEXT",
        "LLM_ARCH_DREAM",
        "LLM_ARCH_BERT",
        "LLM_ARCH_TOYMODEL",
        "LLM_ARCH_GHOST",
    }
    assert "llm_arch_is_diffusion" not in found  # GGML_UNUSED(arch); return false;


def test_predicate_rows_state_polarity_and_absence():
    rows = {r.predicate: r for r in class_sets.predicate_rows(scan(), names_v1(), ARCH_CPP)}
    sm = rows["llm_arch_supports_sm_tensor"]
    assert (sm.listed_returns, sm.default_returns, sm.listed_count, sm.member_count) == (
        False,
        True,
        3,
        8,
    )
    assert sm.polarity == "listed architectures return false; default true"
    assert rows["llm_arch_is_hybrid"].polarity == "listed architectures return true; default false"
    diffusion = rows["llm_arch_is_diffusion"]
    assert (diffusion.shape, diffusion.present, diffusion.member_count) == ("constant", True, 0)
    assert diffusion.polarity == "no list: returns false for every architecture"
    rollback = rows["llm_arch_supports_rs_rollback"]  # not in v1 at all: absent, not empty
    assert (rollback.present, rollback.shape, rollback.default_returns) == (False, "absent", None)


def test_listed_rows_keep_the_raw_labels_and_preprocessor_conditions():
    rows = class_sets.listed_rows(scan(ARCH_CPP_V2, ARCH_H_V2))
    rollback = {
        (r.arch, r.returns, r.preprocessor_condition)
        for r in rows
        if r.predicate == "llm_arch_supports_rs_rollback"
    }
    # `default: break;` then `return false;` after the switch
    assert rollback == {
        ("LLM_ARCH_QWEN3NEXT", True, ""),
        ("LLM_ARCH_TOYMODEL", True, "defined(LLAMA_EXPERIMENTAL)"),
    }
    sm = {r.arch for r in rows if r.predicate == "llm_arch_supports_sm_tensor" and not r.returns}
    assert sm == {"LLM_ARCH_MAMBA", "LLM_ARCH_JAMBA", "LLM_ARCH_DEEPSEEK2"}


def test_a_new_predicate_of_the_same_shape_is_picked_up():
    cpp = ARCH_CPP_V1 + predicate(
        "llm_arch_is_encoder",
        """    switch (arch) {
        case LLM_ARCH_BERT:
            return true;
        default:
            return false;
    }""",
    )
    assert members(cpp)["llm_arch_is_encoder"] == {"LLM_ARCH_BERT"}


def test_mixed_case_values_and_no_default_label():
    cpp = ARCH_CPP_V1 + predicate(
        "llm_arch_supports_mixed",
        """    switch (arch) {
        case LLM_ARCH_BERT:
            return false;
        case LLM_ARCH_LLAMA:
        case LLM_ARCH_GEMMA2:
            { return true; }
    }
    return false;""",
    )
    found = next(s for s in scan(cpp).sets if s.predicate == "llm_arch_supports_mixed")
    assert found.listed == (
        ("LLM_ARCH_BERT", False, ""),
        ("LLM_ARCH_LLAMA", True, ""),
        ("LLM_ARCH_GEMMA2", True, ""),
    )
    assert found.default is False and found.listed_returns is None
    assert found.polarity() == "each listed architecture returns its own value; default false"
    assert members(cpp)["llm_arch_supports_mixed"] == {"LLM_ARCH_LLAMA", "LLM_ARCH_GEMMA2"}


def test_unrecognized_new_predicate_is_a_warning_not_a_silent_set():
    cpp = ARCH_CPP_V1 + predicate(
        "llm_arch_is_anything",
        "    return llm_arch_is_recurrent(arch) || llm_arch_is_hybrid(arch);",
    )
    result = scan(cpp)
    found = next(s for s in result.sets if s.predicate == "llm_arch_is_anything")
    assert found.shape == "unrecognized"
    assert any(w.code == "unrecognized-predicate" for w in result.warnings)
    rows = {r.predicate: r for r in class_sets.predicate_rows(result, names_v1(), ARCH_CPP)}
    assert rows["llm_arch_is_anything"].polarity.startswith("not extracted:")
    # and a known predicate that went missing next to it is flagged as a possible rename
    assert any(
        w.code == "possible-rename" and w.subject == "llm_arch_supports_rs_rollback"
        for w in result.warnings
    )


def test_renamed_switch_function_is_an_error():
    # renamed in the .cpp only: the header still declares the old name
    cpp = ARCH_CPP_V1.replace(
        "bool llm_arch_supports_sm_tensor(", "bool llm_arch_supports_tensor_split("
    )
    with pytest.raises(AnchorError) as err:
        scan(cpp)
    assert err.value.anchor == "llm_arch_supports_sm_tensor"
    assert "declared in src/llama-arch.h but not defined in src/llama-arch.cpp" in str(err.value)


def test_renamed_required_predicate_is_an_error_even_when_the_header_follows():
    cpp = ARCH_CPP_V1.replace("bool llm_arch_is_hybrid(", "bool llm_arch_is_mixed(")
    header = ARCH_H_V1.replace("llm_arch_is_hybrid ", "llm_arch_is_mixed ")
    with pytest.raises(AnchorError) as err:
        scan(cpp, header)
    assert err.value.anchor == "llm_arch_is_hybrid" and "renamed?" in str(err.value)


def test_known_predicate_with_an_unexpected_body_is_an_error():
    cpp = ARCH_CPP_V1.replace(
        """        case LLM_ARCH_MAMBA:
            return true;
        default:
            return false;""",
        """        case LLM_ARCH_MAMBA:
            return hparams.ssm;
        default:
            return false;""",
    )
    with pytest.raises(AnchorError) as err:
        scan(cpp)
    assert err.value.anchor == "llm_arch_is_recurrent" and "hparams.ssm" in str(err.value)


def test_switch_over_something_else_is_an_error():
    cpp = ARCH_CPP_V1.replace(
        "bool llm_arch_is_recurrent(const llm_arch & arch) {\n    switch (arch) {",
        "bool llm_arch_is_recurrent(const llm_arch & arch) {\n    switch (other) {",
    )
    with pytest.raises(AnchorError, match="not `arch`"):
        scan(cpp)


def test_predicate_file_that_does_not_parse_is_a_parse_error():
    cpp = ARCH_CPP_V1.replace(
        "        case LLM_ARCH_JAMBA: case LLM_ARCH_QWEN3NEXT:",
        "        case LLM_ARCH_JAMBA: case ) LLM_ARCH_QWEN3NEXT ::",
    )
    with pytest.raises(ParseError) as err:
        scan(cpp)
    assert err.value.anchor == "llm_arch_is_hybrid" and err.value.paths == (ARCH_CPP,)


def test_required_predicate_hidden_by_broken_code_is_a_parse_error():
    cut = ARCH_CPP_V1.index("bool llm_arch_is_recurrent")
    cpp = ARCH_CPP_V1[:cut] + "bool llm_arch_is_recurrent(const llm_arch & arch {{ \n"
    with pytest.raises(ExtractionError) as err:
        scan(cpp)
    assert isinstance(err.value, ParseError)
    assert "does not parse as C++" in str(err.value)
