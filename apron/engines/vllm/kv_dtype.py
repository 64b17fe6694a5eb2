"""What vLLM's `--kv-cache-dtype auto` resolves to for a checkpoint (pin 0231dd54).

`resolve_kv_cache_dtype_string` (vllm/utils/torch_utils.py) maps a ModelOpt `kv_cache_scheme` /
`kv_cache_quant_algo` to fp8_e4m3 or nvfp4; else `Attention.__init__`
(vllm/model_executor/layers/attention/attention.py) turns a compressed-tensors `kv_cache_scheme`
into fp8 (MLAAttention does not); else the model dtype (`_get_and_verify_dtype` in
vllm/config/model.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron.constraints import EngineConstraints
from apron.kv_dtype import (
    CONFIG_DTYPES,
    SAFETENSORS_FLOAT_DTYPES,
    KvDtypeChoice,
    architectures_of,
    config_dtype_value,
    model_dir_of,
    quant_config,
    weight_dtypes,
)
from apron.terminal import shown

# vLLM's literals are read from generated/vllm kv_dtype_literals (extractors/vllm/
# kv_dtype_rules.py): FLOAT16_REFUSED model_type -> reason (vllm/config/model.py
# _FLOAT16_NOT_SUPPORTED_MODELS), MODELOPT_KV ModelOpt KV algorithm -> cache dtype
# (vllm/utils/torch_utils.py MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP), MODELOPT_METHOD ModelOpt
# quant_algo -> quant_method (model_arch_config_convertor.py _normalize_quantization_config)
VLLM_LITERALS = "kv_dtype_literals"


FLOAT16_REFUSED = "float16_not_supported"


MODELOPT_KV = "modelopt_kv_cache_dtype"


MODELOPT_METHOD = "modelopt_quant_method"


def vllm_literal(vllm: EngineConstraints | None, literal: str) -> dict[str, str] | None:
    """key -> value of one extracted vLLM literal; None when the generated facts have none (or
    an entry the extractor could not read, which would make any answer a guess)."""
    rows = [r for r in vllm.rows(VLLM_LITERALS) if r.literal == literal] if vllm else []
    if not rows or any(r.status != "read" for r in rows):
        return None
    return {r.key: r.value for r in rows}


def _not_extracted(literal: str) -> KvDtypeChoice:
    return KvDtypeChoice(
        None, f"auto: vLLM's {literal} literal is not among the extracted facts", ()
    )


# vllm/model_executor/layers/quantization/compressed_tensors validate_kv_cache_scheme
VLLM_CT_KV_STRATEGIES = frozenset({"tensor", "attn_head"})


VLLM_TORCH_UTILS = "vllm/utils/torch_utils.py resolve_kv_cache_dtype_string"


VLLM_ATTENTION = "vllm/model_executor/layers/attention/attention.py Attention.__init__"


VLLM_MLA = "vllm/model_executor/layers/attention/mla_attention.py MLAAttention.__init__"


VLLM_DTYPE = "vllm/config/model.py _get_and_verify_dtype"


def _vllm_model_dtype(
    vllm: EngineConstraints | None, config: Mapping[str, Any], model_dir: Path | None, pooling: bool
) -> KvDtypeChoice:
    value, key = config_dtype_value(config)
    how = ""
    if value is None:
        stored = weight_dtypes(model_dir)
        floats = sorted(
            {SAFETENSORS_FLOAT_DTYPES[d] for d in stored if d in SAFETENSORS_FLOAT_DTYPES}
        )
        if "F64" in stored:
            return KvDtypeChoice(
                None,
                "auto: no dtype in config.json and F64 weights: vLLM's common_broadcastable_dtype "
                "then picks float64, which apron does not follow further",
                ("dtype", "torch_dtype"),
            )
        if len(floats) == 1:
            config_dtype = floats[0]
            how = f"no dtype in config.json; the safetensors headers hold {config_dtype} weights"
            key = "safetensors headers"
        elif "fp32" in floats:
            config_dtype = "fp32"
            how = (
                f"no dtype in config.json; safetensors weights in {', '.join(floats)}: "
                "common_broadcastable_dtype gives fp32"
            )
            key = "safetensors headers"
        elif floats:
            return KvDtypeChoice(
                None,
                f"auto: no dtype in config.json and weights in {', '.join(floats)}: vLLM's "
                "common_broadcastable_dtype over a set is not evaluated by apron",
                ("dtype", "torch_dtype"),
            )
        else:
            where = (
                f"there are none in {model_dir_of(model_dir)}"
                if model_dir
                else ("no checkpoint directory was given")
            )
            return KvDtypeChoice(
                None,
                "auto: no dtype in config.json; vLLM then takes the dtypes of the safetensors "
                f"weights (ModelArchConfigConvertorBase.get_torch_dtype), and {where}",
                ("dtype", "torch_dtype"),
            )
    else:
        mapped = CONFIG_DTYPES.get(value.lower())
        if mapped is None:
            return KvDtypeChoice(
                None,
                f"auto: the config's {key} = {shown(repr(value))} is not a dtype apron knows",
                (key,),
            )
        config_dtype = mapped
        how = f"the config's {key} = {value}"
    model_type = config.get("model_type")
    dtype = config_dtype
    if config_dtype == "fp32":
        refused = vllm_literal(vllm, FLOAT16_REFUSED) if pooling else {}
        if refused is None:
            return _not_extracted(FLOAT16_REFUSED)
        if pooling and model_type not in refused:
            dtype = "fp16"
            how += ", downcast to float16 (pooling model)"
        else:
            dtype = "bf16"
            how += ", downcast to bfloat16 (a GPU with bfloat16, compute capability >= 8.0)"
    return KvDtypeChoice(
        dtype, f"auto: the model dtype {dtype}: {how} ({VLLM_DTYPE})", (key,) if key else ()
    )


def _vllm_modelopt_kv(
    vllm: EngineConstraints | None, quant: Mapping[str, Any]
) -> tuple[str | None, str]:
    """(vLLM cache dtype string or None, what was read): get_kv_cache_quant_algo_string."""
    inner = quant.get("quantization", quant)
    if not isinstance(inner, Mapping):
        inner = quant
    for node, key in (
        (inner, "kv_cache_scheme"),
        (quant, "kv_cache_scheme"),
        (inner, "kv_cache_quant_algo"),
        (quant, "kv_cache_quant_algo"),
    ):
        value = node.get(key)
        if value:
            where = ("quantization." if node is not quant else "") + key
            break
    else:
        return None, ""
    if isinstance(value, Mapping):
        if (
            value.get("dynamic") is False
            and value.get("num_bits") == 8
            and value.get("type") == "float"
        ):
            value = "fp8"
        elif value.get("num_bits") == 4 and value.get("type") == "float":
            value = "nvfp4"
        else:
            return "auto", f"{where} {dict(value)} (not a scheme vLLM maps: falls back to auto)"
    if isinstance(value, str):
        kv_map = vllm_literal(vllm, MODELOPT_KV)
        if kv_map is None:
            return None, f"{where} = {shown(repr(value))}: {MODELOPT_KV} not extracted"
        mapped = kv_map.get(value.lower())
        if mapped is None:
            return "auto", f"{where} = {shown(repr(value))} (unknown to vLLM: falls back to auto)"
        return mapped, f"{where} = {value}"
    return None, ""


def _vllm_quant_method(vllm: EngineConstraints | None, quant: Mapping[str, Any]) -> tuple[str, str]:
    """(normalised quant_method, refusal) as _normalize_quantization_config sets it."""
    producer = quant.get("producer")
    producer_name = producer.get("name") if isinstance(producer, Mapping) else None
    inner = quant.get("quantization", {})
    legacy = isinstance(inner, Mapping) and "modelopt_quant_config" in inner
    method = quant.get("quant_method", "")
    if (producer_name == "modelopt" or legacy) and isinstance(inner, Mapping):
        algo = inner.get("quant_algo")
        if algo is not None:
            methods = vllm_literal(vllm, MODELOPT_METHOD)
            if methods is None:
                return "", f"vLLM's {MODELOPT_METHOD} literal is not among the extracted facts"
            method = methods.get(str(algo).upper(), "")
            if not method:
                return (
                    "",
                    f"vLLM refuses the ModelOpt quant_algo {shown(repr(algo))} (Unknown ModelOpt quant algo)",
                )
    if not isinstance(method, str):
        return "", f"quant_method {shown(repr(method))} is not a string"
    return method.lower().replace("compressed_tensors", "compressed-tensors"), ""


def _vllm_compressed_tensors(scheme: Mapping[str, Any]) -> str:
    """Why vLLM refuses this compressed-tensors kv_cache_scheme at startup, or ""."""
    if scheme.get("type") != "float" or scheme.get("num_bits") != 8:
        return (
            f"num_bits={scheme.get('num_bits')}, type={scheme.get('type')} (only num_bits=8, "
            "type=float is supported)"
        )
    if scheme.get("strategy") not in VLLM_CT_KV_STRATEGIES:
        return f"strategy {shown(repr(scheme.get('strategy')))} (only tensor or attn_head)"
    if not scheme.get("symmetric"):
        return "symmetric is not true (only symmetric scales)"
    return ""


def _vllm(
    vllm: EngineConstraints | None,
    config: Mapping[str, Any],
    model_dir: Path | None,
    mla: bool,
    pooling: bool,
) -> KvDtypeChoice:
    architectures = architectures_of(config)
    if "DeepseekV4ForCausalLM" in architectures or (mla and "index_topk" in config):
        return KvDtypeChoice(
            None,
            "auto: sparse MLA; vLLM picks the KV format by attention backend (e.g. fp8_ds_mla on "
            "FLASHINFER_MLA_SPARSE_SM120), which depends on the GPU "
            "(mla_attention.py _canonicalize_sparse_mla_kv_cache_dtype)",
            ("index_topk",) if "index_topk" in config else ("architectures",),
        )
    quant = quant_config(config, model_dir, file_before_compression=True)
    if quant.body is not None:
        method, refusal = _vllm_quant_method(vllm, quant.body)
        if refusal:
            return KvDtypeChoice(None, f"auto: {refusal}", (quant.key,))
        if method.startswith("modelopt") and quant.key != "compression_config":
            resolved, what = _vllm_modelopt_kv(vllm, quant.body)
            if resolved == "fp8_e4m3":
                return KvDtypeChoice(
                    "fp8",
                    f"auto: {quant.key} {what} -> fp8_e4m3 ({VLLM_TORCH_UTILS})",
                    (quant.key,),
                )
            if resolved == "nvfp4":
                return KvDtypeChoice(
                    None,
                    f"auto: {quant.key} {what} -> nvfp4 ({VLLM_TORCH_UTILS}); the nvfp4 KV "
                    "layout (packed fp4 data + fp8 block scales) is not modelled by apron",
                    (quant.key,),
                )
            if resolved == "auto":
                base = _vllm_model_dtype(vllm, config, model_dir, pooling)
                return base._replace(reason=f"{base.reason}; {quant.key} {what}")
            if resolved is None and what:
                return KvDtypeChoice(None, f"auto: {quant.key} {what}", (quant.key,))
            if resolved is not None:
                return KvDtypeChoice(
                    None,
                    f"auto: {quant.key} {what} -> {resolved} ({VLLM_TORCH_UTILS}), a cache dtype "
                    "apron does not model",
                    (quant.key,),
                )
            if resolved is None:
                base = _vllm_model_dtype(vllm, config, model_dir, pooling)
                return base._replace(
                    reason=f"{base.reason}; {quant.key} ({method}) sets no kv_cache_scheme or "
                    "kv_cache_quant_algo"
                )
        scheme = quant.body.get("kv_cache_scheme")
        if method == "compressed-tensors" and scheme is not None:
            if mla:
                base = _vllm_model_dtype(vllm, config, model_dir, pooling)
                return base._replace(
                    reason=f"{base.reason}; {quant.key}.kv_cache_scheme is set but MLA layers "
                    f"do not read it ({VLLM_MLA})"
                )
            refusal = (
                _vllm_compressed_tensors(scheme)
                if isinstance(scheme, Mapping)
                else (f"{shown(repr(scheme))} is not an object")
            )
            if refusal:
                return KvDtypeChoice(
                    None,
                    f"auto: vLLM refuses the compressed-tensors kv_cache_scheme at startup: "
                    f"{refusal} (CompressedTensorsKVCacheMethod.validate_kv_cache_scheme)",
                    (quant.key + ".kv_cache_scheme",),
                )
            fields = {k: scheme[k] for k in ("num_bits", "type", "strategy") if k in scheme}
            return KvDtypeChoice(
                "fp8",
                f"auto: {quant.key}.kv_cache_scheme {shown(fields)} -> fp8 ({VLLM_ATTENTION})",
                (quant.key + ".kv_cache_scheme",),
            )
    return _vllm_model_dtype(vllm, config, model_dir, pooling)


def auto_kv_dtype(
    vllm: EngineConstraints | None,
    config: Mapping[str, Any],
    model_dir: Path | None,
    mla: bool,
    pooling: bool,
) -> KvDtypeChoice:
    """vLLM's KV cache dtype for `auto` with this checkpoint."""
    return _vllm(vllm, config, model_dir, mla, pooling)
