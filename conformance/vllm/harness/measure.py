"""Measure one config.json with vLLM: ModelConfig's answers, the per-layer KV-cache specs of the
model built on the meta device (as GPUModelRunner.get_kv_cache_spec collects them) and vLLM's
own block and concurrency math (get_kv_cache_configs, get_max_concurrency_for_kv_cache_config)."""

from __future__ import annotations

import math
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TP_SIZES = (1, 2, 8)
BLOCK_TOKENS = (
    16  # --block-size 16: FLASH_ATTN's choice on CUDA, fixed so the CPU platform's 128 is not used
)
# KV-cache budgets (bytes after weights and activations) and contexts (max_model_len) at which
# vLLM's block count and concurrency are measured, at tp 1.
BUDGETS = (4 * 2**30, 20 * 2**30)
CONTEXTS = (4096, 32768)


# A config whose model_type only the checkpoint's own configuration code defines (auto_map,
# trust_remote_code): that code is not among the inputs, so vLLM cannot be asked here.
NEEDS_REMOTE_CODE = ("contains custom code", "does not recognize this architecture")


@dataclass
class Figures:
    """What one input gave: figures (one dict per measurement line) and what could not run."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    not_measured: list[dict[str, str]] = field(default_factory=list)

    def add(self, figure: str, value: Any, settings: dict[str, Any] | None = None, **extra) -> None:
        self.rows.append({"figure": figure, "value": value, "settings": settings or {}, **extra})

    def refuse(self, figure: str, message: str, settings: dict[str, Any] | None = None) -> None:
        self.rows.append(
            {
                "figure": figure,
                "value": None,
                "settings": settings or {},
                "refused": _short(message),
            }
        )

    def skip(self, what: str, error: BaseException) -> None:
        self.not_measured.append({"what": what, "why": _short(f"{type(error).__name__}: {error}")})


def _short(message: str, limit: int = 300) -> str:
    line = " ".join(str(message).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _model_config(folder: Path):
    from vllm.config import ModelConfig

    return ModelConfig(
        model=str(folder),
        tokenizer=str(folder),
        skip_tokenizer_init=True,
        dtype="auto",
        trust_remote_code=False,
    )


def _vllm_config(model_config, tp: int):
    from vllm.config import CacheConfig, DeviceConfig, LoadConfig, ParallelConfig, VllmConfig
    from vllm.transformers_utils.config import is_interleaved

    # EngineArgs.create_engine_config: a model that windows every layer (not interleaved) gets
    # CacheConfig.sliding_window, which its Attention layers take when they have no per-layer
    # window (Mistral 7B v0.1 builds SlidingWindowSpec layers under `vllm serve`)
    interleaved = is_interleaved(model_config.hf_text_config)
    window = None if interleaved else model_config.get_sliding_window()
    cache = CacheConfig(block_size=BLOCK_TOKENS, cache_dtype="auto", sliding_window=window)
    return VllmConfig(
        model_config=model_config,
        cache_config=cache,
        parallel_config=ParallelConfig(tensor_parallel_size=1),
        device_config=DeviceConfig(device="cpu"),
        load_config=LoadConfig(load_format="dummy"),
    )


def model_config_answers(model_config, out: Figures) -> None:
    """ModelConfig's answers that do not depend on tp (one that raises is not measured)."""
    answers = {
        "total_kv_heads": model_config.get_total_num_kv_heads,
        "is_mla": lambda: bool(model_config.use_mla),
        "is_hybrid": lambda: bool(model_config.is_hybrid),
        "is_attention_free": lambda: bool(model_config.is_attention_free),
        "is_encoder_decoder": lambda: bool(model_config.is_encoder_decoder),
        "max_model_len": lambda: int(model_config.max_model_len),
    }
    for figure, answer in answers.items():
        try:
            out.add(figure, answer())
        except Exception as error:
            out.skip(figure, _located(error))


