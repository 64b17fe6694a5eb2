"""llama.cpp sizing rules read from C++ text: (snippet, expected) tables for the reverse-Polish
formulas, create_memory, the cache sizes, common_params defaults and ggml type sizes; a missing
anchor is an error; and the committed facts at the pin say what the source says there (read by
hand in src/llama-hparams.cpp, src/llama-kv-cache-iswa.cpp, src/llama-model.cpp,
ggml/src/ggml-common.h at 0253fb21)."""

from __future__ import annotations

import pytest

from apron.constraints import load_constraints
from apron.expressions import Unknown, evaluate
from apron.extractors.errors import ExtractionError
from apron.extractors.llamacpp import memory_rules as m
from apron.extractors.llamacpp.records import HparamsFormula
from apron.extractors.parsing.cpp_ts import parse_cpp, walk
from apron.extractors.parsing.expressions import cpp_expression, infix


def expr(code: str):
    source = parse_cpp(f"int f() {{ return {code}; }}", "x.cpp")
    ret = next(n for n in walk(source.root) if n.type == "return_statement")
    return cpp_expression(ret.named_children[0])


@pytest.mark.parametrize(
    ("code", "expression"),
    [
        ("token_shift_count * n_embd", ("*", "token_shift_count", "n_embd")),
        ("this->n_embd * (l - 1)", ("*", "n_embd", ("-", "l", 1))),
        ("hparams.n_swa + n_ubatch", ("+", "n_swa", "n_ubatch")),
        ("(c > 0 ? c - 1 : 0) * d", ("*", ("?:", (">", "c", 0), ("-", "c", 1), 0), "d")),
        ("std::min(a, b)", ("call", "std::min", "a", "b")),
        ("n_head()", ("call", "n_head")),
        ("(uint32_t) il < n", ("<", ("cast", "uint32_t", "il"), "n")),
        ("!x && y[il]", ("&&", ("!", "x"), ("at", "y", "il"))),
        ("cparams.n_ctx", "cparams.n_ctx"),
    ],
)
def test_formula_expressions(code, expression):
    assert expr(code) == expression


def test_formula_tokens_evaluate_like_cpp():
    tokens = expr("(c > 0 ? c - 1 : 0) * (d + 2*g*s)")
    # Mamba2 conv state (n_embd_r): (4 - 1) x (8192 + 2 x 8 x 128) = 30,720
    assert evaluate(tokens, {"c": 4, "d": 8192, "g": 8, "s": 128}) == 30_720
    assert evaluate(expr("GGML_PAD(x, 256)"), {"x": 1025}) == 1280
    with pytest.raises(Unknown, match="missing"):
        evaluate("missing", {})


HPARAMS = """
uint32_t llama_hparams::n_embd_r() const {
    if (wkv_head_size != 0) {
        return token_shift_count * n_embd;
    }
    const uint32_t inner = ssm_d_inner + 1;
    return inner * 2;
}
uint32_t llama_hparams::n_layer_kv() const {
    uint32_t res = 0;
    for (uint32_t il = 0; il < n_layer; ++il) { res++; }
    return res;
}
"""


def test_hparams_branches_in_order_with_locals_inlined():
    rows, warnings = m.hparams_formulas(HPARAMS, "src/llama-hparams.cpp")
    got = [(r.method, r.branch, r.condition, r.value, bool(r.unknown)) for r in rows]
    assert got[:2] == [
        ("n_embd_r", 0, ("!=", "wkv_head_size", 0), ("*", "token_shift_count", "n_embd"), False),
        ("n_embd_r", 1, (), ("*", ("+", "ssm_d_inner", 1), 2), False),
    ]
    # a loop is an explicit unknown branch with a warning, never a dropped one
    assert got[2] == ("n_layer_kv", 0, (), (), True)
    assert any(w.code == "unread-formula" and w.subject == "n_layer_kv#0" for w in warnings)
    assert any(w.code == "method-absent" and w.subject == "n_embd_s" for w in warnings)


MODEL = """
llama_memory_i * llama_model::create_memory(const llama_memory_params & params, const llama_cparams & cparams) const {
    llama_memory_i * res;
    switch (arch) {
        case LLM_ARCH_BERT:
        case LLM_ARCH_T5ENCODER:
            { res = nullptr; } break;
        default:
            if (llm_arch_is_recurrent(arch)) {
                res = new llama_memory_recurrent(*this, GGML_TYPE_F32, GGML_TYPE_F16);
            } else {
                llama_kv_cache::layer_filter_cb filter = nullptr;
                if (arch == LLM_ARCH_X) {
                    filter = [&](int32_t il) { return il < 3; };
                }
                res = new llama_kv_cache(*this, params.type_k, filter);
            }
    }
    return res;
}
"""


