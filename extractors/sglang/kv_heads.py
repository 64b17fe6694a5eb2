"""SGLang's KV-head rule, ModelConfig.get_total_num_kv_heads: the alias scan, its inline
model_type overrides and its fallback. The method has the shape of vLLM's older ModelConfig, so
vLLM's inline extractor reads it. Pure: file text in, records out."""

from __future__ import annotations

from apron.extractors.records import Record
from apron.extractors.serving import kv_heads

CLASS = "ModelConfig"
ALIASES = "kv_head_aliases"
FALLBACK = "kv_head_fallback"
OVERRIDES = "kv_head_overrides"


def kv_head_aliases(text: str, path: str) -> list[Record]:
    """The config keys the scan tries on hf_text_config, in order."""
    return list(kv_heads.kv_head_aliases(text, path, CLASS))


def kv_head_overrides(text: str, path: str) -> list[Record]:
    """The rules before the scan: multi_query, then the mpt / dbrx / nemotron-nas branches."""
    return list(kv_heads.kv_head_overrides_inline(text, path, CLASS))


def kv_head_fallback(text: str, path: str) -> list[Record]:
    """What the method returns when no alias key is present."""
    return list(kv_heads.kv_head_fallback(text, path, CLASS))
