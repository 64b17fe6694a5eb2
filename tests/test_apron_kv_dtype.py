"""What `--kv-cache-dtype auto` resolves to per engine (apron.kv_dtype), on real configs.

Configs come from tests/checkpoints and tests/corpus (provenance in their READMEs). Each case names
the engine function at the pin that decides it:
- vLLM 0231dd54: resolve_kv_cache_dtype_string + get_kv_cache_quant_algo_string
  (vllm/utils/torch_utils.py) for ModelOpt, Attention.__init__
  (vllm/model_executor/layers/attention/attention.py) for a compressed-tensors kv_cache_scheme,
  MLAAttention.__init__ (mla_attention.py), which never reads it, and _get_and_verify_dtype /
  _resolve_auto_dtype (vllm/config/model.py) for the model dtype;
- SGLang 30cb848d: configure_kv_cache_dtype (python/sglang/srt/mem_cache/kv_cache_dtype.py), which
  takes fp8_e4m3 only for a quant config whose kv_cache_quant_algo is FP8, and
  _get_and_verify_dtype (python/sglang/srt/configs/model_config.py) for the model dtype."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import plan
from apron.command_line.cli import app
from apron.constraints import load_constraints
from apron.errors import ApronInputError
from apron.kv_dtype import KvDtypeChoice
from apron.planning.engine_registry import resolve_kv_dtype_auto

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
CORPUS = Path(__file__).resolve().parent / "corpus"
VLLM_DTYPE = "(vllm/config/model.py _get_and_verify_dtype)"
SGLANG_DTYPE = "(python/sglang/srt/configs/model_config.py _get_and_verify_dtype)"

# the kv_cache_scheme llm-compressor writes for the FP8-KV recipe in vllm-project/llm-compressor
# pull request 88 (num_bits 8, float, per tensor, static, symmetric); see tests/checkpoints/README.md
LLM_COMPRESSOR_FP8_KV = {
    "num_bits": 8,
    "type": "float",
    "strategy": "tensor",
    "dynamic": False,
    "symmetric": True,
}


def auto(config, model_dir, engine, **flags) -> KvDtypeChoice:
    """resolve_kv_dtype_auto with the engine's committed constraints."""
    return resolve_kv_dtype_auto(
        config, model_dir, engine, rules=load_constraints().get(engine), **flags
    )


def load(path: Path) -> dict:
    return json.loads(path.read_text())


DEVSTRAL = CHECKPOINTS / "devstral-small-2507" / "config.json"


def checkpoint_dir(tmp_path: Path, config: dict, *quant_files: Path) -> Path:
    """A checkpoint directory: this config.json and the given hf_quant_config.json beside it."""
    (tmp_path / "config.json").write_text(json.dumps(config))
    for quant in quant_files:
        shutil.copy(quant, tmp_path / quant.name)
    return tmp_path


# -- the model dtype ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_bf16_checkpoint_keeps_a_bf16_cache(engine):
    # Devstral-Small-2507: torch_dtype bfloat16, no quantization -> the model dtype
    choice = auto(load(DEVSTRAL), DEVSTRAL.parent, engine)
    assert choice.dtype == "bf16"
    assert choice.source_keys == ("torch_dtype",)
    where = VLLM_DTYPE if engine == "vllm" else SGLANG_DTYPE
    assert choice.reason == (
        f"auto: the model dtype bf16: the config's torch_dtype = bfloat16 {where}"
    )


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (CORPUS / "llama-7b.json", "torch_dtype"),
        (CHECKPOINTS / "qwen3.5-18b-reap-a3b/config.json", "dtype"),
    ],
)
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_fp16_checkpoint_keeps_an_fp16_cache(config, key, engine):
    # llama-7b says torch_dtype float16; the Qwen3.5 REAP export says dtype float16 (the newer
    # transformers spelling): both engines keep float16 (neither downcasts a 16-bit dtype)
    choice = auto(load(config), None, engine)
    assert (choice.dtype, choice.source_keys) == ("fp16", (key,))
    assert f"the config's {key} = float16" in choice.reason


