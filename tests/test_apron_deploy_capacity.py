"""Capacity and the fit verdict for every mechanism (#33 items 1-3), by hand arithmetic and by
vLLM's own numbers.

vLLM's answers quoted below were computed with vLLM's own functions at its pin
(vllm.v1.core.kv_cache_utils.get_kv_cache_configs and get_max_concurrency_for_kv_cache_config on
hand-built KVCacheSpecs, in an environment built from the pin outside this repository; vLLM's
block counts are what it logs as "GPU KV cache size" and "Maximum concurrency")."""

from __future__ import annotations

from pathlib import Path

import pytest

from apron.config import load_sample
from apron.engines.vllm.kv_cache import (
    CHUNKED,
    FULL,
    MAMBA,
    SLIDING,
    LayerSpec,
    group_specs,
    kv_cache_plan,
)
from apron.planning.planner import plan
from apron.render import summary_lines, what_fits_differs
from apron.results import Capacity, Verdict

CORPUS = Path(__file__).resolve().parent / "corpus"
GIB = 2**30
GIB80 = 80 * GIB
REQUESTED_80 = 79_027_398_247  # ceil(85,899,345,920 x 0.92): vLLM's requested memory on 80 GiB


def engine(result, name: str):
    return next(v for v in result.engines if v.engine == name)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------ gpt-oss-20b at 32k on 80 GiB


@pytest.fixture(scope="module")
def gpt_oss():
    return plan(
        CORPUS / "gpt-oss-20b.json",
        context=32768,
        gpu_memory=GIB80,
        params=20_000_000_000,
        weights_dtype="bf16",
    )


def test_gpt_oss_vllm_groups_its_windowed_and_full_layers_and_caps_the_windowed_ones(gpt_oss):
    c = engine(gpt_oss, "vllm").capacity
    # 24 layers, even ones windowed (128): 12 + 12 layers, one group each (group size 12);
    # a layer's page = 16 tokens x 8 KV heads x (64 + 64) x 2 B = 32,768 B; a block id takes
    # 12 pages = 393,216 B of the pool
    budget = REQUESTED_80 - 40_000_000_000
    assert c.budget_bytes == budget == 39_027_398_247
    assert c.block_bytes == 12 * 16 * 8 * 128 * 2 == 393_216
    assert c.blocks == budget // 393_216 == 99_251
    # a request at 32,768: the full group cdiv(32,768, 16) = 2,048 blocks; the windowed group
    # cdiv(min(128 - 1 + 2 x 8,192 in flight, 32,768), 16) + 1 = cdiv(16,511, 16) + 1 = 1,033
    # (vllm serve on >= 70 GiB: max_num_batched_tokens 8,192; async scheduling: 2 batches)
    assert c.blocks_per_sequence == 2_048 + cdiv(128 - 1 + 16_384, 16) + 1 == 3_081
    # vLLM's own answer: 99,251 blocks, max concurrency 32.21x, GPU KV cache 1,055,584 tokens
    assert c.max_concurrency == 99_251 / 3_081
    assert (c.sequences, c.kv_tokens) == (32, int(99_251 / 3_081 * 32_768)) == (32, 1_055_584)
    assert c.verdict.fits is True and c.verdict.largest_batch == 32


