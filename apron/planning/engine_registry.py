"""The one explicit registry of apron's engines: each engine's package (apron/engines/<engine>/,
implementing apron.engines.base.EngineRules) by its engine id, and the dispatch of `auto`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron.constraints import EngineConstraints
from apron.engines import llamacpp, sglang, trtllm, vllm
from apron.engines.base import EngineRules
from apron.kv_dtype import KvDtypeChoice

ENGINE_RULES: dict[str, EngineRules] = {
    vllm.ENGINE: vllm,
    sglang.ENGINE: sglang,
    llamacpp.ENGINE: llamacpp,
    trtllm.ENGINE: trtllm,
}
# apron's own prediction (the shared column) follows vLLM's extracted rules: its KV-head scan,
# context maximum, SSM cache dtype and encoder kinds, and its KV dtype when auto
REFERENCE_ENGINE = vllm.ENGINE


def resolve_kv_dtype_auto(
    config: Mapping[str, Any],
    model_dir: Path | None,
    engine: str,
    *,
    rules: EngineConstraints | None,
    mla: bool = False,
    pooling: bool = False,
) -> KvDtypeChoice:
    """The KV cache dtype `engine` uses for `--kv-cache-dtype auto` with this checkpoint.

    `rules`: that engine's constraints (its extracted literals and sets); `mla`: the engine allocates this model as MLA (vLLM's MLAAttention ignores a compressed-tensors
    kv_cache_scheme); `pooling`: vLLM runs it as a pooling model (float32 then becomes float16)."""
    rules_of = ENGINE_RULES.get(engine)
    found = (
        rules_of.auto_kv_dtype(rules, config, model_dir, mla, pooling)
        if rules_of is not None
        else None
    )
    if found is not None:
        return found
    return KvDtypeChoice(
        None, f"auto: how {engine} resolves its KV cache dtype is not among the extracted rules", ()
    )