def test_a_float32_checkpoint_differs_between_the_engines():
    # float32 under --dtype auto: vLLM's _resolve_auto_dtype downcasts to the platform's first
    # dtype (bfloat16 on compute capability >= 8.0) or float16 for a pooling model; SGLang's
    # _get_and_verify_dtype downcasts to float16, bfloat16 for gemma model types
    config = load(DEVSTRAL) | {"torch_dtype": "float32"}
    vllm = auto(config, None, "vllm")
    assert vllm.dtype == "bf16"
    assert "float32, downcast to bfloat16 (a GPU with bfloat16" in vllm.reason
    assert auto(config, None, "vllm", pooling=True).dtype == "fp16"
    assert auto(config, None, "sglang").dtype == "fp16"
    gemma = load(CORPUS / "gemma-2-9b.json") | {"torch_dtype": "float32"}
    assert auto(gemma, None, "sglang").dtype == "bf16"
    # gemma2 refuses float16 in vLLM (_FLOAT16_NOT_SUPPORTED_MODELS): even as pooling, bfloat16
    assert auto(gemma, None, "vllm", pooling=True).dtype == "bf16"


def test_no_dtype_in_the_config_vllm_reads_the_weights(tmp_path):
    # gpt-oss-20b's config.json has no dtype: vLLM (get_torch_dtype) then takes the dtype of the
    # safetensors weights; SGLang assumes float32 and downcasts to float16
    config = load(CORPUS / "gpt-oss-20b.json")
    assert "torch_dtype" not in config and "dtype" not in config
    unknown = auto(config, None, "vllm")
    assert unknown.dtype is None
    assert unknown.reason.endswith("and no checkpoint directory was given")
    assert auto(config, tmp_path, "vllm").reason.endswith(f"and there are none in {tmp_path}")
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(
        struct.pack("<Q", len(header)) + header + b"\0" * 4
    )
    from_headers = auto(config, tmp_path, "vllm")
    assert from_headers.dtype == "bf16"
    assert from_headers.source_keys == ("safetensors headers",)
    assert auto(config, None, "sglang").dtype == "fp16"


def test_sglang_reads_the_text_config_dtype():
    # SGLang's ModelConfig passes hf_text_config to _get_and_verify_dtype. gemma-3-27b's
    # text_config has no dtype (torch_dtype bfloat16 is at the top): none -> float32 -> gemma ->
    # bfloat16, and inherited bfloat16 -> bfloat16, so either way bf16. For a non-gemma text
    # config the two readings differ (float16 or bfloat16): unknown.
    gemma3 = load(CORPUS / "gemma-3-27b.json")
    choice = auto(gemma3, None, "sglang")
    assert choice.dtype == "bf16"
    assert "text_config has no dtype (top level bfloat16)" in choice.reason
    other = gemma3 | {"text_config": gemma3["text_config"] | {"model_type": "llama"}}
    unknown = auto(other, None, "sglang")
    assert unknown.dtype is None
    assert "none (float32), downcast to float16 or bfloat16, depending on" in unknown.reason


def test_a_dtype_apron_does_not_know_is_unknown():
    config = load(DEVSTRAL) | {"torch_dtype": "float8_e4m3fn"}
    for engine in ("vllm", "sglang"):
        choice = auto(config, None, engine)
        assert choice.dtype is None
        assert "torch_dtype = 'float8_e4m3fn' is not a dtype apron knows" in choice.reason


