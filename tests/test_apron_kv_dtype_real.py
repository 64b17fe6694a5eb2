"""The KV dtype rules' engine facts (apron/engines/<engine>/kv_dtype.py) checked against the real engine sources at the pins.

apron/engines/vllm/kv_dtype.py reads vLLM's literals (the ModelOpt KV map, the model types refused in float16,
the ModelOpt quant_algo normalisation) from generated/vllm kv_dtype_literals; these tests parse
those places in the mirrors with `ast` (APRON_MIRROR_VLLM, APRON_MIRROR_SGLANG; skipped when unset),
a second reader beside the extractor's, and check the code paths around them. SGLang's DSA
architectures are generated/sglang kv_dtype_sets _DEEPSEEK_FAMILY_ARCHS and architecture_sets
is_deepseek_dsa."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from apron.constraints import load_constraints
from apron.engines.sglang import kv_dtype as sglang_kv_dtype
from apron.engines.vllm import kv_dtype as vllm_kv_dtype
from apron.extractors.git.runner import run_git
from apron.extractors.pins import load_pin
from tests.conftest import REPO_ROOT, mirror

pytestmark = pytest.mark.real_mirror


def source(engine: str, path: str) -> str:
    directory = mirror(engine)
    if directory is None:
        pytest.skip(f"APRON_MIRROR_{engine.upper()} is not set")
    commit = load_pin(REPO_ROOT / "pins", engine).commit
    return run_git("show", f"{commit}:{path}", git_dir=Path(directory))


def assigned(tree: ast.Module, name: str) -> ast.expr:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            assert node.value is not None
            return node.value
    raise AssertionError(f"{name} is not assigned at the top of the module")


def function(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"no function {name}")


def strings(node: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_vllm_modelopt_kv_map_and_fp8_algorithms():
    torch_utils = ast.parse(source("vllm", "vllm/utils/torch_utils.py"))
    assert ast.literal_eval(assigned(torch_utils, "MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP")) == (
        vllm_kv_dtype.vllm_literal(load_constraints().get("vllm"), vllm_kv_dtype.MODELOPT_KV)
    )
    resolve = function(torch_utils, "resolve_kv_cache_dtype_string")
    assert "get_kv_cache_quant_algo_string" in {
        n.func.id
        for n in ast.walk(resolve)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    lookup = function(torch_utils, "get_kv_cache_quant_algo_string")
    assert {"modelopt", "kv_cache_scheme", "kv_cache_quant_algo", "quantization"} <= strings(lookup)
    convertor = ast.parse(source("vllm", "vllm/transformers_utils/model_arch_config_convertor.py"))
    normalize = function(convertor, "_normalize_quantization_config")
    sets = [ast.literal_eval(n) for n in ast.walk(normalize) if isinstance(n, ast.Set)]
    methods = vllm_kv_dtype.vllm_literal(
        load_constraints().get("vllm"), vllm_kv_dtype.MODELOPT_METHOD
    )
    assert methods is not None
    fp8 = frozenset(k for k, v in methods.items() if v == "modelopt")
    assert fp8 in [frozenset(s) for s in sets]
    assert {k: v for k, v in methods.items() if v != "modelopt"} == {"NVFP4": "modelopt_fp4"}


def test_vllm_float16_refusals_and_the_auto_dtype_rule():
    model = ast.parse(source("vllm", "vllm/config/model.py"))
    refused = ast.literal_eval(assigned(model, "_FLOAT16_NOT_SUPPORTED_MODELS"))
    assert refused == vllm_kv_dtype.vllm_literal(
        load_constraints().get("vllm"), vllm_kv_dtype.FLOAT16_REFUSED
    )
    auto = function(model, "_resolve_auto_dtype")
    assert {"is_pooling_model", "supported_dtypes"} <= {
        n.id for n in ast.walk(auto) if isinstance(n, ast.Name)
    } | {n.attr for n in ast.walk(auto) if isinstance(n, ast.Attribute)} | {
        a.arg for a in auto.args.kwonlyargs
    }


def test_vllm_attention_turns_a_kv_cache_scheme_into_fp8_and_mla_does_not():
    attention = source("vllm", "vllm/model_executor/layers/attention/attention.py")
    assert 'kv_cache_scheme is not None and kv_cache_dtype == "auto"' in attention
    mla = source("vllm", "vllm/model_executor/layers/attention/mla_attention.py")
    assert "kv_cache_scheme" not in mla
    ct = ast.parse(
        source(
            "vllm",
            "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py",
        )
    )
    validate = function(ct, "validate_kv_cache_scheme")
    assert {"float", "num_bits", "strategy", "symmetric"} <= strings(validate)
    assert {"TENSOR", "ATTN_HEAD"} <= {
        n.attr for n in ast.walk(validate) if isinstance(n, ast.Attribute)
    }


def test_sglang_auto_takes_fp8_only_for_kv_cache_quant_algo_fp8():
    tree = ast.parse(source("sglang", "python/sglang/srt/mem_cache/kv_cache_dtype.py"))
    configure = function(tree, "configure_kv_cache_dtype")
    assert {"auto", "kv_cache_quant_algo", "FP8"} <= strings(configure)


def test_sglang_dsa_architectures():
    overrides = ast.parse(source("sglang", "python/sglang/srt/arg_groups/overrides.py"))
    family = assigned(overrides, "_DEEPSEEK_FAMILY_ARCHS")
    model_config = ast.parse(source("sglang", "python/sglang/srt/configs/model_config.py"))
    dsa = strings(function(model_config, "is_deepseek_dsa"))
    assert strings(family) & dsa == sglang_kv_dtype.sglang_dsa_archs(
        load_constraints().get("sglang")
    )
    assert "index_topk" in dsa