def test_create_memory_rules_and_callbacks():
    params = {
        "llama_memory_recurrent": ("model", "type_r", "type_s"),
        "llama_kv_cache": ("model", "type_k", "filter"),
    }
    rules, callbacks, warnings = m.create_memory_rules(MODEL, "src/llama-model.cpp", params)
    assert [(r.archs, r.condition, r.memory_class, r.arguments) for r in rules] == [
        (("LLM_ARCH_BERT", "LLM_ARCH_T5ENCODER"), (), "", ()),
        (
            (),
            ("call", "llm_arch_is_recurrent", "arch"),
            "llama_memory_recurrent",
            ("model=*this", "type_r=GGML_TYPE_F32", "type_s=GGML_TYPE_F16"),
        ),
        (
            (),
            ("!", ("call", "llm_arch_is_recurrent", "arch")),
            "llama_kv_cache",
            ("model=*this", "type_k=params.type_k", "filter=filter"),
        ),
    ]
    (callback,) = callbacks
    assert (callback.variable, callback.archs, callback.value) == (
        "filter",
        ("LLM_ARCH_X",),
        ("<", "il", 3),
    )
    assert warnings == []


def test_create_memory_missing_is_an_error():
    with pytest.raises(ExtractionError, match="create_memory"):
        m.create_memory_rules("void f() {}", "src/llama-model.cpp", {})


def test_unnamed_constructor_arguments_warn():
    rules, _, warnings = m.create_memory_rules(MODEL, "src/llama-model.cpp", {})
    assert rules[1].arguments[1] == "arg1=GGML_TYPE_F32"
    assert {w.subject for w in warnings} == {"llama_memory_recurrent", "llama_kv_cache"}


def test_constructor_parameters_from_a_header():
    header = "class llama_kv_cache { public: llama_kv_cache(const llama_model & model, ggml_type type_k, uint32_t kv_size); };"
    assert m.constructor_parameters(header, "h", "llama_kv_cache") == (
        "model",
        "type_k",
        "kv_size",
    )


ISWA = """
llama_kv_cache_iswa::llama_kv_cache_iswa(uint32_t kv_size, bool swa_full) {
    const uint32_t size_base = kv_size;
    uint32_t size_swa = GGML_PAD(std::min(size_base, hparams.n_swa + n_ubatch), 256);
    if (swa_full) {
        size_swa = size_base;
    }
}
"""


def test_cache_size_assignments_in_source_order():
    rows, _ = m.assignments_in(ISWA, "x.cpp", m.ISWA_CONSTRUCTOR, m.ISWA_VARIABLES)
    assert [(r.variable, r.order, r.condition, r.value) for r in rows] == [
        ("size_base", 0, (), "kv_size"),
        (
            "size_swa",
            1,
            (),
            (
                "call",
                "GGML_PAD",
                ("call", "std::min", "size_base", ("+", "n_swa", "n_ubatch")),
                256,
            ),
        ),
        ("size_swa", 2, "swa_full", "size_base"),
    ]
    with pytest.raises(ExtractionError, match="size_swa"):
        m.assignments_in(
            ISWA.replace("size_swa", "other"), "x.cpp", m.ISWA_CONSTRUCTOR, m.ISWA_VARIABLES
        )


def test_context_defaults_and_a_missing_default():
    text = "struct common_params { int32_t n_ctx = 4096; bool kv_unified = true; ggml_type cache_type_k = GGML_TYPE_Q8_0; };"
    rows, warnings = m.context_defaults(text, "common/common.h")
    assert {(r.field, r.value, r.int_value) for r in rows} == {
        ("n_ctx", "4096", 4096),
        ("kv_unified", "true", 1),
        ("cache_type_k", "GGML_TYPE_Q8_0", None),
    }
    assert {w.subject for w in warnings} >= {"n_batch", "cache_type_v"}


GGML_C = """
static const struct ggml_type_traits type_traits[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F16] = { .type_name = "f16", .blck_size = 1, .type_size = sizeof(ggml_fp16_t), },
    [GGML_TYPE_Q4_0] = { .type_name = "q4_0", .blck_size = QK4_0, .type_size = sizeof(block_q4_0), },
    [GGML_TYPE_Q5_0] = { .type_name = "q5_0", .blck_size = QK5_0, .type_size = sizeof(block_q5_0), },
};
"""
COMMON_H = """
typedef uint16_t ggml_half;
typedef half ggml_half;
#define QK4_0 32
static_assert(sizeof(block_q4_0) == sizeof(ggml_half) + QK4_0 / 2, "q4_0");
#define QK5_0 32
"""