# -- ModelOpt ------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_modelopt_fp8_kv_in_hf_quant_config_json_is_fp8_in_both(tmp_path, engine):
    # ModelOpt 0.19 writes hf_quant_config.json {"producer": {"name": "modelopt"}, "quantization":
    # {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}} beside a config.json without
    # quantization_config. vLLM: get_config loads the file as quantization_config,
    # _normalize_quantization_config sets quant_method "modelopt" (producer modelopt, FP8), and
    # get_kv_cache_quant_algo_string maps "fp8" -> fp8_e4m3. SGLang: ModelOptFp8Config reads
    # quantization.kv_cache_quant_algo "FP8" -> fp8_e4m3.
    directory = checkpoint_dir(
        tmp_path, load(DEVSTRAL), CHECKPOINTS / "modelopt-0.19-fp8-example/hf_quant_config.json"
    )
    choice = auto(load(DEVSTRAL), directory, engine)
    assert choice.dtype == "fp8"
    assert choice.source_keys == ("hf_quant_config.json",)
    assert (
        "hf_quant_config.json quantization.kv_cache_quant_algo = FP8 -> fp8_e4m3" in choice.reason
    )


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_modelopt_nvfp4_without_kv_quantization_keeps_the_model_dtype(tmp_path, engine):
    # nvidia/DeepSeek-R1-FP4's hf_quant_config.json: quant_algo NVFP4, kv_cache_quant_algo null.
    # vLLM: modelopt_fp4, every kv key falsy -> None -> auto -> the model dtype; SGLang: not FP8.
    directory = checkpoint_dir(
        tmp_path, load(DEVSTRAL), CHECKPOINTS / "deepseek-r1-fp4/hf_quant_config.json"
    )
    choice = auto(load(DEVSTRAL), directory, engine)
    assert choice.dtype == "bf16"
    expected = (
        "hf_quant_config.json (modelopt_fp4) sets no kv_cache_scheme or kv_cache_quant_algo"
        if engine == "vllm"
        else "hf_quant_config.json quantization.kv_cache_quant_algo = None is not FP8"
    )
    assert choice.reason.endswith(expected)


def test_quantization_config_in_config_json_wins_over_hf_quant_config_json(tmp_path):
    # DeepSeek-V3's config.json carries quantization_config (quant_method fp8, no KV scheme):
    # both engines then never open hf_quant_config.json, and fp8 weights do not make the cache
    # fp8 (vLLM's Fp8Config has no kv_cache_scheme; SGLang's Fp8Config has kv_cache_quant_algo
    # None); MLA in vLLM reads no kv_cache_scheme anyway.
    config = load(CORPUS / "deepseek-v3.json")
    directory = checkpoint_dir(
        tmp_path, config, CHECKPOINTS / "modelopt-0.19-fp8-example/hf_quant_config.json"
    )
    assert auto(config, directory, "vllm", mla=True).dtype == "bf16"
    sglang = auto(config, directory, "sglang", mla=True)
    assert sglang.dtype == "bf16"
    assert sglang.reason.endswith(
        "quantization_config.kv_cache_quant_algo (quant_method fp8) = None is not FP8"
    )


def test_modelopt_flat_kv_cache_scheme_needs_dynamic_false_in_vllm_only():
    # ModelOpt >= 0.31 writes quantization_config into config.json (quant_method modelopt) with
    # kv_cache_scheme {"type": "float", "num_bits": 8}. vLLM's get_kv_cache_quant_algo_string maps
    # a dict to fp8 only when dynamic is False; without it the string is "auto" (a warning) and
    # the cache stays bf16. SGLang's ModelOptFp8Config needs only type float and 8 bits.
    quant = {"quant_method": "modelopt", "quant_algo": "FP8"}
    without = load(DEVSTRAL) | {
        "quantization_config": quant | {"kv_cache_scheme": {"type": "float", "num_bits": 8}}
    }
    assert auto(without, None, "vllm").dtype == "bf16"
    assert "not a scheme vLLM maps: falls back to auto" in auto(without, None, "vllm").reason
    assert auto(without, None, "sglang").dtype == "fp8"
    static = {"type": "float", "num_bits": 8, "dynamic": False}
    with_false = load(DEVSTRAL) | {"quantization_config": quant | {"kv_cache_scheme": static}}
    assert auto(with_false, None, "vllm").dtype == "fp8"


def test_modelopt_nvfp4_kv_is_unknown_in_vllm_and_bf16_in_sglang():
    # vLLM maps a 4-bit float scheme to nvfp4, whose packed layout (head_size/2 + head_size/16 B,
    # nvfp4_kv_cache_full_dim) apron does not model; SGLang's configure_kv_cache_dtype takes
    # fp8_e4m3 only for FP8, so NVFP4 in the checkpoint leaves the model dtype.
    config = load(DEVSTRAL) | {
        "quantization_config": {
            "quant_method": "modelopt",
            "quant_algo": "NVFP4",
            "kv_cache_quant_algo": "NVFP4",
        }
    }
    vllm = auto(config, None, "vllm")
    assert vllm.dtype is None and "-> nvfp4" in vllm.reason and "not modelled" in vllm.reason
    assert auto(config, None, "sglang").dtype == "bf16"


