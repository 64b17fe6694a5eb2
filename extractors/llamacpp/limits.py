"""llama.cpp's own bounds on what it loads and what it is asked: the `#define`s its GGUF reader
and context check against (LLAMA_MAX_SEQ, LLAMA_MAX_LAYERS, GGML_MAX_DIMS, GGML_MAX_NAME,
GGUF_VERSION, GGUF_MAX_STRING_LENGTH, GGUF_MAX_ARRAY_ELEMENTS) and the C integer types of the
settings apron takes as options (common_params::n_ctx, llama_context_params::n_seq_max, ...)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from apron.extractors.llamacpp.memory_rules import constant_expression
from apron.extractors.llamacpp.records import Limit
from apron.extractors.parsing.cpp_ts import (
    CppSource,
    code_children,
    node_text,
    nodes_of_type,
    parse_cpp,
)
from apron.extractors.records import ExtractionWarning, warning

# name -> the file that defines it
DEFINES = {
    "LLAMA_MAX_SEQ": "src/llama-cparams.h",
    "LLAMA_MAX_LAYERS": "src/llama-hparams.h",
    "GGML_MAX_DIMS": "ggml/include/ggml.h",
    "GGML_MAX_NAME": "ggml/include/ggml.h",
    "GGUF_VERSION": "ggml/include/gguf.h",
    "GGUF_MAX_STRING_LENGTH": "ggml/src/gguf.cpp",
    "GGUF_MAX_ARRAY_ELEMENTS": "ggml/src/gguf.cpp",
}
# (struct, field) -> the file that declares it
FIELDS = {
    ("common_params", "n_ctx"): "common/common.h",
    ("common_params", "n_parallel"): "common/common.h",
    ("llama_context_params", "n_ctx"): "include/llama.h",
    ("llama_context_params", "n_seq_max"): "include/llama.h",
}
PATHS = tuple(sorted({*DEFINES.values(), *FIELDS.values()}))
# the largest value of each C integer type a field may have
C_TYPE_MAX = {
    "int8_t": 2**7 - 1,
    "uint8_t": 2**8 - 1,
    "int16_t": 2**15 - 1,
    "uint16_t": 2**16 - 1,
    "int": 2**31 - 1,
    "int32_t": 2**31 - 1,
    "uint32_t": 2**32 - 1,
    "int64_t": 2**63 - 1,
    "uint64_t": 2**64 - 1,
    "size_t": 2**64 - 1,
}


def _defines(source: CppSource) -> dict[str, str]:
    """Each `#define NAME value` of the file, the first one of a name (code as written)."""
    out: dict[str, str] = {}
    for node in nodes_of_type(source.root, "preproc_def"):
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None and value is not None:
            code = re.sub(r"//.*|/\*.*?\*/", "", node_text(value))  # a preproc_arg keeps them
            out.setdefault(node_text(name), " ".join(code.split()))
    return out


def _field_types(source: CppSource, struct: str) -> dict[str, str] | None:
    """field -> its type as written, for the struct of that name with a body; None without."""
    for node in nodes_of_type(source.root, "struct_specifier"):
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is None or body is None or node_text(name) != struct:
            continue
        out: dict[str, str] = {}
        for field in code_children(body):
            declarator, kind = (
                field.child_by_field_name("declarator"),
                field.child_by_field_name("type"),
            )
            if field.type == "field_declaration" and declarator is not None and kind is not None:
                out.setdefault(node_text(declarator), node_text(kind))
        return out
    return None


def limits(texts: Mapping[str, str]) -> tuple[list[Limit], list[ExtractionWarning]]:
    """The limit rows from the files in PATHS (path -> text). A name or field not found is an
    error (the anchor is missing); a value apron cannot evaluate is a row with `unknown`."""
    sources = {path: parse_cpp(text, path) for path, text in texts.items()}
    rows: list[Limit] = []
    warnings: list[ExtractionWarning] = []
    for name, path in sorted(DEFINES.items()):
        source = sources[path]
        code = _defines(source).get(name)
        if code is None:
            raise source.missing(f"#define {name} is not in {path}", name)
        value = constant_expression(code)
        unknown = "" if value is not None else f"not an integer constant: {code}"
        if unknown:
            warnings.append(warning("unread-limit", name, unknown, path, name))
        rows.append(
            Limit(name=name, value=value, code=code, unknown=unknown, path=path, symbol=name)
        )
    for (struct, field), path in sorted(FIELDS.items()):
        source = sources[path]
        types = _field_types(source, struct)
        symbol = f"{struct}::{field}"
        if types is None or field not in types:
            raise source.missing(f"struct {struct} has no field {field} in {path}", symbol)
        code = types[field]
        value = C_TYPE_MAX.get(code)
        unknown = "" if value is not None else f"not an integer type apron knows: {code}"
        if unknown:
            warnings.append(warning("unread-limit", symbol, unknown, path, symbol))
        rows.append(
            Limit(name=symbol, value=value, code=code, unknown=unknown, path=path, symbol=symbol)
        )
    return rows, warnings
