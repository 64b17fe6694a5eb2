"""The serving facts at the real pins (vLLM 0231dd54, SGLang 30cb848d), each value checked by
reading the engine's source; skipped unless APRON_MIRROR_VLLM / APRON_MIRROR_SGLANG is set."""

from __future__ import annotations

import subprocess

import pytest

from apron.extractors.sglang import serving_defaults as sglang_defaults
from apron.extractors.sglang import serving_rules as sglang_rules
from apron.extractors.vllm import serving_rules as vllm_rules
from tests.conftest import mirror

VLLM_PIN = "0231dd5467c61dca76f66269b6298a43772b3519"
SGLANG_PIN = "30cb848d4b455a288a37cfeb6a45aff34f5634a6"

pytestmark = pytest.mark.real_mirror


def show(engine: str, commit: str, path: str) -> str:
    root = mirror(engine)
    if root is None:
        pytest.skip(f"APRON_MIRROR_{engine.upper()} is not set")
    return subprocess.run(
        ["git", "-C", root, "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
    ).stdout


def vllm(path: str) -> str:
    return show("vllm", VLLM_PIN, path)


def sglang(path: str) -> str:
    return show("sglang", SGLANG_PIN, path)


def test_vllm_cache_defaults():
    rows = {r.setting: r for r in vllm_rules.cache_defaults(vllm("vllm/config/cache.py"), "c")}
    assert (rows["block_size"].kind, rows["block_size"].value) == ("literal", "16")
    assert rows["block_size"].symbol == "CacheConfig.DEFAULT_BLOCK_SIZE"
    fraction = rows["gpu_memory_utilization"]
    assert (fraction.kind, fraction.value) == ("literal", "0.92")


def test_vllm_tp_rules():
    rows = {
        r.rule: r
        for r in vllm_rules.tp_rules(
            vllm("vllm/config/model.py"), "m", vllm(vllm_rules.CONVERTOR_PATH)
        )
    }
    split = rows["kv_heads_per_gpu"]
    assert (split.shape, split.code) == (
        "split_replicate",
        "max(1, total_num_kv_heads // parallel_config.tensor_parallel_size)",
    )
    mla = rows["mla_kv_heads_per_gpu"]
    assert (mla.shape, mla.constant, mla.when) == ("constant", 1, "use_mla")
    heads = rows["attention_heads_divisible"]
    assert (heads.keys, heads.code) == (
        ("num_attention_heads",),
        "total_num_attention_heads % tensor_parallel_size != 0",
    )
    kv = vllm_rules.kv_divisibility_rule(vllm("vllm/model_executor/layers/linear.py"), "l")
    assert (kv.shape, kv.keys, kv.code) == (
        "divides_or_divided",
        ("total_num_kv_heads",),
        "tp_size >= self.total_num_kv_heads",
    )


def test_vllm_state_splits():
    rows = vllm_rules.ssm_tp_splits(vllm("vllm/model_executor/layers/mamba/mamba_utils.py"), "s")
    assert [(r.calculator, r.dividend, r.division) for r in rows] == [
        ("gated_delta_net", "conv_dim", "exact"),
        ("gated_delta_net", "num_v_heads", "exact"),
        ("kda", "conv_dim", "exact"),
        ("kda", "num_heads", "exact"),
        ("linear_attention", "num_heads", "floor"),
        ("mamba1", "intermediate_size", "exact"),
        ("mamba2", "conv_dim", "exact"),
        ("mamba2", "num_heads", "exact"),
        ("short_conv", "intermediate_size", "exact"),
    ]
    mamba2 = {r.dividend: r for r in rows if r.calculator == "mamba2"}
    assert mamba2["conv_dim"].dividend_code == "intermediate_size + 2 * n_groups * state_size"
    assert mamba2["conv_dim"].adjustments == (
        "n_groups = n_groups + cls.extra_groups_for_head_shards(n_groups, tp_world_size)",
    )


def test_vllm_hybrid_page_rule():
    rows = vllm_rules.hybrid_page_rules(vllm("vllm/platforms/interface.py"), "p")
    assert [(r.when, r.shape) for r in rows] == [
        (("!=", "mamba_cache_mode", ("str", "all")), "align_ceil"),
        (("==", "mamba_cache_mode", ("str", "all")), "chunk_align_ceil"),
    ]
    default = rows[0]
    assert default.formula == (
        "attn_block_size = kernel_block_alignment_size * cdiv(mamba_page_size, "
        "kernel_block_alignment_size * attn_page_size_1_token)"  # canonical: no trailing comma
    )
    assert default.alignment_floor_is_block_size and default.raises_only
    assert default.pads_mamba_page


def test_sglang_serving_defaults():
    text = sglang(sglang_defaults.SERVER_ARGS_PATHS[0])
    source = sglang_defaults.page_size_source(text, "s")
    assert source == (
        "python/sglang/srt/arg_groups/overrides.py",
        "_page_size_default",
        "ServerArgs._handle_page_size",
    )
    page = sglang_defaults.page_size_from_pass(sglang(source[0]), source[0], source[1], source[2])
    assert (page.kind, page.value) == ("cuda", "1")
    assert page.candidates[:2] == (
        'is_hip() and envs.SGLANG_AITER_KV_CACHE_LAYOUT.get().lower() == "vectorized_5d" -> 64',
        "not is_musa() -> 1",
    )
    assert "may be set by _mla_backend_page_constraints -> 64" in page.candidates
    assert "may be set by _mla_backend_page_constraints -> 128" in page.candidates
    fraction = sglang_defaults.mem_fraction_default(text, "s")
    assert (fraction.kind, fraction.computed_by) == (
        "computed",
        "ServerArgs._handle_gpu_memory_settings",
    )
    assert fraction.candidates == ("gpu_mem is None -> 0.88",)


def test_sglang_tp_rules():
    (split,) = sglang_rules.kv_split_rules(sglang("python/sglang/srt/configs/model_config.py"), "m")
    assert (split.shape, split.code) == (
        "split_replicate",
        "max(1, total_num_kv_heads // kv_tensor_parallel_size)",
    )
    mla = sglang_rules.mla_cell_rule(sglang(sglang_rules.POOL_PATHS[0]), "p")
    assert (mla.shape, mla.when, mla.symbol) == (
        "replicated",
        "use_mla_backend",
        "DefaultPoolConfigurator._compute_cell_size",
    )
    rows = {
        r.rule: r
        for r in sglang_rules.attention_head_rules(sglang(sglang_rules.LLAMA_PATHS[0]), "l")
    }
    assert rows["attention_heads_divisible"].keys == ("num_attention_heads",)
    assert rows["attention_heads_divisible"].code == "self.total_num_heads % tp_size == 0"
    assert (rows["kv_heads_divisible"].shape, rows["kv_heads_divisible"].keys) == (
        "divides_or_divided",
        ("num_key_value_heads",),
    )


def test_sglang_state_splits():
    rows = sglang_rules.ssm_tp_splits(sglang(sglang_rules.MAMBA_PATHS[0]), "s")
    assert [(r.calculator, r.dividend) for r in rows] == [
        ("kimilinear", "num_heads"),
        ("kimilinear", "proj_k_size"),
        ("kimilinear", "proj_size"),
        ("mamba2", "conv_dim"),
        ("mamba2", "num_heads"),
    ]


def test_vllm_attention_backends():
    from apron.extractors.vllm import attention_backends as backends

    def read(path: str) -> str | None:
        root = mirror("vllm")
        assert root is not None
        done = subprocess.run(
            ["git", "-C", root, "show", f"{VLLM_PIN}:{path}"], capture_output=True, text=True
        )
        return done.stdout if done.returncode == 0 else None

    rows = backends.attention_backends(
        vllm(backends.CUDA_PATH),
        vllm(backends.REGISTRY_PATH),
        vllm(backends.BASE_PATH),
        read,
        16,
    )
    default = [(r.backend, r.preferred_block) for r in rows if r.default_branch]
    assert default == [
        ("FLASH_ATTN", 16),
        ("FLASHINFER", None),
        ("TRITON_ATTN", 16),
        ("FLEX_ATTENTION", 16),
        ("TURBOQUANT", 16),
        ("FLASH_ATTN_MLA", 16),
        ("FLASHMLA", 64),
        ("FLASHINFER_MLA", 32),
        ("TRITON_MLA", 16),
        ("FLASH_ATTN_MLA_SPARSE", 64),
        ("FLASHMLA_SPARSE", 64),
    ]
    blackwell_mla = [
        (r.backend, r.preferred_block)
        for r in rows
        if r.use_mla and r.branch == "use_mla and device_capability.major == 10"
    ]
    assert blackwell_mla[:3] == [
        ("FLASHINFER_MLA", 32),
        ("TOKENSPEED_MLA", 32),
        ("CUTLASS_MLA", 128),
    ]