def test_an_unknown_modelopt_algorithm_is_refused_by_vllm():
    config = load(DEVSTRAL) | {
        "quantization_config": {
            "producer": {"name": "modelopt"},
            "quantization": {"quant_algo": "W4A8"},
        }
    }
    choice = auto(config, None, "vllm")
    assert choice == KvDtypeChoice(
        None,
        "auto: vLLM refuses the ModelOpt quant_algo 'W4A8' (Unknown ModelOpt quant algo)",
        ("quantization_config",),
    )


# -- compressed-tensors --------------------------------------------------------------------------


def test_compressed_tensors_fp8_kv_is_fp8_in_vllm_and_not_in_sglang():
    # vLLM: resolve_kv_cache_dtype_string ignores compressed-tensors, but Attention.__init__ sees
    # quant_config.kv_cache_scheme and sets "fp8"; SGLang's CompressedTensorsConfig has no
    # kv_cache_quant_algo, so configure_kv_cache_dtype keeps the model dtype.
    config = load(DEVSTRAL) | {
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "kv_cache_scheme": LLM_COMPRESSOR_FP8_KV,
        }
    }
    vllm = auto(config, None, "vllm")
    assert vllm == KvDtypeChoice(
        "fp8",
        "auto: quantization_config.kv_cache_scheme {'num_bits': 8, 'type': 'float', 'strategy': "
        "'tensor'} -> fp8 (vllm/model_executor/layers/attention/attention.py Attention.__init__)",
        ("quantization_config.kv_cache_scheme",),
    )
    sglang = auto(config, None, "sglang")
    assert sglang.dtype == "bf16"
    assert "compressed-tensors config has no kv_cache_quant_algo" in sglang.reason
    # MLAAttention.__init__ has no kv_cache_scheme branch: an MLA model keeps its dtype
    mla = auto(config, None, "vllm", mla=True)
    assert mla.dtype == "bf16" and "MLA layers do not read it" in mla.reason


def test_compressed_tensors_kv_scheme_vllm_refuses_is_unknown():
    # CompressedTensorsKVCacheMethod.validate_kv_cache_scheme: only num_bits 8 float, strategy
    # tensor or attn_head, symmetric; an int8 scheme stops vLLM at startup
    scheme = LLM_COMPRESSOR_FP8_KV | {"type": "int"}
    config = load(DEVSTRAL) | {
        "quantization_config": {"quant_method": "compressed_tensors", "kv_cache_scheme": scheme}
    }
    choice = auto(config, None, "vllm")
    assert choice.dtype is None
    assert (
        "vLLM refuses the compressed-tensors kv_cache_scheme at startup: num_bits=8, type=int"
        in (choice.reason)
    )


def test_compression_config_is_read_when_there_is_no_quantization_config():
    config = load(DEVSTRAL) | {
        "compression_config": {
            "quant_method": "compressed-tensors",
            "kv_cache_scheme": LLM_COMPRESSOR_FP8_KV,
        }
    }
    assert auto(config, None, "vllm").dtype == "fp8"


def test_a_dsa_checkpoint_depends_on_the_gpu_in_both():
    # a GLM-5 W4A16 compressed-tensors export (kv_cache_scheme null) with index_topk: vLLM's sparse
    # MLA backends choose the KV format (fp8_ds_mla on FLASHINFER_MLA_SPARSE_SM120); SGLang's
    # _dsa_kv_cache_dtype_default takes fp8_e4m3 on SM >= 10 and bfloat16 below
    config = load(CHECKPOINTS / "glm-5-w4a16-awq/config.json")
    vllm = auto(config, None, "vllm", mla=True)
    assert vllm.dtype is None and "depends on the GPU" in vllm.reason
    sglang = auto(config, None, "sglang", mla=True)
    assert sglang.dtype is None
    assert sglang.reason.startswith("auto: GlmMoeDsaForCausalLM with index_topk (DSA)")


