"""Miniature vLLM model files with recurrent state hooks (mamba_state_hooks), written by hand in
the shapes of vllm/model_executor/models/*.py at the pin: keyword and positional calls of the
calculators, locals, getattr with a default, a conditional expression, a delegation through
with_hf_config, and a Protocol's declaration (not a hook)."""

from __future__ import annotations

HYBRID_PATH = "vllm/model_executor/models/tiny_hybrid.py"
HYBRID = '''
from vllm.model_executor.layers.mamba.mamba_utils import (
    MambaStateDtypeCalculator,
    MambaStateShapeCalculator,
)


class TinyHybridForCausalLM(nn.Module, IsHybrid):
    @classmethod
    def get_mamba_state_dtype_from_config(cls, vllm_config: "VllmConfig"):
        return MambaStateDtypeCalculator.mamba2_state_dtype(
            vllm_config.model_config.dtype,
            vllm_config.cache_config.mamba_cache_dtype,
            vllm_config.cache_config.mamba_ssm_cache_dtype,
        )

    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config: "VllmConfig"):
        """Shapes of the conv and temporal states."""
        parallel_config = vllm_config.parallel_config
        hf_config = vllm_config.model_config.hf_config
        inner = (
            int(hf_config.expand * hf_config.hidden_size)
            if hf_config.d_inner is None
            else hf_config.d_inner
        )
        return MambaStateShapeCalculator.mamba2_state_shape(
            intermediate_size=inner,
            tp_world_size=parallel_config.tensor_parallel_size,
            n_groups=hf_config.n_groups,
            num_heads=hf_config.mamba_heads,
            head_dim=getattr(hf_config, "mamba_head_dim", hf_config.hidden_size // 8),
            state_size=hf_config.state_size,
            conv_kernel=hf_config.conv_kernel,
        )
'''

CONV_PATH = "vllm/model_executor/models/tiny_conv.py"
CONV = '''
from .tiny_hybrid import TinyHybridForCausalLM


class TinyConvForCausalLM(nn.Module):
    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config):
        config = vllm_config.model_config.hf_text_config
        return MambaStateShapeCalculator.short_conv_state_shape(
            vllm_config.parallel_config.tensor_parallel_size, config.conv_dim
        )

    @classmethod
    def get_mamba_state_dtype_from_config(cls, vllm_config):
        return MambaStateDtypeCalculator.short_conv_state_dtype(
            vllm_config.model_config.dtype, vllm_config.cache_config.mamba_cache_dtype
        )


class TinyHybridVL(nn.Module):
    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config):
        text_config = vllm_config.model_config.hf_config.text_config
        inner_config = vllm_config.with_hf_config(text_config)
        return TinyHybridForCausalLM.get_mamba_state_shape_from_config(inner_config)


class HasState(Protocol):
    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config):
        """Declared only."""
        ...
'''


def state_files() -> dict[str, str]:
    return {HYBRID_PATH: HYBRID, CONV_PATH: CONV}


# kv_dtype_literals: the three literals in the shapes they have at the pin
FLOAT16_LITERAL = """

_FLOAT16_NOT_SUPPORTED_MODELS = {
    "tinygemma": "Numerical instability.",
    "tinyglm": ("Numerical " "instability."),
}
"""
TORCH_UTILS_PATH = "vllm/utils/torch_utils.py"
TORCH_UTILS = """
MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP = {
    "fp8": "fp8_e4m3",
    "nvfp4": "nvfp4",
}
"""
NORMALIZE_LITERAL = """


def _normalize_quantization_config(quant_cfg):
    quant_algo = quant_cfg.get("quant_algo")
    if quant_algo is not None:
        upper = str(quant_algo).upper()
        if upper in {"FP8", "FP8_PB_WO"}:
            quant_cfg["quant_method"] = "modelopt"
        elif upper == "NVFP4":
            quant_cfg["quant_method"] = "modelopt_fp4"
        else:
            raise ValueError(f"Unknown ModelOpt quant algo: {quant_algo}")
"""
