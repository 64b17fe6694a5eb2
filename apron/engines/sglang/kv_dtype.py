"""What SGLang's `--kv-cache-dtype auto` resolves to for a checkpoint (pin 30cb848d).

`configure_kv_cache_dtype` (python/sglang/srt/mem_cache/kv_cache_dtype.py) takes fp8_e4m3 when the
quant config's `kv_cache_quant_algo` is FP8 (ModelOpt, fp8), else the model dtype
(`_get_and_verify_dtype` in python/sglang/srt/configs/model_config.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron.constraints import EngineConstraints
from apron.kv_dtype import (
    CONFIG_DTYPES,
    KvDtypeChoice,
    architectures_of,
    quant_config,
)
from apron.terminal import shown

# SGLang's DSA architectures, whose KV dtype auto follows the GPU when index_topk is set: those in
# both generated/sglang kv_dtype_sets _DEEPSEEK_FAMILY_ARCHS (arg_groups/overrides.py) and
# architecture_sets is_deepseek_dsa (configs/model_config.py)
SGLANG_SETS = "kv_dtype_sets"


SGLANG_FAMILY = "_DEEPSEEK_FAMILY_ARCHS"


SGLANG_DSA = "is_deepseek_dsa"


def sglang_dsa_archs(sglang: EngineConstraints | None) -> frozenset[str] | None:
    """The architectures in both sets; None when either is not extracted (or not read whole)."""
    if sglang is None:
        return None
    family = [r for r in sglang.rows(SGLANG_SETS) if r.set_name == SGLANG_FAMILY]
    dsa = [
        r for r in sglang.rows("architecture_sets") if r.set_name == SGLANG_DSA and r.member_returns
    ]
    if not family or not dsa or any(r.status != "read" for r in family):
        return None
    return frozenset(r.architecture for r in family) & frozenset(r.architecture for r in dsa)


SGLANG_KV = "python/sglang/srt/mem_cache/kv_cache_dtype.py configure_kv_cache_dtype"


SGLANG_DTYPE = "python/sglang/srt/configs/model_config.py _get_and_verify_dtype"


def _sglang_dtype_of(value: Any, model_type: Any) -> tuple[str | None, str]:
    """SGLang's _get_and_verify_dtype for --dtype auto: (dtype, how), dtype None if unknown."""
    mapped = CONFIG_DTYPES.get(value) if isinstance(value, str) else None
    if value is not None and mapped is None:
        return None, f"{shown(repr(value))} is not a dtype apron knows"
    if mapped is not None and mapped != "fp32":
        return mapped, f"{value}"
    gemma = isinstance(model_type, str) and model_type.startswith("gemma")
    start = f"{value}" if value is not None else "none (float32)"
    return (
        ("bf16", f"{start}, downcast to bfloat16 (gemma)")
        if gemma
        else (
            "fp16",
            f"{start}, downcast to float16",
        )
    )


def _sglang_model_dtype(config: Mapping[str, Any]) -> KvDtypeChoice:
    """SGLang passes hf_text_config to _get_and_verify_dtype: the text sub-config's dtype."""
    text = config.get("text_config")
    node = text if isinstance(text, Mapping) else config
    prefix = "text_config." if node is not config else ""
    value = node.get("dtype") or node.get("torch_dtype")
    key = prefix + ("dtype" if node.get("dtype") else "torch_dtype")
    model_type = node.get("model_type")
    top = config.get("dtype") or config.get("torch_dtype")
    if prefix and value is None and top is not None:
        # whether transformers hands the top-level dtype down to text_config is not decided
        # here; answer only when both readings agree
        own, own_how = _sglang_dtype_of(None, model_type)
        inherited, inherited_how = _sglang_dtype_of(top, model_type)
        if own != inherited or own is None:
            return KvDtypeChoice(
                None,
                "auto: SGLang reads the dtype of hf_text_config; text_config has none and the "
                f"top level says {shown(repr(top))}: {own_how} or {inherited_how}, depending on whether "
                f"transformers hands it down ({SGLANG_DTYPE})",
                ("text_config.dtype", "dtype", "torch_dtype"),
            )
        return KvDtypeChoice(
            own,
            f"auto: the model dtype {own}: text_config has no dtype (top level {top}); "
            f"{own_how} either way ({SGLANG_DTYPE})",
            ("text_config.dtype", "torch_dtype"),
        )
    dtype, how = _sglang_dtype_of(value, model_type)
    if dtype is None:
        return KvDtypeChoice(None, f"auto: the config's {key} = {how}", (key,))
    said = f"the config's {key} = {how}" if value is not None else f"no dtype in the config: {how}"
    return KvDtypeChoice(dtype, f"auto: the model dtype {dtype}: {said} ({SGLANG_DTYPE})", (key,))