def test_gpt_oss_sglang_sizes_its_swa_pool_with_the_ratio(gpt_oss):
    c = engine(gpt_oss, "sglang").capacity
    # mem_fraction_static 0.83 (80 GiB, tp 1); budget = ceil(85,899,345,920 x 0.83) - 40e9
    assert c.memory_fraction == 0.83
    assert c.budget_bytes == 71_296_457_114 - 40_000_000_000 == 31_296_457_114
    # cell = 12 full layers x 2,048 B + 0.8 (swa_full_tokens_ratio) x 12 windowed x 2,048 B
    cell = 12 * 2048 + 0.8 * 12 * 2048
    assert cell == 44_236.8
    full = int(31_296_457_114 // cell)
    assert c.kv_tokens == full == 707_475
    # SWA tokens int(707,475 x 0.8) = 565,980; a request holds 32,768 full tokens and at most
    # window 128 + page 1 SWA tokens: min(707,475 // 32,768, 565,980 // 129) = min(21, 4,387)
    assert c.sequences == 21
    assert c.verdict.fits is True


# ------------------------------------------------------------------ Gemma 3 27B at 32k on 80 GiB


@pytest.fixture(scope="module")
def gemma3():
    return plan(
        load_sample("gemma-3-27b"),
        context=32768,
        gpu_memory=GIB80,
        params=27_000_000_000,
        weights_dtype="bf16",
    )


def test_gemma3_vllm_pads_its_windowed_groups_to_the_global_layer_count(gemma3):
    c = engine(gemma3, "vllm").capacity
    # 62 layers, every 6th global: 10 global, 52 windowed (1,024). Group size 10 (52 >= 1.5 x
    # 10): 1 global group and cdiv(52, 10) = 6 windowed groups, 8 padding layers. A layer's
    # page = 16 x 16 KV heads x (128 + 128) x 2 B = 131,072 B; a block id takes 10 pages
    budget = REQUESTED_80 - 54_000_000_000
    assert c.block_bytes == 10 * 131_072 == 1_310_720
    assert c.blocks == budget // 1_310_720 == 19_094
    # a request: 2,048 (global) + 6 x (cdiv(min(1,024 - 1 + 16,384, 32,768), 16) + 1 = 1,089)
    assert c.blocks_per_sequence == 2_048 + 6 * (cdiv(1_023 + 16_384, 16) + 1) == 8_582
    # vLLM's own answer: 19,094 blocks, max concurrency 2.22x, 72,905 tokens
    assert (c.sequences, c.kv_tokens) == (2, int(19_094 / 8_582 * 32_768)) == (2, 72_905)
    assert c.verdict.largest_batch == 2


def test_gemma3_sglang_is_window_unaware_and_its_fraction_can_be_given():
    result = plan(
        load_sample("gemma-3-27b"),
        context=32768,
        gpu_memory=GIB80,
        params=27_000_000_000,
        weights_dtype="bf16",
        memory_fraction=0.9,
    )
    c = engine(result, "sglang").capacity
    # Gemma3ForConditionalGeneration is not in SGLang's is_hybrid_swa_model: every one of the 62
    # layers holds every token: 62 x 16 x 256 x 2 B = 507,904 B per token
    budget = -(-GIB80 * 9 // 10) - 54_000_000_000
    assert c.budget_bytes == budget == 23_309_411_328
    assert c.kv_tokens == budget // 507_904 == 45_893
    assert c.sequences == 1 and c.verdict.fits is True
    assert c.verdict.largest_batch == 1


def test_gemma3_sglang_at_its_default_fraction(gemma3):
    c = engine(gemma3, "sglang").capacity
    # mem_fraction_static round((81,920 - 13,904) / 81,920, 3) = 0.83 (the prefill cuda graph
    # settled by the extracted prefill_graph_rules); budget ceil(85,899,345,920 x 0.83) - 54e9;
    # every one of the 62 layers at full context, 507,904 B per token
    assert c.memory_fraction == 0.83
    assert c.budget_bytes == 71_296_457_114 - 54_000_000_000 == 17_296_457_114
    assert c.kv_tokens == 17_296_457_114 // 507_904 == 34_054
    assert (c.sequences, c.verdict.fits, c.verdict.largest_context) == (1, True, 34_054)


# ------------------------------------------------------------------ the repros of the issue


def test_batch_8_of_llama_8b_on_24gib_does_not_fit_and_says_what_would():
    result = plan(
        load_sample("llama-3.1-8b"),
        context=32768,
        gpu_memory=24 * GIB,
        batch=8,
        params=8_030_000_000,
        weights_dtype="bf16",
    )
    v = engine(result, "vllm").capacity.verdict
    # budget ceil(25,769,803,776 x 0.92) - 16,060,000,000 = 7,648,219,474 B; a block 16 x 32 x
    # 8 x 256 x 2 = 2,097,152 B: 3,646 blocks; a sequence 2,048 blocks, so 1 fits; batch 8 fits
    # at floor(3,646 / 8) = 455 blocks = 7,280 tokens
    assert (v.fits, v.largest_batch, v.largest_context) == (False, 1, 7_280)
    assert v.cache_bytes == 8 * 2_048 * 2_097_152  # 32 GiB for the batch
    s = engine(result, "sglang").capacity.verdict
    assert s.fits is False and s.largest_batch == 1
    lines = "\n".join(summary_lines(result))
    assert "vLLM: does not fit" in lines and "batch 8 at 7,280 tokens" in lines


def test_weights_that_do_not_fit_are_said_first():
    result = plan(
        load_sample("llama-3.1-8b"),
        context=32768,
        gpu_memory=16 * GIB,
        params=8_030_000_000,
        weights_dtype="bf16",
    )
    v = engine(result, "vllm").capacity.verdict
    assert (v.fits, v.weights_fit, v.largest_batch) == (False, False, 0)
    lines = summary_lines(result)
    first_table_line = next(i for i, line in enumerate(lines) if line.startswith("engine"))
    weights_line = next(i for i, line in enumerate(lines) if "the weights alone" in line)
    assert weights_line < first_table_line


def _capacity(tokens: int, sequences: int, block: int, fits: bool = True) -> Capacity:
    verdict = Verdict(
        fits=fits,
        reason="",
        weights_fit=True,
        budget_bytes=1,
        weights_bytes=1,
        cache_bytes=1,
        largest_context=None,
        largest_batch=None,
        notes=(),
    )
    return Capacity(
        gpu_memory_bytes=GIB80,
        memory_fraction=0.9,
        memory_fraction_source="",
        block_tokens=block,
        block_tokens_source="",
        budget_bytes=1,
        blocks=1,
        block_bytes=1,
        kv_tokens=tokens,
        blocks_per_sequence=1,
        sequence_bytes=1,
        sequences=sequences,
        limit="kv",
        unknown=(),
        arithmetic=(),
        notes=(),
        max_concurrency=None,
        verdict=verdict,
    )


def test_a_difference_smaller_than_a_block_is_not_engines_differ():
    result = plan(load_sample("llama-3.1-8b"), context=32768, gpu_memory=GIB80, weights_bytes=GIB)
    a, b = result.engines[0], result.engines[1]
    close = result._replace(
        engines=(
            a._replace(capacity=_capacity(1_730_672, 52, 16)),
            b._replace(capacity=_capacity(1_730_685, 52, 1)),
        )
    )
    assert what_fits_differs(close) == ""
    apart = close._replace(
        engines=(close.engines[0], b._replace(capacity=_capacity(1_730_700, 52, 1)))
    )
    assert what_fits_differs(apart) == "vLLM 1,730,672 KV tokens, SGLang 1,730,700 KV tokens"


# ------------------------------------------------------------------ other mechanisms


def test_llama4_chunked_local_layers_keep_their_groups_in_vllm():
    # as published, attn_temperature_tuning is 4, which transformers' @strict bool field refuses
    # (vLLM and SGLang refuse it): the config vLLM loads has it true
    import json

    scout = json.loads((CORPUS / "llama-4-scout-17b-16e.json").read_text())
    scout["text_config"]["attn_temperature_tuning"] = True
    result = plan(
        scout,
        context=32768,
        gpu_memory=GIB80,
        weights_bytes=20 * GIB,
    )
    v = engine(result, "vllm")
    c = v.capacity
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1 at the pin: the hybrid
    # KV cache manager stays on. 36 chunked (8,192) and 12 full layers of 8 x 128 x 2 x 2 B =
    # 4,096 B per token: groups of 12 layers, 4 groups, a block 12 x 16 x 4,096 B of the pool
    assert c.block_bytes == 12 * 16 * 4_096
    budget = REQUESTED_80 - 20 * GIB
    assert c.blocks == budget // c.block_bytes
    # a chunked group admits chunk + in-flight tokens (2 batches of 8,192 with async
    # scheduling): min(8,192 + 16,384, 32,768) / 16 = 1,536 blocks; the full group 2,048
    assert c.blocks_per_sequence == 3 * 1_536 + 2_048
    assert c.sequences == c.blocks // c.blocks_per_sequence == 10
    assert any("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE" in n for n in c.notes)


def test_mla_and_its_indexer_take_one_group_with_their_pages_summed():
    result = plan(
        CORPUS / "deepseek-v3.2.json", context=32768, gpu_memory=GIB80, weights_bytes=20 * GIB
    )
    c = engine(result, "vllm").capacity
    # 61 latent layers of (512 + 64) x 2 B and 61 indexer layers of 128 + 128 / 128 x 4 = 132 B
    # per token: one uniform-type group; the MLA backend's block
    per_token = 61 * 576 * 2 + 61 * 132
    assert c.block_bytes == c.block_tokens * per_token
    assert c.blocks == (REQUESTED_80 - 20 * GIB) // c.block_bytes
    assert c.blocks_per_sequence == cdiv(32_768, c.block_tokens)


def test_kv_shared_layers_take_no_pages():
    result = plan(CORPUS / "gemma-3n-e4b.json", context=32768, gpu_memory=GIB80, weights_bytes=GIB)
    v = engine(result, "vllm")
    assert v.capacity.sequences is not None
    kv_layers = 35 - 15  # num_kv_shared_layers 15 of 35 reuse an earlier layer's KV
    groups_pages = v.capacity.block_bytes // (v.capacity.block_tokens * 2 * 256 * 2)
    assert groups_pages <= kv_layers


def test_attention_free_recurrent_state_is_one_page_per_sequence_per_layer():
    result = plan(
        CORPUS / "mamba-codestral-7b.json", context=32768, gpu_memory=GIB80, weights_bytes=20 * GIB
    )
    v = engine(result, "vllm")
    c = v.capacity
    # every layer a Mamba spec: one uniform group; a request takes one page (mamba_cache_mode
    # "none"), so the sequences are the blocks
    per_layer = v.state_bytes_per_sequence // 64
    assert c.block_bytes == 64 * per_layer
    assert c.sequences == c.blocks == (REQUESTED_80 - 20 * GIB) // c.block_bytes
    assert c.kv_tokens is None  # no KV cache: no tokens to count


# ------------------------------------------------------------------ vLLM's own numbers


def _attention(kind: str, window: int = 0, heads: int = 8, head: int = 128, block: int = 16):
    per_token = heads * 2 * head * 2
    return LayerSpec(
        kind=kind,
        block_tokens=block,
        page_bytes=per_token * block,
        window=window,
        geometry=(heads, head),
    )


def _pages(in_flight: int):
    def pages(spec: LayerSpec, length: int) -> int:
        if spec.kind == SLIDING:
            return cdiv(min(spec.window - 1 + in_flight, length), spec.block_tokens) + 1
        if spec.kind == CHUNKED:
            return cdiv(min(spec.window + in_flight, length), spec.block_tokens)
        if spec.kind == MAMBA:
            return 1
        return cdiv(length, spec.block_tokens)

    return pages


@pytest.mark.parametrize(
    ("specs", "hybrid", "available", "in_flight", "blocks", "concurrency"),
    [
        # vLLM's own answers (get_kv_cache_configs / get_max_concurrency_for_kv_cache_config)
        ([_attention(FULL)] * 32, True, 7_648_219_474, 16_384, 3_646, 1.7802734375),
        (
            [_attention(FULL if (i + 1) % 4 == 0 else CHUNKED, 8_192) for i in range(48)],
            False,
            20 * GIB,
            16_384,
            6_826,
            3.3330078125,
        ),
        (
            [_attention(FULL if (i + 1) % 4 == 0 else CHUNKED, 8_192) for i in range(48)],
            True,
            20 * GIB,
            16_384,
            27_306,
            4.1024639423076925,
        ),
        ([_attention(SLIDING, 4_096)] * 32, True, 20 * GIB, 4_096, 10_240, 19.96101364522417),
        (
            [_attention(FULL, heads=8, head=64)] * 13
            + [_attention(SLIDING, 128, heads=8, head=64)] * 12,
            True,
            20 * GIB,
            16_384,
            50_412,
            16.36222005842259,
        ),
    ],
)
def test_groups_blocks_and_concurrency_match_vllms_own(
    specs, hybrid, available, in_flight, blocks, concurrency
):
    grouping = group_specs(specs, hybrid)
    got = kv_cache_plan(grouping, available, 32_768, _pages(in_flight))
    assert (got.num_blocks, got.max_concurrency) == (blocks, concurrency)


def test_a_hybrid_with_padded_state_pages_matches_vllms_own():
    attention = _attention(FULL, block=1_056)
    state = LayerSpec(
        kind=MAMBA,
        block_tokens=1_056,
        page_bytes=1_056 * 8 * 256 * 2,
        window=0,
        geometry=("mamba", 2_000_000),
    )
    specs = [attention if i % 8 == 4 else state for i in range(32)]
    grouping = group_specs(specs)
    assert [g.real_layers for g in grouping.groups] == [4] * 8
    got = kv_cache_plan(grouping, 30 * GIB, 32_768, _pages(16_384))
    assert (got.num_blocks, got.max_concurrency) == (1_861, 47.717948717948715)


def test_one_request_that_does_not_fit_is_vllms_refusal_with_its_estimate():
    from apron.engines.vllm.kv_cache import estimated_max_model_len

    grouping = group_specs([_attention(FULL)] * 32)
    got = kv_cache_plan(grouping, GIB, 32_768, _pages(16_384))
    # vLLM: "4.0 GiB KV cache is needed ... the estimated maximum model length is 8192"
    assert got.fits_one_request is False and got.needed_bytes == 4 * GIB
    assert estimated_max_model_len(grouping, GIB, 32_768, _pages(16_384)) == 8_192


# ------------------------------------------------------------------ SGLang's own answers


def _sglang_pool_cases():
    from tests.conformance_records import commit_dirs, measurements

    figures = {"pool_configurator", "swa_full_tokens_ratio"}
    return [
        m
        for commit in (p.name for p in commit_dirs("sglang"))
        for m in measurements("sglang", commit)
        # the configurator follows the model, not tp: the tp 1 records (at tp 8 apron, like
        # vLLM, refuses some of these models; SGLang still names a configurator)
        if m.figure in figures and not m.accept_unknown and not m.refused and m.settings["tp"] == 1
    ]


CONFIGURATORS = {
    "default": "DefaultPoolConfigurator",
    "mamba": "DefaultPoolConfigurator",  # SGLang's state pool sits beside its default pool
    "hybrid_swa": "HybridSWAPoolConfigurator",
}


@pytest.mark.parametrize("m", _sglang_pool_cases(), ids=lambda m: m.label)
def test_sglang_pools_are_the_configurator_sglang_picks(m):
    # SGLang's own answers at its pin (conformance/sglang): the configurator
    # create_memory_pool_configurator picks, and the SWA ratio it sizes with
    result = plan(
        m.input,
        tp=m.settings["tp"],
        kv_dtype=m.settings["kv_dtype"],
        gpu_memory=GIB80,
        memory_fraction=0.9,
        weights_bytes=GIB,
        context=4096,
    )
    c = engine(result, "sglang").capacity
    if m.figure == "pool_configurator":
        assert c.layout, c.unknown
        assert CONFIGURATORS[c.layout] == m.value
    else:
        assert any(f"swa_full_tokens_ratio {m.value}" in n for n in c.notes)
