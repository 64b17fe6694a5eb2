"""SGLang's own answers for one config.json: ModelConfig's (KV heads per GPU, head sizes, layers,
MLA, window, hybrid pools, context length) and the KV pool's cell size per token from the pool
configurator the model runner would pick (pool_configurator.create_memory_pool_configurator),
given the inputs the model runner gives it."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from harness.cuda_platform import as_on_cuda

TPS = (1, 2, 8)
# errors that say the config needs code from its Hub repository (trust_remote_code): not
# SGLang's verdict on the config, so not a measurement here
NEEDS_REMOTE_CODE = ("trust_remote_code", "does not recognize this architecture")


class NotMeasurable(Exception):
    """The input cannot be measured in this environment (the message says why)."""


KV_DTYPES = {"bf16": ("auto", "bfloat16"), "fp8": ("fp8_e4m3", "float8_e4m3fn")}


def default_server_args() -> SimpleNamespace:
    """ServerArgs' field defaults, without __post_init__ (the pool configurators read a few)."""
    from sglang.srt.server_args import ServerArgs

    values: dict[str, Any] = {}
    for field in dataclasses.fields(ServerArgs):
        if field.default is not dataclasses.MISSING:
            values[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            values[field.name] = field.default_factory()
    return SimpleNamespace(**values)


def model_config(model_dir: str):
    from sglang.srt.configs.model_config import ModelConfig

    as_on_cuda()
    return ModelConfig(model_dir, trust_remote_code=False)  # ServerArgs' default


def config_figures(config) -> dict[str, Any]:
    """The tp-independent ModelConfig answers."""
    from sglang.srt.configs.hybrid_arch import mambaish_config
    from sglang.srt.configs.model_config import AttentionArch

    state = mambaish_config(config)
    figures: dict[str, Any] = {
        "attention_arch": "mla" if config.attention_arch == AttentionArch.MLA else "mha",
        "context_len": config.context_len,
        "head_dim": config.head_dim,
        "v_head_dim": config.v_head_dim,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_layers": config.num_attention_layers,
        "sliding_window_size": config.sliding_window_size,
        "is_hybrid_swa": bool(config.is_hybrid_swa),
        "is_multimodal": bool(config.is_multimodal),
        "state_pool_config": type(state).__name__ if state is not None else None,
    }
    if config.is_hybrid_swa:
        figures["full_attention_layers"] = len(config.full_attention_layer_ids)
        figures["swa_attention_layers"] = len(config.swa_attention_layer_ids)
        figures["swa_head_dim"] = config.swa_head_dim
    if state is not None:
        figures["state_full_attention_layers"] = len(state.full_attention_layer_ids)
    return figures


def _kvc(config, kv_dtype: str, server_args: SimpleNamespace) -> SimpleNamespace:
    """What ModelRunner hands the pool configurator (KVCacheConfigurator's fields it reads)."""
    import torch
    from sglang.srt.configs.model_config import AttentionArch
    from sglang.srt.model_executor.model_runner_components.layer_setup import (
        resolve_layer_indices,
    )
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    dtype_name, torch_name = KV_DTYPES[kv_dtype]
    layers = resolve_layer_indices(
        model=None,
        model_config=config,
        is_draft_worker=False,
        spec_algorithm=SpeculativeAlgorithm.NONE,
    )
    return SimpleNamespace(
        kv_cache_dtype_str=dtype_name,
        kv_cache_dtype=getattr(torch, torch_name),
        model_dtype=config.dtype,
        model_config=config,
        layer_info=layers,
        ps=SimpleNamespace(pp_size=1),
        server_args=server_args,
        spec_algorithm=SpeculativeAlgorithm.NONE,
        spec_aux_config=SimpleNamespace(),
        is_draft_worker=False,
        use_mla_backend=config.attention_arch == AttentionArch.MLA,
        is_hybrid_swa=config.is_hybrid_swa,
        sliding_window_size=config.sliding_window_size,
        page_size=1,
    )


def pool_figures(config, tp: int, kv_dtype: str, server_args: SimpleNamespace) -> dict[str, Any]:
    """The configurator's cell size per token (and, for a hybrid-SWA pool, each kind of layer's
    bytes per token) at this attention tp and KV dtype."""
    from sglang.srt.model_executor import pool_configurator
    from sglang.srt.runtime_context import get_parallel

    kvc = _kvc(config, kv_dtype, server_args)
    with get_parallel().override(attn_tp_size=tp, attn_dcp_size=1, attn_cp_size=1):
        configurator = pool_configurator.create_memory_pool_configurator(kvc)
    figures: dict[str, Any] = {
        "pool_configurator": type(configurator).__name__,
        "cell_size": int(configurator._cell_size),
    }
    if hasattr(configurator, "_full_per_token"):
        figures["full_layer_bytes_per_token"] = int(configurator._full_per_token)
        figures["swa_layer_bytes_per_token"] = int(configurator._swa_per_token)
        figures["swa_full_tokens_ratio"] = float(configurator._swa_full_tokens_ratio)
    return figures


def measure(model_dir: str, server_args: SimpleNamespace) -> list[tuple[dict, str, Any, str]]:
    """(settings, figure, value, refused) for one config directory."""
    rows: list[tuple[dict, str, Any, str]] = []
    try:
        config = model_config(model_dir)
    except Exception as err:  # the engine refuses the config: a measurement too
        if any(marker in str(err) for marker in NEEDS_REMOTE_CODE):
            raise NotMeasurable(
                f"needs its remote code (not in the record): {_short(err)}"
            ) from err
        return [({}, "model_config", None, _short(err))]
    for figure, value in config_figures(config).items():
        rows.append(({}, figure, value, ""))
    for tp in TPS:
        rows.append(({"tp": tp}, "kv_heads_per_gpu", config.get_num_kv_heads(tp), ""))
        for kv_dtype in KV_DTYPES:
            settings = {"tp": tp, "kv_dtype": kv_dtype}
            try:
                found = pool_figures(config, tp, kv_dtype, server_args)
            except Exception as err:
                rows.append((settings, "cell_size", None, _short(err)))
                continue
            rows.extend((settings, figure, value, "") for figure, value in found.items())
    return rows


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:300]}"
