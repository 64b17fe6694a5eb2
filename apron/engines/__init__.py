"""The engines of apron's columns: one package per engine (apron/engines/<engine>/), each
implementing apron.engines.base.EngineRules, in one explicit registry."""

from __future__ import annotations

from apron.engines import llamacpp, sglang, trtllm, vllm
from apron.engines.base import EngineRules

ENGINE_RULES: dict[str, EngineRules] = {
    vllm.ENGINE: vllm,
    sglang.ENGINE: sglang,
    llamacpp.ENGINE: llamacpp,
    trtllm.ENGINE: trtllm,
}
# apron's own prediction (the shared column) follows vLLM's extracted rules: its KV-head scan,
# context maximum, SSM cache dtype and encoder kinds, and its KV dtype when auto
REFERENCE_ENGINE = vllm.ENGINE
