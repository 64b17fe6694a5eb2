"""Miniature of SGLang's _DEEPSEEK_FAMILY_ARCHS (arg_groups/overrides.py) for kv_dtype_sets, in
the shape it has at the pin (a module-level frozenset of a set display)."""

from __future__ import annotations

from tests.sglang_serving_miniatures import OVERRIDES_PATH

DEEPSEEK_FAMILY = """

_DEEPSEEK_FAMILY_ARCHS = frozenset(
    {
        "DeepseekV3ForCausalLM",
        "TinyDsaForCausalLM",
    }
)
"""


def with_deepseek_family(files: dict[str, str]) -> dict[str, str]:
    """`files` with the family set appended to overrides.py."""
    return {**files, OVERRIDES_PATH: files[OVERRIDES_PATH] + DEEPSEEK_FAMILY}
