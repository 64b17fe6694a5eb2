"""Import resolution, once (parsing/python_imports.py): what module a `from` import names."""

from __future__ import annotations

import pytest

from apron.extractors.parsing.python_imports import (
    absolute_module,
    imported_path_stem,
    module_of_path,
)


@pytest.mark.parametrize(
    ("current", "is_package", "level", "dotted", "expected"),
    [
        ("vllm.models.llama", False, 0, "torch.nn", "torch.nn"),
        ("vllm.models.llama", False, 1, "utils", "vllm.models.utils"),
        ("vllm.models.llama", False, 1, "", "vllm.models"),
        ("vllm.models.llama", False, 2, "config", "vllm.config"),
        ("vllm.models", True, 1, "llama", "vllm.models.llama"),
        ("vllm.models", True, 2, "", "vllm"),
        ("conversion.llama", False, 1, "base", "conversion.base"),
    ],
)
def test_absolute_module(current, is_package, level, dotted, expected):
    assert absolute_module(current, is_package, level, dotted) == expected


def test_paths():
    assert module_of_path("python/sglang/srt/__init__.py", "python") == ("sglang.srt", True)
    assert module_of_path("vllm/models/llama.py") == ("vllm.models.llama", False)
    importer = "python/sglang/srt/models/y.py"
    assert imported_path_stem(importer, 1, "x", "python") == "python/sglang/srt/models/x"
    assert imported_path_stem(importer, 2, "", "python") == "python/sglang/srt"
    assert imported_path_stem(importer, 0, "sglang.srt.utils", "python") == (
        "python/sglang/srt/utils"
    )