def tp_answers(model_config, tp: int, out: Figures) -> bool:
    """KV heads per GPU at tp, or vLLM's refusal of the tp; True when the tp is accepted."""
    from vllm.config import ParallelConfig

    parallel = ParallelConfig(tensor_parallel_size=tp)
    settings = {"tp": tp}
    try:
        model_config.verify_with_parallel_config(parallel)
    except (ValueError, AssertionError, NotImplementedError) as refusal:
        out.refuse("kv_heads_per_gpu", str(refusal), settings)
        return False
    out.add("kv_heads_per_gpu", model_config.get_num_kv_heads(parallel), settings)
    return True


def _build_specs(model_config, tp: int):
    """The model's per-layer KV-cache specs at tp (rank 0), built on the meta device."""
    import torch
    from vllm.config import get_layers_from_vllm_config, set_current_vllm_config
    from vllm.model_executor.layers.attention import Attention
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.platforms.interface import Platform
    from vllm.utils.torch_utils import set_default_torch_dtype
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    from harness import cpu_shims

    vllm_config = _vllm_config(model_config, tp)
    cpu_shims.tensor_parallel(vllm_config, tp)
    vllm_config.parallel_config.tensor_parallel_size = tp
    if model_config.is_hybrid:
        # Platform.update_block_size_for_backend's phase 2 on CUDA with FLASH_ATTN.
        Platform._align_hybrid_block_size(vllm_config, FlashAttentionBackend)
    with (
        set_current_vllm_config(vllm_config),
        torch.device("meta"),
        set_default_torch_dtype(model_config.dtype),
    ):
        initialize_model(vllm_config=vllm_config)
    specs = {}
    layers = get_layers_from_vllm_config(vllm_config, AttentionLayerBase)
    for name, layer in layers.items():
        if isinstance(layer, Attention) and layer.kv_sharing_target_layer_name:
            continue  # GPUModelRunner.get_kv_cache_spec: it uses the target layer's cache
        spec = layer.get_kv_cache_spec(vllm_config)
        if spec:
            specs[name] = spec
    return vllm_config, specs


def _state_bytes(spec) -> int:
    return sum(
        math.prod(shape) * _dtype_size(dtype)
        for shape, dtype in zip(spec.shapes, spec.dtypes, strict=True)
    )


def _dtype_size(dtype) -> int:
    import torch

    return torch.tensor([], dtype=dtype).element_size()


def kv_dtype_name(model_config) -> str:
    """The KV cache dtype with cache_dtype "auto": the model dtype (bfloat16, float16, ...)."""
    return str(model_config.dtype).removeprefix("torch.")


def spec_figures(specs: dict, tp: int, kv_dtype: str, out: Figures) -> None:
    """Bytes per token per GPU (attention pages / block tokens; a layer that shares another
    layer's KV has no spec; cross-attention layers, which hold the encoder's tokens, are left
    out) and, for a model without cross-attention, state bytes per sequence (the state tensors,
    unpadded)."""
    from vllm.v1.kv_cache_interface import AttentionSpec, CrossAttentionSpec, MambaSpec

    settings = {"tp": tp, "kv_dtype": kv_dtype}
    per_token = 0
    state = 0
    cross = False
    for spec in specs.values():
        if isinstance(spec, MambaSpec):
            state += _state_bytes(spec)
        elif isinstance(spec, CrossAttentionSpec):
            cross = True
        elif isinstance(spec, AttentionSpec):
            page = spec.page_size_bytes
            if page % spec.block_size:
                raise ValueError(f"page {page} B is not a whole number of bytes per token")
            per_token += page // spec.block_size
        else:
            raise TypeError(f"spec kind {type(spec).__name__} is not read by this harness")
    out.add("kv_bytes_per_token", per_token, settings)
    if not cross:
        out.add("state_bytes_per_sequence", state, settings)