def _sglang_kv_quant_algo(quant: Mapping[str, Any], key: str) -> tuple[Any, str]:
    """kv_cache_quant_algo as SGLang's quant config classes read it (ModelOpt flat or nested, fp8)."""
    method = quant.get("quant_method")
    if key == "compression_config" or method not in (
        None,
        "modelopt",
        "fp8",
        "modelopt_fp4",
        "modelopt_mixed",
    ):
        return None, ""
    if method == "fp8":
        return quant.get("kv_cache_quant_algo"), f"{key}.kv_cache_quant_algo (quant_method fp8)"
    if quant.get("quant_algo") is not None:
        scheme = quant.get("kv_cache_scheme")
        if isinstance(scheme, Mapping):
            if scheme.get("type") == "float" and scheme.get("num_bits") == 8:
                return "FP8", f"{key}.kv_cache_scheme {dict(scheme)}"
            return None, f"{key}.kv_cache_scheme {dict(scheme)}"
        return quant.get("kv_cache_quant_algo"), f"{key}.kv_cache_quant_algo"
    inner = quant.get("quantization")
    if isinstance(inner, Mapping):
        return inner.get("kv_cache_quant_algo"), f"{key} quantization.kv_cache_quant_algo"
    return None, ""


def _sglang(
    sglang: EngineConstraints | None, config: Mapping[str, Any], model_dir: Path | None, mla: bool
) -> KvDtypeChoice:
    architectures = architectures_of(config)
    if "DeepseekV4ForCausalLM" in architectures:
        return KvDtypeChoice(
            None,
            "auto: SGLang sets fp8_e4m3 for DeepseekV4ForCausalLM "
            "(arg_groups/overrides.py _deepseek_v4_kv_cache_dtype); its fp8 KV layout is not "
            "extracted",
            ("architectures",),
        )
    dsa = sglang_dsa_archs(sglang)
    if dsa is None:
        return KvDtypeChoice(
            None,
            f"auto: SGLang's {SGLANG_FAMILY} / {SGLANG_DSA} sets are not among the extracted facts",
            (),
        )
    if architectures[:1] and architectures[0] in dsa and config.get("index_topk"):
        return KvDtypeChoice(
            None,
            f"auto: {architectures[0]} with index_topk (DSA): SGLang picks fp8_e4m3 on SM >= 10 "
            "and bfloat16 below (arg_groups/overrides.py _dsa_kv_cache_dtype_default), which "
            "depends on the GPU",
            ("architectures", "index_topk"),
        )
    quant = quant_config(config, model_dir, file_before_compression=False)
    if quant.body is not None:
        algo, what = _sglang_kv_quant_algo(quant.body, quant.key)
        if isinstance(algo, str) and algo.upper() == "FP8":
            return KvDtypeChoice(
                "fp8", f"auto: {what} = {algo} -> fp8_e4m3 ({SGLANG_KV})", (quant.key,)
            )
        if what:
            base = _sglang_model_dtype(config)
            return base._replace(reason=f"{base.reason}; {what} = {shown(repr(algo))} is not FP8")
        if quant.body.get("kv_cache_scheme") is not None:
            base = _sglang_model_dtype(config)
            return base._replace(
                reason=f"{base.reason}; {quant.key}.kv_cache_scheme is set but SGLang's "
                f"{quant.body.get('quant_method')} config has no kv_cache_quant_algo ({SGLANG_KV})"
            )
    return _sglang_model_dtype(config)


def auto_kv_dtype(
    sglang: EngineConstraints | None,
    config: Mapping[str, Any],
    model_dir: Path | None,
    mla: bool,
    pooling: bool,
) -> KvDtypeChoice:
    """SGLang's KV cache dtype for `auto` with this checkpoint (pooling does not change it)."""
    return _sglang(sglang, config, model_dir, mla)
