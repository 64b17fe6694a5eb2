"""Per-engine rule modules: one per engine, each with ENGINE and `decide(model, constraints)`
returning an apron.engines.base.EngineDecision."""

from __future__ import annotations

from apron.engines import llamacpp, sglang, trtllm, vllm

ENGINE_RULES = {
    vllm.ENGINE: vllm,
    sglang.ENGINE: sglang,
    llamacpp.ENGINE: llamacpp,
    trtllm.ENGINE: trtllm,
}
