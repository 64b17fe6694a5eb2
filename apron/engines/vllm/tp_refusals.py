"""vLLM's tensor-parallel refusals read by hand from its model code (not extracted): its vision
encoders' head split and its Mamba2 mixer's group split, each refused at startup."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig

# vLLM's vision encoders shard their attention heads over the tensor-parallel group when
# mm_encoder_tp_mode is "weights" (its default): `num_attention_heads_per_partition =
# dist_utils.divide(num_heads, tp_size)` (vllm/model_executor/models/qwen2_5_vl.py, qwen2_vl.py,
# glm4_1v.py, moonvit.py, ...; read by hand), and divide asserts num_heads % tp == 0. These are
# the vision configs that name the count `num_heads`.
VISION_HEADS = "vision_config.num_heads"


def tp_refusals(model: ModelConfig, tp: int) -> tuple[str, ...]:
    """Why vLLM's vision encoder refuses `tp` for this config (() when it does not)."""
    vision = model.raw.get("vision_config")
    heads = vision.get("num_heads") if isinstance(vision, dict) else None
    if tp == 1 or not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
        return ()
    if heads % tp == 0:
        return ()
    return (
        f"vllm: {VISION_HEADS} = {heads} is not divisible by tp {tp}: vLLM's vision encoder "
        "divides its attention heads over tp (dist_utils.divide in the vision attention, "
        "mm_encoder_tp_mode 'weights')",
    )


def state_tp_refusal(model: ModelConfig, state_rule: Any, tp: int) -> str:
    """vLLM's Mamba2 mixer asserts `n_groups % tp == 0 or n_groups == 1` when it is built
    (vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.__init__, read by hand): a tp
    it fails is refused at startup. "" when the rule does not apply or holds."""
    if state_rule is None or state_rule.calculator != "mamba2" or tp == 1:
        return ""
    from apron.state_shapes import MISSING, hook_argument

    groups = hook_argument(model, state_rule, "n_groups")
    if groups is MISSING or not isinstance(groups, int) or groups == 1 or groups % tp == 0:
        return ""
    return (
        f"vLLM's MambaMixer2 asserts n_groups % tp == 0 or n_groups == 1 "
        f"(vllm/model_executor/layers/mamba/mamba_mixer2.py): n_groups {groups} at tp {tp}"
    )
