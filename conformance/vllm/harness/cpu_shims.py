"""What lets vLLM's model classes be built on a CPU-only host: the platform, kernel-op stubs and a
single-process tensor-parallel group whose size is set per measurement. Nothing here changes
what vLLM computes for a layer's KV-cache spec; each shim names what it stands in for."""

from __future__ import annotations

import os
import tempfile

# torch.ops namespaces of vLLM's compiled kernels. Model constructors fetch ops from them
# (e.g. SiluAndMul keeps torch.ops._C.silu_and_mul); they are never called on the meta device.
KERNEL_NAMESPACES = (
    "_C",
    "_C_cache_ops",
    "_moe_C",
    "_rocm_C",
    "_vllm_fa2_C",
    "_vllm_fa3_C",
    "_flashmla_C",
    "_flashmla_extension_C",
    "_C_custom_ar",
    "_qutlass_C",
)

# The attention backend a layer is built with only decides how it runs; its KV-cache spec comes
# from the layer (Attention/MLAAttention.get_kv_cache_spec). MLA layers need an MLA backend to be
# constructed, which vLLM's CPU platform refuses; these are vLLM's own CUDA MLA backends.
MLA_BACKEND = "vllm.v1.attention.backends.mla.triton_mla.TritonMLABackend"
SPARSE_MLA_BACKEND = "vllm.v1.attention.backends.mla.flashmla_sparse.FlashMLASparseBackend"


FLASH_ATTN_NAMES = (
    "compile_flash_attn_varlen_func_from_specs",
    "flash_attn_varlen_func",
    "get_scheduler_metadata",
    "reshape_and_cache_flash",
)


# torchvision's op schemas. PyPI's torchvision wheel is a CUDA build whose kernels do not load
# next to a CPU torch; its Python registers fake kernels for these ops at import, which needs
# the ops declared. Declared only (no kernel), so the multimodal model modules import.
TORCHVISION_OPS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
    "SymInt channels, SymInt height, SymInt width) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
    "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
    "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, "
    "SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, "
    "bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
)
_TORCHVISION_LIBRARY = None


def _declare_torchvision_ops() -> None:
    global _TORCHVISION_LIBRARY
    import torch

    _TORCHVISION_LIBRARY = torch.library.Library("torchvision", "DEF")
    for schema in TORCHVISION_OPS:
        _TORCHVISION_LIBRARY.define(schema)


class _KernelStub:
    """A kernel namespace whose ops exist for construction and fail if called."""

    def __init__(self, namespace: str) -> None:
        self._namespace = namespace

    def __getattr__(self, op: str):
        def _call(*args, **kwargs):
            raise RuntimeError(f"kernel {self._namespace}.{op} is a stub on this host")

        _call.default = _call
        return _call


def install() -> None:
    """Set vLLM's platform and the kernel stubs; call before building any model."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    class MeasuringPlatform(CpuPlatform):
        """vLLM's CPU platform, keeping the checkpoint dtype (a GPU keeps bf16/fp16) and
        constructing MLA layers with vLLM's CUDA MLA backends."""

        @property
        def supported_dtypes(self):
            return [torch.bfloat16, torch.float16, torch.float32]

        @classmethod
        def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None):
            if attn_selector_config.use_mla:
                return SPARSE_MLA_BACKEND if attn_selector_config.use_sparse else MLA_BACKEND
            return super().get_attn_backend_cls(selected_backend, attn_selector_config, num_heads)

    platforms._current_platform = MeasuringPlatform()
    _declare_torchvision_ops()
    import vllm._custom_ops  # noqa: F401  (registers fakes against the real, empty namespace)
    import vllm.model_executor.layers.linear  # noqa: F401

    for namespace in KERNEL_NAMESPACES:
        setattr(torch.ops, namespace, _KernelStub(namespace))
    # fa_utils defines its flash-attention names only on CUDA, XPU and ROCm; MLA's prefill
    # backend imports them and checks they are there (kernel stubs, never called here).
    from vllm.v1.attention.backends import fa_utils

    for name in FLASH_ATTN_NAMES:
        if getattr(fa_utils, name, None) is None:
            setattr(fa_utils, name, _KernelStub("vllm_flash_attn").__getattr__(name))
    from vllm.v1.attention.backends.mla.prefill import flash_attn as mla_prefill

    for name in FLASH_ATTN_NAMES:  # names it bound to None when fa_utils lacked them
        if hasattr(mla_prefill, name) and getattr(mla_prefill, name) is None:
            setattr(mla_prefill, name, getattr(fa_utils, name))
    # ModelRegistry inspects a model class in a subprocess "to avoid initializing CUDA"; there
    # is no CUDA here, and the subprocess would lack these shims.
    from vllm.model_executor.models import registry

    registry._run_in_subprocess = lambda function: function()
    # sparse-attention layers take their scratch buffers from the worker's workspace manager
    from vllm.v1.worker.workspace import init_workspace_manager

    init_workspace_manager(torch.device("cpu"))


_DISTRIBUTED_READY = False


def tensor_parallel(vllm_config, tp: int) -> None:
    """A one-process model-parallel group that reports world size `tp` and rank 0, so layers
    are built with rank 0's shard of a tp-way split (what one GPU of tp holds). The groups are
    made again for each model (the expert-parallel group exists only for MoE models)."""
    global _DISTRIBUTED_READY
    from vllm.config import set_current_vllm_config
    from vllm.distributed import parallel_state

    with set_current_vllm_config(vllm_config):
        if not _DISTRIBUTED_READY:
            folder = tempfile.mkdtemp(prefix="vllm-conformance-")
            parallel_state.init_distributed_environment(
                world_size=1,
                rank=0,
                distributed_init_method=f"file://{folder}/rendezvous",
                local_rank=0,
                backend="gloo",
            )
            _DISTRIBUTED_READY = True
        parallel_state.destroy_model_parallel()
        parallel_state.initialize_model_parallel(1, 1)
    parallel_state._TP.world_size = tp
