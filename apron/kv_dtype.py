"""What `--kv-cache-dtype auto` resolves to, per engine, from the checkpoint's config and quant config:
the checkpoint reading every engine shares; each engine's own rule is its
apron/engines/<engine>/kv_dtype.py (EngineRules.auto_kv_dtype, dispatched by
apron.planning.engine_registry.resolve_kv_dtype_auto).

vLLM (pin 0231dd54): `resolve_kv_cache_dtype_string` (vllm/utils/torch_utils.py) maps a ModelOpt
`kv_cache_scheme` / `kv_cache_quant_algo` to fp8_e4m3 or nvfp4; else `Attention.__init__`
(vllm/model_executor/layers/attention/attention.py) turns a compressed-tensors `kv_cache_scheme`
into fp8 (MLAAttention does not); else the model dtype (`_get_and_verify_dtype` in
vllm/config/model.py). SGLang (pin 30cb848d): `configure_kv_cache_dtype`
(python/sglang/srt/mem_cache/kv_cache_dtype.py) takes fp8_e4m3 when the quant config's
`kv_cache_quant_algo` is FP8 (ModelOpt, fp8), else the model dtype (`_get_and_verify_dtype` in
python/sglang/srt/configs/model_config.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron.input_files import present
from apron.json_files import read_json_object
from apron.record import Record

HF_QUANT_CONFIG = "hf_quant_config.json"
MAX_QUANT_CONFIG_BYTES = 10_000_000

# torch dtype spellings in config.json -> apron.planning.planner.KV_DTYPES names
CONFIG_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}
# safetensors header dtypes vLLM maps to torch float dtypes (get_safetensors_params_metadata path)
SAFETENSORS_FLOAT_DTYPES = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}


class KvDtypeChoice(Record):
    """The KV cache dtype an engine picks for `auto`, and why."""

    dtype: (
        str | None
    )  # "bf16" / "fp16" / "fp8" / "fp32" (apron.planning.planner.KV_DTYPES names), None = unknown
    reason: str
    source_keys: tuple[str, ...]


class QuantConfig(Record):
    body: Mapping[str, Any] | None
    key: (
        str  # where it came from: "quantization_config", "compression_config", hf_quant_config.json
    )
    looked_for_file: bool


def _read_hf_quant_config(model_dir: Path) -> Mapping[str, Any] | None:
    path = model_dir / HF_QUANT_CONFIG
    if not present(path):  # a FIFO or a broken link there is refused by the reader, not absent
        return None
    return read_json_object(path, MAX_QUANT_CONFIG_BYTES, "a quantization config")


def model_dir_of(model_dir: Path | None) -> Path | None:
    if model_dir is None:
        return None
    path = Path(model_dir)
    return path.parent if path.is_file() else path


def quant_config(
    config: Mapping[str, Any], model_dir: Path | None, *, file_before_compression: bool
) -> QuantConfig:
    """config.json's quantization_config, else hf_quant_config.json beside it (ModelOpt <= 0.29)
    or compression_config (compressed-tensors): vLLM (transformers_utils/config.py get_config)
    looks for the file first, SGLang (ModelConfig._parse_quant_hf_config) for compression_config."""
    body = config.get("quantization_config")
    if isinstance(body, Mapping):
        return QuantConfig(body, "quantization_config", False)
    directory = model_dir_of(model_dir)
    compression = config.get("compression_config")
    if isinstance(compression, Mapping) and not file_before_compression:
        return QuantConfig(compression, "compression_config", False)
    if directory is not None:
        data = _read_hf_quant_config(directory)
        if data is not None:
            return QuantConfig(data, HF_QUANT_CONFIG, True)
    if isinstance(compression, Mapping):
        return QuantConfig(compression, "compression_config", directory is not None)
    return QuantConfig(None, "", directory is not None)


def architectures_of(config: Mapping[str, Any]) -> tuple[str, ...]:
    value = config.get("architectures")
    if isinstance(value, list | tuple):
        return tuple(a for a in value if isinstance(a, str))
    return ()


def config_dtype_value(config: Mapping[str, Any]) -> tuple[str | None, str]:
    """(torch dtype string, key) the way transformers exposes `config.dtype` (torch_dtype is its
    older spelling), falling back to the text/vision/encoder sub-config as vLLM's get_torch_dtype."""
    for prefix in ("", "text_config.", "vision_config.", "encoder_config."):
        node = config if not prefix else config.get(prefix[:-1])
        if not isinstance(node, Mapping):
            continue
        for key in ("dtype", "torch_dtype"):
            value = node.get(key)
            if isinstance(value, str):
                return value, prefix + key
    return None, ""


def weight_dtypes(model_dir: Path | None) -> tuple[str, ...]:
    directory = model_dir_of(model_dir)
    if directory is None:
        return ()
    from apron.weights import checkpoint_weights

    weights = checkpoint_weights(directory)
    if weights is None:
        return ()
    return tuple(d.dtype for d in weights.by_dtype)
