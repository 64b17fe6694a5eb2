"""mem_fraction_static as ServerArgs computes it for a config, a GPU size and a tp: the real
ServerArgs.__post_init__ runs up to and through _handle_gpu_memory_settings with only the GPU
memory query patched, and with the CUDA platform answers a CPU host does not give (the platform
predicates ServerArgs tests and the default prefill cuda-graph backend) set as on CUDA."""

from __future__ import annotations

from typing import Any

from harness.cuda_platform import as_on_cuda

GIB = 2**30
GPU_GIB = (16, 24, 48, 80, 141, 192)  # one size in each of the heuristic's memory bands
TPS = (1, 2, 8)


class _Measured(Exception):
    """Raised after _handle_gpu_memory_settings: the rest of __post_init__ is not needed."""


def _gpu_memory(gpu_mib: int) -> None:
    """Patch the GPU memory query (MiB, as get_device_memory_capacity answers)."""
    from sglang.srt import server_args

    server_args.get_device_memory_capacity = lambda device=None: gpu_mib


def measure_one(model_dir: str, gpu_gib: int, tp: int) -> dict[str, Any]:
    """{mem_fraction_static, prefill_cuda_graph_backend, chunked_prefill_size} or {refused}."""
    from sglang.srt.server_args import ServerArgs

    as_on_cuda()
    _gpu_memory(gpu_gib * 1024)
    seen: dict[str, Any] = {}
    original = ServerArgs._handle_gpu_memory_settings

    def measured(self, gpu_mem):
        seen["prefill_cuda_graph_backend"] = self.cuda_graph_config.prefill.backend
        original(self, gpu_mem)
        seen["mem_fraction_static"] = self.mem_fraction_static
        seen["chunked_prefill_size"] = self.chunked_prefill_size
        raise _Measured

    ServerArgs._handle_gpu_memory_settings = measured
    try:
        ServerArgs(model_path=model_dir, tp_size=tp, device="cuda")
    except _Measured:
        return seen
    except Exception as err:
        text = " ".join(str(err).split())
        return {"refused": f"{type(err).__name__}: {text[:300]}"}
    finally:
        ServerArgs._handle_gpu_memory_settings = original
    return {"refused": "ServerArgs returned without reaching _handle_gpu_memory_settings"}


def measure(model_dir: str) -> list[tuple[dict, str, Any, str]]:
    rows: list[tuple[dict, str, Any, str]] = []
    for gpu_gib in GPU_GIB:
        for tp in TPS:
            settings = {"gpu_memory": gpu_gib * GIB, "tp": tp}
            found = measure_one(model_dir, gpu_gib, tp)
            if "refused" in found:
                rows.append((settings, "mem_fraction_static", None, found["refused"]))
                continue
            rows.extend((settings, figure, value, "") for figure, value in sorted(found.items()))
    return rows
