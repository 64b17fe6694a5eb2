"""vLLM's serving facts on miniatures: CacheConfig defaults, ModelConfig's tensor-parallel rules,
QKVParallelLinear's KV-head rule, MambaStateShapeCalculator's splits, the hybrid page rule."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot
from apron.extractors.vllm.serving_rules import (
    cache_defaults,
    hybrid_page_rules,
    kv_divisibility_rule,
    ssm_tp_splits,
    tp_rules,
)
from tests.vllm_class_miniatures import MODEL_CONFIG
from tests.vllm_miniatures import CONVERTOR_PATH, CONVERTOR_V1, tree_v1
from tests.vllm_serving_miniatures import (
    CACHE_CONFIG,
    CACHE_PATH,
    LINEAR,
    LINEAR_PATH,
    MAMBA_PATH,
    MAMBA_UTILS,
    MODEL_CONFIG_TP_METHODS,
    PLATFORM_INTERFACE,
    PLATFORM_PATH,
)

MODEL_PATH = "vllm/config/model.py"
TP_MODEL_CONFIG = MODEL_CONFIG + MODEL_CONFIG_TP_METHODS


def defaults(text: str = CACHE_CONFIG) -> dict:
    return {r.setting: r for r in cache_defaults(text, CACHE_PATH)}


def test_block_size_none_is_filled_from_the_class_constant():
    row = defaults()["block_size"]
    assert (row.kind, row.value, row.role, row.symbol) == (
        "literal",
        "32",
        "block_tokens",
        "CacheConfig.DEFAULT_BLOCK_SIZE",
    )
    assert row.reason == "None, replaced in CacheConfig._fill_block_size by DEFAULT_BLOCK_SIZE"


def test_memory_fraction_is_the_field_default():
    row = defaults()["gpu_memory_utilization"]
    assert (row.kind, row.value, row.role) == ("literal", "0.85", "memory_fraction")


@pytest.mark.parametrize(
    ("field_line", "kind", "value"),
    [
        ("    block_size: int = 16\n", "literal", "16"),
        ("    block_size: int = Field(default=8, gt=0)\n", "literal", "8"),
        ("    block_size: int = default_block_size()\n", "opaque", ""),
    ],
)
def test_block_size_default_shapes(field_line, kind, value):
    text = CACHE_CONFIG.replace(
        "    block_size: int = Field(default=None, gt=0)\n", field_line
    ).replace("self.block_size = self.DEFAULT_BLOCK_SIZE", "pass")
    row = defaults(text)["block_size"]
    assert (row.kind, row.value) == (kind, value)


def test_an_expression_default_is_opaque_not_guessed():
    text = CACHE_CONFIG.replace("Field(default=0.85, gt=0, le=1)", "0.9 * HEADROOM")
    row = defaults(text)["gpu_memory_utilization"]
    assert (row.kind, row.value) == ("opaque", "")
    assert row.reason == "the default 0.9 * HEADROOM is not a literal"


def test_none_filled_from_a_non_literal_constant_is_opaque():
    text = CACHE_CONFIG.replace("ClassVar[int] = 32", "ClassVar[int] = platform_block()")
    row = defaults(text)["block_size"]
    assert row.kind == "opaque" and row.reason == "the default None is not a literal"


def test_missing_class_or_field_names_path_and_anchor():
    with pytest.raises(AnchorError) as info:
        cache_defaults("class OtherConfig:\n    x = 1\n", CACHE_PATH)
    assert (info.value.paths, info.value.anchor) == ((CACHE_PATH,), "CacheConfig")
    renamed = CACHE_CONFIG.replace("gpu_memory_utilization:", "gpu_mem_fraction:")
    with pytest.raises(AnchorError) as info:
        cache_defaults(renamed, CACHE_PATH)
    assert info.value.anchor == "CacheConfig.gpu_memory_utilization"
    with pytest.raises(ParseError):
        cache_defaults("class CacheConfig(:\n", CACHE_PATH)


def rules(text: str = TP_MODEL_CONFIG, convertor: str | None = None) -> dict:
    return {r.rule: r for r in tp_rules(text, MODEL_PATH, convertor)}


def test_kv_heads_split_and_replicated_below_tp():
    row = rules()["kv_heads_per_gpu"]
    assert (row.shape, row.keys, row.symbol) == (
        "split_replicate",
        ("total_num_kv_heads",),
        "ModelConfig.get_num_kv_heads",
    )
    assert row.code == "max(1, total // parallel_config.tensor_parallel_size)"


def test_mla_gives_one_head_per_gpu():
    row = rules()["mla_kv_heads_per_gpu"]
    assert (row.shape, row.constant, row.when) == ("constant", 1, "use_mla")


def test_divisibility_key_follows_the_convertor():
    assert rules()["attention_heads_divisible"].keys == ("total_num_attention_heads",)
    row = rules(convertor=CONVERTOR_V1)["attention_heads_divisible"]
    assert (row.shape, row.keys, row.code) == (
        "divides",
        ("num_attention_heads",),
        "heads % tp != 0",
    )
    renamed = CONVERTOR_V1.replace('"num_attention_heads", 0', '"n_heads_total", 0')
    assert rules(convertor=renamed)["attention_heads_divisible"].keys == ("n_heads_total",)


@pytest.mark.parametrize(
    ("old", "new", "shape"),
    [
        (
            "return max(1, total // parallel_config.tensor_parallel_size)",
            "return total // parallel_config.tensor_parallel_size",
            "split",
        ),
        (
            "return max(1, total // parallel_config.tensor_parallel_size)",
            "return max(2, total // parallel_config.tensor_parallel_size)",
            "opaque",
        ),
        (
            "return max(1, total // parallel_config.tensor_parallel_size)",
            "return heads_for(total, parallel_config)",
            "opaque",
        ),
    ],
)
def test_kv_split_shapes(old, new, shape):
    assert rules(TP_MODEL_CONFIG.replace(old, new))["kv_heads_per_gpu"].shape == shape


def test_renamed_tp_methods_are_anchor_errors():
    with pytest.raises(AnchorError) as info:
        rules(TP_MODEL_CONFIG.replace("def get_num_kv_heads", "def kv_heads_per_rank"))
    assert info.value.anchor == "ModelConfig.get_num_kv_heads"
    without_check = TP_MODEL_CONFIG.replace("if heads % tp != 0:", "if heads < 0:")
    with pytest.raises(AnchorError) as info:
        rules(without_check)
    assert (
        info.value.anchor == "ModelConfig.verify_with_parallel_config: heads % tensor_parallel_size"
    )


def test_qkv_kv_heads_divide_tp_or_are_divided():
    row = kv_divisibility_rule(LINEAR, LINEAR_PATH)
    assert (row.rule, row.shape, row.keys) == (
        "kv_heads_divisible",
        "divides_or_divided",
        ("total_num_kv_heads",),
    )
    assert row.code == "tp_size >= self.total_num_kv_heads"
    flipped = (
        LINEAR.replace(
            "if tp_size >= self.total_num_kv_heads:", "if self.total_num_kv_heads > tp_size:"
        )
        .replace("divide(tp_size, self.total_num_kv_heads)", "SWAP_A")
        .replace(
            "divide(self.total_num_kv_heads, tp_size)", "divide(tp_size, self.total_num_kv_heads)"
        )
        .replace("SWAP_A", "divide(self.total_num_kv_heads, tp_size)")
    )
    assert kv_divisibility_rule(flipped, LINEAR_PATH).shape == "divides_or_divided"
    one_sided = LINEAR.replace("divide(tp_size, self.total_num_kv_heads)", "tp_size")
    with pytest.raises(AnchorError) as info:
        kv_divisibility_rule(one_sided, LINEAR_PATH)
    assert info.value.anchor == "QKVParallelLinear.__init__: divide(tp_size, total_num_kv_heads)"


def test_state_dims_divided_by_tp():
    found = {(r.calculator, r.dividend): r for r in ssm_tp_splits(MAMBA_UTILS, MAMBA_PATH)}
    assert sorted(found) == [
        ("linear_attention", "num_heads"),
        ("mamba2", "conv_dim"),
        ("mamba2", "num_heads"),
        # short_conv_state_shape (there for mamba_state_calculators) divides its local `width`
        ("short_conv", "width"),
    ]
    assert found[("linear_attention", "num_heads")].division == "floor"
    conv = found[("mamba2", "conv_dim")]
    assert (conv.division, conv.dividend_code) == (
        "exact",
        "intermediate_size + 2 * n_groups * state_size",
    )
    assert conv.adjustments == ("n_groups = n_groups + cls.extra_groups(n_groups, tp_world_size)",)
    assert conv.symbol == "MambaStateShapeCalculator.mamba2_state_shape"


def test_state_splits_missing_anchor():
    with pytest.raises(AnchorError) as info:
        ssm_tp_splits("class Other:\n    pass\n", MAMBA_PATH)
    assert info.value.anchor == "MambaStateShapeCalculator"
    no_tp = MAMBA_UTILS.replace("tp_size", "size").replace("tp_world_size", "world")
    with pytest.raises(AnchorError) as info:
        ssm_tp_splits(no_tp, MAMBA_PATH)
    assert info.value.anchor == "MambaStateShapeCalculator.*_state_shape"


def test_hybrid_page_rule_branches():
    found = {r.when: r for r in hybrid_page_rules(PLATFORM_INTERFACE, PLATFORM_PATH)}
    default = found[("!=", "mamba_cache_mode", ("str", "all"))]
    assert default.shape == "align_ceil"
    assert default.formula == "attn_block_size = align * cdiv(mamba_page, align * page_1)"
    assert default.alignment_floor_is_block_size and default.raises_only
    assert default.pads_mamba_page
    assert default.kernel_sizes_from == "get_supported_kernel_block_sizes"
    assert found[("==", "mamba_cache_mode", ("str", "all"))].shape == "chunk_align_ceil"


def test_hybrid_page_rule_opaque_and_missing():
    changed = PLATFORM_INTERFACE.replace(
        "attn_block_size = align * cdiv(mamba_page, align * page_1)",
        "attn_block_size = pick_block(mamba_page, page_1)",
    )
    shapes = {r.when[0]: r.shape for r in hybrid_page_rules(changed, PLATFORM_PATH)}
    assert shapes == {"==": "chunk_align_ceil", "!=": "opaque"}
    renamed = PLATFORM_INTERFACE.replace("_align_hybrid_block_size", "_align_blocks")
    with pytest.raises(AnchorError) as info:
        hybrid_page_rules(renamed, PLATFORM_PATH)
    assert info.value.anchor == "Platform._align_hybrid_block_size"
    without = PLATFORM_INTERFACE.replace("attn_block_size =", "other_size =")
    with pytest.raises(AnchorError) as info:
        hybrid_page_rules(without, PLATFORM_PATH)
    assert info.value.anchor == "Platform._align_hybrid_block_size: attn_block_size"


def test_engine_runs_the_serving_facts_on_the_miniature_tree():
    facts = extract_engine(
        ENGINES["vllm"],
        MemorySnapshot(tree_v1()),
        commit_date="x",
        only={"serving_defaults", "tp_rules", "ssm_tp_splits", "hybrid_page_rules"},
    )
    by_name = {f.kind.name: f for f in facts.facts}
    assert [r.rule for r in by_name["tp_rules"].records] == [
        "attention_heads_divisible",
        "kv_heads_divisible",
        "kv_heads_per_gpu",
        "mla_kv_heads_per_gpu",
    ]
    read = {source.path for source in by_name["tp_rules"].sources}
    assert read == {MODEL_PATH, LINEAR_PATH, CONVERTOR_PATH}
    assert [r.value for r in by_name["serving_defaults"].records] == ["32", "0.85"]


def test_engine_names_the_missing_cache_file():
    tree = {k: v for k, v in tree_v1().items() if k != CACHE_PATH}
    with pytest.raises(AnchorError) as info:
        extract_engine(
            ENGINES["vllm"], MemorySnapshot(tree), commit_date="x", only={"serving_defaults"}
        )
    assert info.value.paths == (CACHE_PATH, "vllm/config/__init__.py", "vllm/config.py")
    assert info.value.anchor == "CacheConfig"


def test_older_layouts_cuda_block_size_and_absent_facts():
    """Before 2026 CacheConfig left block_size None and the CUDA platform set 16; vLLM before
    MambaStateShapeCalculator and the hybrid page rule has no such rows, with a warning."""
    cache = CACHE_CONFIG.replace("self.block_size = self.DEFAULT_BLOCK_SIZE", "pass")
    cuda = (
        "class CudaPlatformBase(Platform):\n"
        "    @classmethod\n"
        "    def check_and_update_config(cls, vllm_config):\n"
        "        cache_config = vllm_config.cache_config\n"
        "        if cache_config and cache_config.block_size is None:\n"
        "            cache_config.block_size = 16\n"
    )
    tree = {
        **{k: v for k, v in tree_v1().items() if k not in (CACHE_PATH, MAMBA_PATH, PLATFORM_PATH)},
        "vllm/config.py": cache,
        "vllm/platforms/cuda.py": cuda,
    }
    facts = extract_engine(
        ENGINES["vllm"],
        MemorySnapshot(tree),
        commit_date="x",
        only={"serving_defaults", "ssm_tp_splits", "hybrid_page_rules"},
    )
    by_name = {f.kind.name: f for f in facts.facts}
    block = by_name["serving_defaults"].records[0]
    assert (block.setting, block.kind, block.value, block.symbol, block.path) == (
        "block_size",
        "cuda",
        "16",
        "CudaPlatformBase.check_and_update_config",
        "vllm/platforms/cuda.py",
    )
    assert by_name["ssm_tp_splits"].records == by_name["hybrid_page_rules"].records == ()
    absent = {(w.fact, w.code) for w in facts.warnings}
    assert {("ssm_tp_splits", "absent"), ("hybrid_page_rules", "absent")} <= absent


def backend_rows(tree: dict[str, str]) -> list:
    facts = extract_engine(
        ENGINES["vllm"], MemorySnapshot(tree), commit_date="x", only={"attention_backends"}
    )
    return list(facts.facts[0].records)


def test_attention_backend_block_sizes():
    rows = backend_rows(tree_v1())
    found = {(r.use_mla, r.default_branch, r.rank): r for r in rows}
    flash = found[(False, True, 0)]
    # the default block size 32 is a multiple of MultipleOf(16): kept
    assert (flash.backend, flash.kernel_block_sizes, flash.preferred_block) == (
        "FLASH",
        ("MultipleOf(16)",),
        32,
    )
    assert flash.branch == "not use_mla"
    computed = found[(False, True, 1)]
    assert computed.preferred_block is None
    assert computed.reason == "ComputedBackend.get_supported_kernel_block_sizes computes its sizes"
    wide = found[(True, False, 0)]  # 32 is among [32, 64]
    assert (wide.backend, wide.preferred_block, wide.branch) == (
        "WIDE_MLA",
        32,
        "use_mla and device_capability.major == 10",
    )
    small = found[(True, True, 0)]  # 32 % 64 != 0: the smallest kernel size
    assert (small.backend, small.preferred_block, small.symbol) == (
        "SMALL_MLA",
        64,
        "SmallMLABackend",
    )
    assert found[(True, True, 1)].reason == (
        "AttentionBackendEnum.GONE is not in vllm/v1/attention/backends/registry.py"
    )


def test_attention_backend_overrides_and_a_changed_base_rule():
    from tests.vllm_serving_miniatures import BACKEND_BASE, BACKEND_BASE_PATH, FLASH_BACKEND

    literal = FLASH_BACKEND.replace(
        "return super().get_preferred_block_size(default_block_size)", "return 256"
    )
    tree = {**tree_v1(), "vllm/v1/attention/backends/flash.py": literal}
    flash = next(r for r in backend_rows(tree) if r.backend == "FLASH")
    assert (flash.preferred_block, flash.reason) == (256, "get_preferred_block_size returns 256")
    guarded = FLASH_BACKEND.replace("current_platform.is_xpu()", "current_platform.is_tpu()")
    tree = {**tree_v1(), "vllm/v1/attention/backends/flash.py": guarded}
    flash = next(r for r in backend_rows(tree) if r.backend == "FLASH")
    assert (flash.preferred_block, flash.reason) == (
        None,
        "FlashBackend.get_preferred_block_size is not evaluated",
    )
    changed = BACKEND_BASE.replace("return min(", "return max(")
    rows = backend_rows({**tree_v1(), BACKEND_BASE_PATH: changed})
    small = next(r for r in rows if r.backend == "SMALL_MLA")
    assert small.preferred_block is None
    assert small.reason == "AttentionBackend.get_preferred_block_size no longer has the known shape"


def test_attention_backends_missing_anchor_and_absent_registry():
    from tests.vllm_serving_miniatures import BACKEND_REGISTRY_PATH, CUDA_PATH

    tree = {**tree_v1(), CUDA_PATH: "def _other_priorities():\n    return []\n"}
    with pytest.raises(AnchorError) as info:
        backend_rows(tree)
    assert (info.value.anchor, info.value.paths) == ("_get_backend_priorities", (CUDA_PATH,))
    tree = {k: v for k, v in tree_v1().items() if k != BACKEND_REGISTRY_PATH}
    facts = extract_engine(
        ENGINES["vllm"], MemorySnapshot(tree), commit_date="x", only={"attention_backends"}
    )
    assert facts.facts[0].records == ()
    assert [(w.fact, w.code) for w in facts.warnings] == [("attention_backends", "absent")]


def test_backend_base_resolution_reads_module_scope_imports_only():
    # A function-local `from x import Base` must not decide where the class's base comes from:
    # Python looks the base up in the module's namespace (here: the top-level import).
    from apron.extractors.parsing.python_ts import parse_tree
    from apron.extractors.vllm.attention_backends import _imports

    text = (
        "from vllm.a import Base\n"
        "try:\n    from vllm.b import Other\nexcept ImportError:\n    pass\n"
        "def helper():\n    from vllm.elsewhere import Base\n"
        "class Flash(Base):\n    pass\n"
    )
    found = _imports(parse_tree(text), "vllm.backends.flash", False)
    assert found == {"Base": "vllm.a.Base", "Other": "vllm.b.Other"}