def test_ggml_type_sizes_from_static_asserts():
    rows, warnings = m.ggml_type_sizes(
        GGML_C, "ggml.c", COMMON_H, "c.h", "typedef uint16_t ggml_fp16_t;", "g.h"
    )
    got = {r.ggml_type: (r.type_name, r.blck_size, r.type_size) for r in rows}
    # q4_0: sizeof(ggml_half) + 32 / 2 = 18 bytes per 32 elements (the device `half` typedef
    # is left out; the host one is uint16_t)
    assert got["GGML_TYPE_Q4_0"] == ("q4_0", 32, 18)
    assert got["GGML_TYPE_F16"] == ("f16", 1, 2)
    # no static_assert for block_q5_0: unknown with a warning, not a guess
    assert got["GGML_TYPE_Q5_0"] == ("q5_0", 32, None)
    assert any(w.code == "size-unknown" and w.subject == "GGML_TYPE_Q5_0" for w in warnings)
    assert any(w.code == "type-absent" and w.subject == "GGML_TYPE_Q8_0" for w in warnings)


# ---------------------------------------------------------------- the committed facts at the pin

C = load_constraints().get("llamacpp")


def test_pin_n_embd_r_and_n_embd_s_branches():
    r = {
        row.branch: (row.condition, row.value)
        for row in C.rows("hparams_formulas")
        if row.method == "n_embd_r"
    }
    # RWKV: token_shift_count * n_embd; LFM2: n_embd * (n_shortconv_l_cache - 1); KDA; Mamba
    assert r[0] == (("!=", "wkv_head_size", 0), ("*", "token_shift_count", "n_embd"))
    assert r[1] == (
        ("!=", "n_shortconv_l_cache", 0),
        ("*", "n_embd", ("-", "n_shortconv_l_cache", 1)),
    )
    assert infix(r[3][1]) == (
        "(ssm_d_conv > 0 ? ssm_d_conv - 1 : 0) * (ssm_d_inner + 2 * ssm_n_group * ssm_d_state)"
    )
    s = {row.branch: row.value for row in C.rows("hparams_formulas") if row.method == "n_embd_s"}
    assert s[2] == ("*", "ssm_d_state", "ssm_d_inner")


def test_pin_swa_cache_size():
    rows = [r for r in C.rows("cache_sizes") if r.variable == "size_swa"]
    # GGML_PAD(std::min(size_base, hparams.n_swa*(unified ? n_seq_max : 1) + n_ubatch), 256)
    assert infix(rows[0].value) == (
        "GGML_PAD(std::min(size_base, n_swa * (unified ? n_seq_max : 1) + n_ubatch), 256)"
    )
    assert (rows[1].condition, rows[1].value) == ("swa_full", "size_base")


def test_pin_memory_and_types():
    rules = sorted(C.rows("memory_rules"), key=lambda r: r.branch)
    assert "LLM_ARCH_BERT" in rules[0].archs and rules[0].memory_class == ""
    classes = [r.memory_class for r in rules[1:]]
    assert classes == [
        "llama_memory_recurrent",
        "llama_memory_hybrid_iswa",
        "llama_memory_hybrid",
        "llama_kv_cache_iswa",
        "llama_kv_cache",
    ]
    recurrent = dict(a.split("=", 1) for a in rules[1].arguments)
    assert (recurrent["type_r"], recurrent["type_s"]) == ("GGML_TYPE_F32", "GGML_TYPE_F32")
    sizes = {r.ggml_type: (r.blck_size, r.type_size) for r in C.rows("ggml_type_sizes")}
    # ggml-common.h static_asserts: q8_0 2 + 32; q4_0 2 + 16; q4_1 2*2 + 16; q5_0 2 + 4 + 16;
    # q5_1 2*2 + 4 + 16; iq4_nl 2 + 16
    assert sizes == {
        "GGML_TYPE_F32": (1, 4),
        "GGML_TYPE_F16": (1, 2),
        "GGML_TYPE_BF16": (1, 2),
        "GGML_TYPE_Q8_0": (32, 34),
        "GGML_TYPE_Q4_0": (32, 18),
        "GGML_TYPE_Q4_1": (32, 20),
        "GGML_TYPE_Q5_0": (32, 22),
        "GGML_TYPE_Q5_1": (32, 24),
        "GGML_TYPE_IQ4_NL": (32, 18),
    }
    defaults = {r.field: r.value for r in C.rows("context_defaults")}
    assert defaults["cache_type_k"] == "GGML_TYPE_F16" and defaults["n_ubatch"] == "512"
    assert defaults["flash_attn_type"] == "LLAMA_FLASH_ATTN_TYPE_AUTO"


def test_a_bump_names_a_formula_in_words():
    row = next(r for r in C.rows("hparams_formulas") if r.method == "n_embd_r" and r.branch == 1)
    record = HparamsFormula(**row._asdict())
    assert record.label() == (
        "n_embd_r #1: n_embd * (n_shortconv_l_cache - 1) when n_shortconv_l_cache != 0"
    )
    assert infix(("*", ("+", "a", "b"), "c")) == "(a + b) * c"
    assert infix(("-", "a", ("-", "b", "c"))) == "a - (b - c)"
    assert infix(("-", ("-", "a", "b"), "c")) == "a - b - c"