def capacity_figures(vllm_config, specs: dict, out: Figures) -> None:
    """vLLM's block count and max concurrency for each budget and context (tp 1)."""
    from vllm.v1.core.kv_cache_utils import (
        get_kv_cache_configs,
        get_max_concurrency_for_kv_cache_config,
    )

    model_config = vllm_config.model_config
    derived = model_config.max_model_len
    for context in CONTEXTS:
        if context > derived:
            continue
        model_config.max_model_len = context
        for budget in BUDGETS:
            settings = {
                "tp": 1,
                "kv_dtype": kv_dtype_name(model_config),
                "context": context,
                "kv_budget_bytes": budget,
                "block_tokens": vllm_config.cache_config.block_size,
                "max_num_batched_tokens": vllm_config.scheduler_config.max_num_batched_tokens,
            }
            try:
                (config,) = get_kv_cache_configs(vllm_config, [specs], [budget])
            except ValueError as refusal:
                out.refuse("num_blocks", str(refusal), settings)
                continue
            out.add("num_blocks", int(config.num_blocks), settings)
            concurrency = get_max_concurrency_for_kv_cache_config(vllm_config, config)
            out.add("max_concurrency", math.floor(concurrency), settings)
    model_config.max_model_len = derived


def _located(error: BaseException) -> BaseException:
    """An exception whose message also names the vLLM line that raised it."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    where = frame.filename.split("site-packages/")[-1]
    return type(error)(f"{error} [{where}:{frame.lineno}: {frame.line}]")


def _divisibility(error: AssertionError) -> bool:
    """A layer's own tp check (a size the tp must divide): vLLM refuses this tp at startup."""
    text = str(error).lower()
    return "divide" in text or "divisible" in text


def _build_with_fallback(model_config, tp: int, out: Figures):
    """Build the model; when its weight quantization has no kernel on this host, build it
    again without weight quantization (the KV-cache specs do not depend on it) and say so."""
    try:
        return _build_specs(model_config, tp)
    except Exception as error:
        if model_config.quantization is None or "kernel" not in str(error).lower():
            raise
        if tp == 1:
            out.skip("weight quantization", _located(error))
        model_config.quantization = None
        for config in {
            id(c): c for c in (model_config.hf_config, model_config.hf_text_config)
        }.values():
            if hasattr(config, "quantization_config"):
                delattr(config, "quantization_config")
        return _build_specs(model_config, tp)


def measure(config_path: Path) -> Figures:
    """Every figure for one config.json; failures to build on this host go to not_measured."""
    out = Figures()
    folder = Path(tempfile.mkdtemp(prefix="vllm-input-"))
    try:
        shutil.copy(config_path, folder / "config.json")
        try:
            model_config = _model_config(folder)
        except Exception as refusal:  # vLLM or transformers refused the config
            message = f"{type(refusal).__name__}: {refusal}"
            if any(mark in message for mark in NEEDS_REMOTE_CODE):
                out.skip("model_config", refusal)  # the checkpoint's own code is not an input
            else:
                out.refuse("model_config", message)
            return out
        model_config_answers(model_config, out)
        for tp in TP_SIZES:
            if not tp_answers(model_config, tp, out):
                continue
            try:
                fresh = _model_config(folder)  # VllmConfig updates a ModelConfig only once
                vllm_config, specs = _build_with_fallback(fresh, tp, out)
            except AssertionError as error:
                if _divisibility(error):
                    # vLLM does not start at this tp: its ModelConfig answer for the tp is
                    # replaced by the refusal
                    message = str(_located(error))
                    out.rows = [
                        r
                        for r in out.rows
                        if not (r["figure"] == "kv_heads_per_gpu" and r["settings"] == {"tp": tp})
                    ]
                    out.refuse("kv_heads_per_gpu", message, {"tp": tp})
                    settings = {"tp": tp, "kv_dtype": kv_dtype_name(fresh)}
                    out.refuse("kv_bytes_per_token", message, settings)
                else:
                    out.skip(f"model at tp {tp}", _located(error))
                continue
            except Exception as error:
                out.skip(f"model at tp {tp}", _located(error))
                continue
            spec_figures(specs, tp, kv_dtype_name(fresh), out)
            if tp == 1 and specs:
                try:
                    capacity_figures(vllm_config, specs, out)
                except Exception as error:
                    out.skip("capacity", error)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out
