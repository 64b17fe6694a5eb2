"""Where llama.cpp keeps the files its facts read (the known layouts), and the small reads more
than one fact module shares."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.llamacpp.records import (
    ArchName,
)
from apron.extractors.parsing.cpp_ts import brace_warnings, parse_cpp
from apron.extractors.records import Record
from apron.extractors.snapshot import Snapshot

ARCH_CPP = "src/llama-arch.cpp"
ARCH_H = "src/llama-arch.h"
MODEL_CPP = "src/llama-model.cpp"
MODELS_DIR = "src/models"
MODELS_H = "src/models/models.h"
MODEL_H = "src/llama-model.h"
GGUF_CONSTANTS = "gguf-py/gguf/constants.py"
GGUF_WRITER = "gguf-py/gguf/gguf_writer.py"
# Converter layouts, newest first: since 2026-05-15 the classes live in the conversion/ package
# (conversion/__init__.py routes HF architectures to modules); before, in one script.
CONVERTER_PACKAGE = "conversion"
CONVERTER_PACKAGE_INIT = "conversion/__init__.py"
CONVERTER_SCRIPT = "convert_hf_to_gguf.py"
REGISTER_ANCHOR = "@ModelBase.register(...) classes"


HPARAMS_CPP = "src/llama-hparams.cpp"
HPARAMS_H = "src/llama-hparams.h"
KV_ISWA_CPP = "src/llama-kv-cache-iswa.cpp"
CONTEXT_CPP = "src/llama-context.cpp"
COMMON_H = "common/common.h"
GGML_C = "ggml/src/ggml.c"
GGML_COMMON_H = "ggml/src/ggml-common.h"
GGML_H = "ggml/include/ggml.h"
MEMORY_HEADERS = (
    "src/llama-kv-cache.h",
    "src/llama-kv-cache-iswa.h",
    "src/llama-memory-hybrid.h",
    "src/llama-memory-hybrid-iswa.h",
    "src/llama-memory-recurrent.h",
)

ARCH_READS = (ARCH_CPP, ARCH_H)
CONVERTER_READS = (CONVERTER_PACKAGE_INIT, f"{CONVERTER_PACKAGE}/*.py", CONVERTER_SCRIPT)


def read_brace_warnings(snapshot: Snapshot, paths: list[str]) -> list:
    """Unbalanced braces in C++ files this fact read (parses are cached: no second parse)."""
    return brace_warnings([parse_cpp(snapshot.read_text(p), p) for p in paths])


def arch_name_rows(needed: Mapping[str, tuple[Record, ...]]) -> list[ArchName]:
    return [r for r in needed["arch_names"] if isinstance(r, ArchName)]
