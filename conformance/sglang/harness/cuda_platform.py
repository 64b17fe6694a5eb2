"""The answers SGLang gets on a CUDA host that this CPU host does not give, set as on CUDA (and
only these): the platform predicates ServerArgs tests, the default prefill cuda-graph backend
(`breakable` on CUDA), and the quantization methods registered only on CUDA (mxfp4)."""

from __future__ import annotations

NOT_THIS_PLATFORM = ("is_cpu", "is_hip", "is_npu", "is_mps", "is_xpu", "is_musa")


def as_on_cuda() -> None:
    """Patch module attributes (idempotent)."""
    from sglang.srt import server_args
    from sglang.srt.layers import quantization
    from sglang.srt.layers.quantization.mxfp4 import Mxfp4Config
    from sglang.srt.model_executor import cuda_graph_config

    server_args.is_cuda = lambda: True
    for name in NOT_THIS_PLATFORM:
        if hasattr(server_args, name):
            setattr(server_args, name, lambda: False)
    cuda_graph_config.default_prefill_backend = lambda: cuda_graph_config.Backend.BREAKABLE
    # `if is_cpu() or is_cuda() or ...: BASE_QUANTIZATION_METHODS.update({"mxfp4": ...})`
    quantization.BASE_QUANTIZATION_METHODS.setdefault("mxfp4", Mxfp4Config)
    quantization.QUANTIZATION_METHODS.setdefault("mxfp4", Mxfp4Config)