@pytest.mark.parametrize("engine", ["llamacpp", "trtllm"])
def test_engines_without_an_extracted_rule_are_unknown(engine):
    choice = auto(load(DEVSTRAL), None, engine)
    assert choice == KvDtypeChoice(
        None,
        f"auto: how {engine} resolves its KV cache dtype is not among the extracted rules",
        (),
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"{nope", "is not valid JSON"), (b"[1]", "is JSON but not an object")],
)
def test_a_malformed_hf_quant_config_json_is_refused(tmp_path, content, message):
    (tmp_path / "hf_quant_config.json").write_bytes(content)
    with pytest.raises(ApronInputError) as err:
        auto(load(DEVSTRAL), tmp_path, "vllm")
    assert str(tmp_path / "hf_quant_config.json") in str(err.value) and message in str(err.value)


# -- apron plan --kv-dtype auto ------------------------------------------------------------------


def test_plan_auto_uses_each_engines_kv_dtype(tmp_path):
    # Devstral with the ModelOpt FP8-KV hf_quant_config.json: both engines store fp8, 1 B per
    # element: 40 layers x 8 KV heads x (128 + 128) x 1 B = 81,920 B per token (bf16: 163,840)
    directory = checkpoint_dir(
        tmp_path, load(DEVSTRAL), CHECKPOINTS / "modelopt-0.19-fp8-example/hf_quant_config.json"
    )
    result = plan(directory, kv_dtype="auto", context=1_024)
    assert (result.request.kv_dtype, result.request.kv_dtype_bytes) == ("fp8", 1)
    assert result.request.kv_dtype_source.startswith("vLLM auto: hf_quant_config.json")
    assert result.prediction.kv_bytes_per_token == 81_920
    views = {v.engine: v for v in result.engines}
    for engine in ("vllm", "sglang"):
        assert views[engine].kv_bytes_per_token == 81_920
        assert views[engine].notes[0].startswith("KV dtype fp8: auto: hf_quant_config.json")
    plain = plan(DEVSTRAL.parent, kv_dtype="auto", context=1_024)
    assert plain.prediction.kv_bytes_per_token == 163_840
    assert plan(DEVSTRAL.parent, context=1_024).request.kv_dtype_source == ""


def test_plan_auto_where_engines_differ(tmp_path):
    # compressed-tensors FP8 KV: vLLM fp8 (81,920 B/token), SGLang bf16 (163,840 B/token); the
    # prediction follows vLLM
    config = load(DEVSTRAL) | {
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "kv_cache_scheme": LLM_COMPRESSOR_FP8_KV,
        }
    }
    result = plan(checkpoint_dir(tmp_path, config), kv_dtype="auto", context=1_024)
    views = {v.engine: v for v in result.engines}
    assert views["vllm"].kv_bytes_per_token == 81_920
    assert views["sglang"].kv_bytes_per_token == 163_840
    assert result.prediction.kv_bytes_per_token == 81_920


def test_plan_auto_unknown_everywhere_blanks_the_kv_figures_and_says_why(tmp_path):
    config = load(DEVSTRAL) | {"torch_dtype": "float8_e4m3fn"}
    result = plan(checkpoint_dir(tmp_path, config), kv_dtype="auto", context=1_024)
    assert (result.request.kv_dtype, result.request.kv_dtype_bytes) == ("auto", 0)
    assert result.prediction.kv_bytes_per_token is None
    assert result.kv_bytes_for_batch is None
    assert any("is not a dtype apron knows" in u for u in result.prediction.unknown)
    vllm = next(v for v in result.engines if v.engine == "vllm")
    assert vllm.kv_bytes_per_token is None and vllm.kv_bytes_at_context is None
    assert any(n.startswith("unknown: KV dtype auto:") for n in vllm.notes)


