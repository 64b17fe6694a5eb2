"""The tp sizes vLLM refuses at startup beyond its extracted serving rules, read by hand: its
Mamba2 mixer's n_groups assertion and its vision encoders' head split (EngineRules members
state_tp_refusal and encoder_tp_refusal, which apron.mechanisms.per_gpu applies)."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.state_shapes import MISSING, hook_argument


def mixer_refusal(model: ModelConfig, rule: Any, tp: int) -> str:
    """vLLM's Mamba2 mixer asserts `n_groups % tp == 0 or n_groups == 1` when it is built
    (vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.__init__, read by hand): a tp
    it fails is refused at startup. "" when the rule does not apply or holds."""
    if rule is None or rule.calculator != "mamba2" or tp == 1:
        return ""
    groups = hook_argument(model, rule, "n_groups")
    if groups is MISSING or not isinstance(groups, int) or groups == 1 or groups % tp == 0:
        return ""
    return (
        f"vLLM's MambaMixer2 asserts n_groups % tp == 0 or n_groups == 1 "
        f"(vllm/model_executor/layers/mamba/mamba_mixer2.py): n_groups {groups} at tp {tp}"
    )


# vLLM's vision encoders shard their attention heads over the tensor-parallel group when
# mm_encoder_tp_mode is "weights" (its default): `num_attention_heads_per_partition =
# dist_utils.divide(num_heads, tp_size)` (vllm/model_executor/models/qwen2_5_vl.py, qwen2_vl.py,
# glm4_1v.py, moonvit.py, ...; read by hand), and divide asserts num_heads % tp == 0. These are
# the vision configs that name the count `num_heads`.
VISION_HEADS = "vision_config.num_heads"


def vision_encoder_refusal(model: ModelConfig, tp: int) -> str:
    """Why vLLM's vision encoder refuses `tp` for this config ("" when it does not)."""
    vision = model.raw.get("vision_config")
    heads = vision.get("num_heads") if isinstance(vision, dict) else None
    if tp == 1 or not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
        return ""
    if heads % tp == 0:
        return ""
    return (
        f"vllm: {VISION_HEADS} = {heads} is not divisible by tp {tp}: vLLM's vision encoder "
        "divides its attention heads over tp (dist_utils.divide in the vision attention, "
        "mm_encoder_tp_mode 'weights')"
    )
