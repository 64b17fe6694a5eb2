"""What `--kv-cache-dtype auto` resolves to, per engine, from the checkpoint's config and quant config.

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
from typing import Any, NamedTuple

from apron.constraints import EngineConstraints
from apron.input_files import present
from apron.json_files import read_json_object
from apron.terminal import shown

HF_QUANT_CONFIG = "hf_quant_config.json"
MAX_QUANT_CONFIG_BYTES = 10_000_000

# torch dtype spellings in config.json -> apron.plan.KV_DTYPES names
CONFIG_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}
# safetensors header dtypes vLLM maps to torch float dtypes (get_safetensors_params_metadata path)
SAFETENSORS_FLOAT_DTYPES = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}

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


VLLM_TORCH_UTILS = "vllm/utils/torch_utils.py resolve_kv_cache_dtype_string"
VLLM_ATTENTION = "vllm/model_executor/layers/attention/attention.py Attention.__init__"
VLLM_MLA = "vllm/model_executor/layers/attention/mla_attention.py MLAAttention.__init__"
VLLM_DTYPE = "vllm/config/model.py _get_and_verify_dtype"
SGLANG_KV = "python/sglang/srt/mem_cache/kv_cache_dtype.py configure_kv_cache_dtype"
SGLANG_DTYPE = "python/sglang/srt/configs/model_config.py _get_and_verify_dtype"


class KvDtypeChoice(NamedTuple):
    """The KV cache dtype an engine picks for `auto`, and why."""

    dtype: (
        str | None
    )  # "bf16" / "fp16" / "fp8" / "fp32" (apron.plan.KV_DTYPES names), None = unknown
    reason: str
    source_keys: tuple[str, ...]


class _QuantConfig(NamedTuple):
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


def _model_dir(model_dir: Path | None) -> Path | None:
    if model_dir is None:
        return None
    path = Path(model_dir)
    return path.parent if path.is_file() else path


def _quant_config(
    config: Mapping[str, Any], model_dir: Path | None, *, file_before_compression: bool
) -> _QuantConfig:
    """config.json's quantization_config, else hf_quant_config.json beside it (ModelOpt <= 0.29)
    or compression_config (compressed-tensors): vLLM (transformers_utils/config.py get_config)
    looks for the file first, SGLang (ModelConfig._parse_quant_hf_config) for compression_config."""
    body = config.get("quantization_config")
    if isinstance(body, Mapping):
        return _QuantConfig(body, "quantization_config", False)
    directory = _model_dir(model_dir)
    compression = config.get("compression_config")
    if isinstance(compression, Mapping) and not file_before_compression:
        return _QuantConfig(compression, "compression_config", False)
    if directory is not None:
        data = _read_hf_quant_config(directory)
        if data is not None:
            return _QuantConfig(data, HF_QUANT_CONFIG, True)
    if isinstance(compression, Mapping):
        return _QuantConfig(compression, "compression_config", directory is not None)
    return _QuantConfig(None, "", directory is not None)


def _architectures(config: Mapping[str, Any]) -> tuple[str, ...]:
    value = config.get("architectures")
    if isinstance(value, list | tuple):
        return tuple(a for a in value if isinstance(a, str))
    return ()


def _config_dtype_value(config: Mapping[str, Any]) -> tuple[str | None, str]:
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


def _weight_dtypes(model_dir: Path | None) -> tuple[str, ...]:
    directory = _model_dir(model_dir)
    if directory is None:
        return ()
    from apron.weights import checkpoint_weights

    weights = checkpoint_weights(directory)
    if weights is None:
        return ()
    return tuple(d.dtype for d in weights.by_dtype)


def _vllm_model_dtype(
    vllm: EngineConstraints | None, config: Mapping[str, Any], model_dir: Path | None, pooling: bool
) -> KvDtypeChoice:
    value, key = _config_dtype_value(config)
    how = ""
    if value is None:
        stored = _weight_dtypes(model_dir)
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
                f"there are none in {_model_dir(model_dir)}"
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
    architectures = _architectures(config)
    if "DeepseekV4ForCausalLM" in architectures or (mla and "index_topk" in config):
        return KvDtypeChoice(
            None,
            "auto: sparse MLA; vLLM picks the KV format by attention backend (e.g. fp8_ds_mla on "
            "FLASHINFER_MLA_SPARSE_SM120), which depends on the GPU "
            "(mla_attention.py _canonicalize_sparse_mla_kv_cache_dtype)",
            ("index_topk",) if "index_topk" in config else ("architectures",),
        )
    quant = _quant_config(config, model_dir, file_before_compression=True)
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
    architectures = _architectures(config)
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
    quant = _quant_config(config, model_dir, file_before_compression=False)
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


def resolve_kv_dtype_auto(
    config: Mapping[str, Any],
    model_dir: Path | None,
    engine: str,
    *,
    rules: EngineConstraints | None,
    mla: bool = False,
    pooling: bool = False,
) -> KvDtypeChoice:
    """The KV cache dtype `engine` uses for `--kv-cache-dtype auto` with this checkpoint.

    `rules`: that engine's constraints (its extracted literals and sets); `mla`: the engine allocates this model as MLA (vLLM's MLAAttention ignores a compressed-tensors
    kv_cache_scheme); `pooling`: vLLM runs it as a pooling model (float32 then becomes float16)."""
    if engine == "vllm":
        return _vllm(rules, config, model_dir, mla, pooling)
    if engine == "sglang":
        return _sglang(rules, config, model_dir, mla)
    return KvDtypeChoice(
        None, f"auto: how {engine} resolves its KV cache dtype is not among the extracted rules", ()
    )