def test_cli_accepts_auto_and_shows_where_it_came_from(tmp_path):
    directory = checkpoint_dir(
        tmp_path, load(DEVSTRAL), CHECKPOINTS / "modelopt-0.19-fp8-example/hf_quant_config.json"
    )
    result = CliRunner().invoke(app, ["plan", str(directory), "--kv-dtype", "auto", "-c", "1024"])
    assert result.exit_code == 0, result.output
    assert "KV dtype fp8 (1 B)" in result.output
    assert "KV dtype fp8 from vLLM auto: hf_quant_config.json" in " ".join(result.output.split())
    bad = CliRunner().invoke(app, ["plan", str(directory), "--kv-dtype", "int3"])
    assert bad.exit_code == 2 and "auto" in bad.output


# -- the engine literals come from the generated facts -------------------------------------------


def test_vllm_literals_are_the_extracted_facts():
    from apron.engines.sglang import kv_dtype as sglang_kv_dtype
    from apron.engines.vllm import kv_dtype as vllm_kv_dtype

    # generated/vllm kv_dtype_literals at 0231dd54: vllm/config/model.py
    # _FLOAT16_NOT_SUPPORTED_MODELS, vllm/utils/torch_utils.py MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP,
    # _normalize_quantization_config's `quant_algo_upper in {...}` / `== "NVFP4"` clauses
    assert set(
        vllm_kv_dtype.vllm_literal(load_constraints().get("vllm"), vllm_kv_dtype.FLOAT16_REFUSED)
    ) == {
        "gemma2",
        "gemma3",
        "gemma3_text",
        "plamo2",
        "glm4",
    }
    assert vllm_kv_dtype.vllm_literal(
        load_constraints().get("vllm"), vllm_kv_dtype.MODELOPT_KV
    ) == {
        "fp8": "fp8_e4m3",
        "nvfp4": "nvfp4",
    }
    assert vllm_kv_dtype.vllm_literal(
        load_constraints().get("vllm"), vllm_kv_dtype.MODELOPT_METHOD
    ) == {
        "FP8": "modelopt",
        "FP8_PER_CHANNEL_PER_TOKEN": "modelopt",
        "FP8_PB_WO": "modelopt",
        "NVFP4": "modelopt_fp4",
    }
    # overrides.py _DEEPSEEK_FAMILY_ARCHS (8) and model_config.py is_deepseek_dsa (9) share 7
    assert sglang_kv_dtype.sglang_dsa_archs(load_constraints().get("sglang")) == {
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "GlmMoeDsaForCausalLM",
        "LongcatFlashForCausalLM",
        "LongcatFlashForCausalLMNextN",
        "MistralLarge3ForCausalLM",
        "PixtralForConditionalGeneration",
    }


def test_a_literal_not_extracted_gives_unknown_never_a_default():
    # the constraint set passed in decides: without the literals' rows, no default is assumed
    engines = load_constraints().engines
    vllm_rules = engines["vllm"]._replace(facts={**engines["vllm"].facts, "kv_dtype_literals": ()})
    sglang_rules = engines["sglang"]._replace(
        facts={**engines["sglang"].facts, "kv_dtype_sets": ()}
    )
    rules = {"vllm": vllm_rules, "sglang": sglang_rules}

    def auto(config, model_dir, engine, **flags) -> KvDtypeChoice:
        return resolve_kv_dtype_auto(config, model_dir, engine, rules=rules[engine], **flags)

    fp8 = load(DEVSTRAL) | {
        "quantization_config": {
            "quant_method": "modelopt",
            "quant_algo": "FP8",
            "kv_cache_quant_algo": "FP8",
        }
    }
    vllm = auto(fp8, None, "vllm")
    assert vllm.dtype is None and "modelopt_kv_cache_dtype not extracted" in vllm.reason
    producer = load(DEVSTRAL) | {
        "quantization_config": {
            "producer": {"name": "modelopt"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
        }
    }
    vllm = auto(producer, None, "vllm")
    assert vllm.dtype is None and "modelopt_quant_method literal is not among" in vllm.reason
    pooling = load(DEVSTRAL) | {"torch_dtype": "float32"}
    choice = auto(pooling, None, "vllm", pooling=True)
    assert choice.dtype is None and "float16_not_supported" in choice.reason
    sglang = auto(load(DEVSTRAL), None, "sglang")
    assert sglang.dtype is None and "_DEEPSEEK_FAMILY_ARCHS" in sglang.reason
