"""llama.cpp's limits: the #defines its GGUF reader and context check against, and the C types
of the settings apron takes as options, read from miniatures shaped like the real headers."""

from __future__ import annotations

import pytest

from apron.extractors.errors import ExtractionError
from apron.extractors.llamacpp.limits import PATHS, limits
from tests.llamacpp_miniatures import tree_v2


def texts(**changes: str) -> dict[str, str]:
    tree = tree_v2()
    base = {path: tree[path] for path in PATHS}
    return {**base, **{k.replace("__", "/").replace("_dot_", "."): v for k, v in changes.items()}}


def by_name(rows) -> dict[str, tuple]:
    return {r.name: (r.value, r.code, r.unknown) for r in rows}


def test_the_miniature_limits():
    rows, warnings = limits(texts())
    assert warnings == []
    assert by_name(rows) == {
        "GGML_MAX_DIMS": (4, "4", ""),
        "GGML_MAX_NAME": (64, "64", ""),
        "GGUF_MAX_ARRAY_ELEMENTS": (1073741824, "(1024*1024*1024)", ""),
        "GGUF_MAX_STRING_LENGTH": (1073741824, "(1024*1024*1024)", ""),
        "GGUF_VERSION": (3, "3", ""),
        "LLAMA_MAX_LAYERS": (512, "512", ""),
        "LLAMA_MAX_SEQ": (256, "256", ""),
        "common_params::n_ctx": (2**31 - 1, "int32_t", ""),
        "common_params::n_parallel": (2**31 - 1, "int32_t", ""),
        "llama_context_params::n_ctx": (2**32 - 1, "uint32_t", ""),
        "llama_context_params::n_seq_max": (2**32 - 1, "uint32_t", ""),
    }
    assert {r.name: r.path for r in rows}["LLAMA_MAX_SEQ"] == "src/llama-cparams.h"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#define LLAMA_MAX_SEQ 256\n", (256, "256", "")),
        ("#define LLAMA_MAX_SEQ (64 * 4) // room for 256\n", (256, "(64 * 4)", "")),
        ("#define  LLAMA_MAX_SEQ\t(1 + 255)\n", (256, "(1 + 255)", "")),
        (
            "#define LLAMA_MAX_SEQ some_function()\n",
            (None, "some_function()", "not an integer constant: some_function()"),
        ),
    ],
)
def test_a_define_as_written(text, expected):
    rows, warnings = limits({**texts(), "src/llama-cparams.h": text})
    assert by_name(rows)["LLAMA_MAX_SEQ"] == expected
    assert [w.subject for w in warnings] == (["LLAMA_MAX_SEQ"] if expected[0] is None else [])


def test_a_field_type_it_does_not_know_is_unknown_with_a_warning():
    header = "struct llama_context_params { uint32_t n_ctx; my_count_t n_seq_max; };\n"
    rows, warnings = limits({**texts(), "include/llama.h": header})
    assert by_name(rows)["llama_context_params::n_seq_max"] == (
        None,
        "my_count_t",
        "not an integer type apron knows: my_count_t",
    )
    assert [w.code for w in warnings] == ["unread-limit"]


@pytest.mark.parametrize(
    ("path", "text", "anchor"),
    [
        ("src/llama-cparams.h", "#define LLAMA_MAX_SEQS 256\n", "LLAMA_MAX_SEQ"),
        ("include/llama.h", "struct llama_model_params { uint32_t n_ctx; };\n", "n_ctx"),
        ("common/common.h", "struct common_params { int32_t n_batch = 1; };\n", "n_ctx"),
    ],
)
def test_a_missing_anchor_is_an_error(path, text, anchor):
    with pytest.raises(ExtractionError, match=anchor):
        limits({**texts(), path: text})
