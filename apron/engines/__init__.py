"""Per-engine rule modules: one per engine, each implementing apron.engines.base.EngineRules."""

from __future__ import annotations

from apron.engines import llamacpp, sglang, trtllm, vllm

ENGINE_RULES = {
    vllm.ENGINE: vllm,
    sglang.ENGINE: sglang,
    llamacpp.ENGINE: llamacpp,
    trtllm.ENGINE: trtllm,
}
