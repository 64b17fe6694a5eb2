"""apron per GPU under --tp and the inverse (--gpu-memory): hand-computed expectations on real
configs (tests/corpus/) and the real metadata.total_size of each checkpoint's
model.safetensors.index.json (published facts, written into a model directory per test).

vLLM at the pin: gpu_memory_utilization 0.92, block_size 16 (generated/vllm/serving_defaults.py);
requested = ceil(80 GiB x 0.92) = ceil(85,899,345,920 x 0.92) = 79,027,398,247 B
(vllm/v1/worker/utils.py request_memory)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import ApronInputError, load_config, plan
from apron.capacity import budget, fit, parse_memory
from apron.command_line.cli import app
from apron.parallel import tp_refusal
from apron.results import GpuShare

CORPUS = Path(__file__).resolve().parent / "corpus"
GIB80 = 80 * 2**30
REQUESTED = 79_027_398_247
# metadata.total_size of the published indexes
LLAMA_31_8B = 16_060_522_496  # meta-llama/Llama-3.1-8B, 4 shards, bf16
QWEN3_30B_A3B = 61_064_245_248  # Qwen/Qwen3-30B-A3B, 16 shards, bf16, 128 experts x 48 layers
DEEPSEEK_V3 = 688_586_727_753  # deepseek-ai/DeepSeek-V3, 163 shards, fp8 weights
runner = CliRunner()


def model_dir(tmp_path: Path, corpus: str, total_size: int, tensors: dict[str, str]) -> Path:
    directory = tmp_path / corpus.removesuffix(".json")
    directory.mkdir()
    shutil.copy(CORPUS / corpus, directory / "config.json")
    index = {"metadata": {"total_size": total_size}, "weight_map": tensors}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    return directory


@pytest.fixture
def llama(tmp_path):
    return model_dir(
        tmp_path,
        "llama-3.1-8b.json",
        LLAMA_31_8B,
        {"lm_head.weight": "model-00004-of-00004.safetensors"},
    )


def vllm(result):
    return next(v for v in result.engines if v.engine == "vllm")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GiB", 85_899_345_920),
        ("80GB", 80_000_000_000),
        ("81920MiB", 85_899_345_920),
        ("80 gib", 85_899_345_920),
        ("0.5TiB", 549_755_813_888),
        ("141GB", 141_000_000_000),
    ],
)
def test_memory_units(text, expected):
    assert parse_memory(text) == expected


@pytest.mark.parametrize("text", ["80", "80G", "eighty GiB", "0GiB", "-1GiB", "80 GiB extra"])
def test_memory_needs_a_number_and_a_unit(text):
    with pytest.raises(ApronInputError, match="--gpu-memory"):
        parse_memory(text)


def test_budget_takes_the_ceiling_like_request_memory():
    # ceil(85,899,345,920 x 0.92) - 16,060,522,496 = 79,027,398,247 - 16,060,522,496
    assert budget(GIB80, 0.92, LLAMA_31_8B) == 62_966_875_751


def test_fit_rounds_down_to_whole_blocks():
    # budget 1,000 B; block = 4 tokens x 10 B = 40 B; 25 blocks = 100 tokens;
    # context 10 -> ceil(10 / 4) = 3 blocks = 120 B (+ 30 B state) -> floor(1000 / 150) = 6
    found = fit(
        gpu_memory=1_000,
        fraction=1.0,
        weights_per_gpu=0,
        kv_bytes_per_token=10,
        state_bytes_per_sequence=30,
        block_tokens=4,
        context=10,
    )
    assert (found.blocks, found.kv_tokens, found.blocks_per_sequence) == (25, 100, 3)
    assert (found.sequence_bytes, found.sequences, found.limit) == (150, 6, "kv")


def test_fit_state_larger_than_kv_runs_out_first():
    # 1 block of 40 B + 200 B state per sequence: the state is the larger part
    found = fit(
        gpu_memory=1_000,
        fraction=1.0,
        weights_per_gpu=0,
        kv_bytes_per_token=10,
        state_bytes_per_sequence=200,
        block_tokens=4,
        context=4,
    )
    assert (found.sequences, found.limit) == (4, "state")


def test_fit_weights_take_everything():
    found = fit(
        gpu_memory=100,
        fraction=0.5,
        weights_per_gpu=60,
        kv_bytes_per_token=1,
        state_bytes_per_sequence=0,
        block_tokens=16,
        context=16,
    )
    assert (found.budget_bytes, found.kv_tokens, found.sequences, found.limit) == (
        -10,
        0,
        0,
        "weights",
    )


def test_fit_without_context_has_no_sequence_count():
    found = fit(
        gpu_memory=1_000,
        fraction=1.0,
        weights_per_gpu=0,
        kv_bytes_per_token=10,
        state_bytes_per_sequence=0,
        block_tokens=4,
        context=None,
    )
    assert found.kv_tokens == 100 and found.sequences is None
    assert "no context length" in found.unknown[0]


def test_dense_llama_tp1(llama):
    # KV/token = 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B
    # budget = 79,027,398,247 - 16,060,522,496 = 62,966,875,751 B
    # block = 16 x 131,072 = 2,097,152 B; blocks = floor(62,966,875,751 / 2,097,152) = 30,024
    # tokens = 30,024 x 16 = 480,384; per sequence ceil(32,768 / 16) = 2,048 blocks
    # sequences = floor(62,966,875,751 / (2,048 x 2,097,152)) = 14
    result = plan(llama, context=32768, gpu_memory=GIB80)
    view = vllm(result)
    assert result.weights.total_bytes == LLAMA_31_8B
    assert view.gpu.weights_bytes == LLAMA_31_8B
    assert view.gpu.kv_bytes_per_token == 131_072
    c = view.capacity
    assert (c.memory_fraction, c.block_tokens) == (0.92, 16)
    assert (c.budget_bytes, c.blocks, c.kv_tokens) == (62_966_875_751, 30_024, 480_384)
    assert (c.blocks_per_sequence, c.sequences, c.limit) == (2_048, 14, "kv")


def test_dense_llama_tp2(llama):
    # weights / 2 = 8,030,261,248 B; 8 KV heads / 2 = 4 per GPU -> 32 x 4 x 256 x 2 = 65,536 B
    # budget = 79,027,398,247 - 8,030,261,248 = 70,997,136,999 B
    # blocks = floor(70,997,136,999 / (16 x 65,536)) = 67,708 -> 1,083,328 tokens
    # sequences = floor(70,997,136,999 / (2,048 x 1,048,576)) = 33
    view = vllm(plan(llama, context=32768, tp=2, gpu_memory=GIB80))
    g, c = view.gpu, view.capacity
    assert (g.status, g.kv_heads_per_gpu, g.weights_bytes) == ("split", 4, 8_030_261_248)
    assert (g.kv_bytes_per_token, g.kv_bytes_at_context) == (65_536, 2_147_483_648)
    assert (c.budget_bytes, c.blocks, c.kv_tokens, c.sequences) == (
        70_997_136_999,
        67_708,
        1_083_328,
        33,
    )


def test_fewer_kv_heads_than_gpus_are_replicated(llama):
    # 8 KV heads at tp 16: vLLM get_num_kv_heads max(1, 8 // 16) = 1 head per GPU
    # -> 32 x 1 x 256 x 2 = 16,384 B/token; 32 query heads % 16 == 0 is accepted
    view = vllm(plan(llama, context=32768, tp=16))
    assert (view.gpu.kv_heads_per_gpu, view.gpu.kv_bytes_per_token) == (1, 16_384)
    assert any("one replica of a KV head" in line for line in view.gpu.arithmetic)


def test_tp_that_does_not_divide_the_heads_is_refused_with_the_sizes_that_work(llama):
    # 32 attention heads, tp 3: vLLM verify_with_parallel_config refuses; no other engine
    # with per-GPU rules accepts it, so apron exits 2 with one message
    result = runner.invoke(app, ["plan", str(llama), "--tp", "3", "--gpu-memory", "80GiB"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "--tp 3 is refused" in message
    assert "num_attention_heads = 32 is not divisible by tp 3" in message
    assert "1, 2, 4, 8, 16, 32" in message


def test_refused_everywhere_it_is_known_is_one_message():
    # Qwen2.5-7B: 28 heads, tp 8 -> vLLM refuses; SGLang's tp rules are not extracted, so no
    # engine accepts tp 8: one message naming the sizes that divide 28
    with pytest.raises(ApronInputError) as err:
        plan(load_config(CORPUS / "qwen2.5-7b.json"), context=4096, tp=8)
    message = str(err.value)
    assert "vllm: num_attention_heads = 28 is not divisible by tp 8" in message
    assert "sglang: num_attention_heads = 28 is not divisible by tp 8" in message
    assert "tp sizes that divide it: 1, 2, 4, 7, 14, 28" in message


def test_kv_heads_must_divide_or_be_divided_by_tp():
    # Qwen2.5-14B: 40 heads, 8 KV heads. tp 20 divides 40, but 20 >= 8 and 20 % 8 != 0:
    # vLLM's QKVParallelLinear rule refuses it. Sizes passing both checks up to 64:
    # divisors of 40 (1, 2, 4, 5, 8, 10, 20, 40) that divide 8 or are multiples of 8
    with pytest.raises(ApronInputError, match="8 KV heads and tp 20") as err:
        plan(load_config(CORPUS / "qwen2.5-14b.json"), context=4096, tp=20)
    assert str(err.value).endswith("tp sizes every check accepts: 1, 2, 4, 8, 40")
    view = vllm(plan(load_config(CORPUS / "qwen2.5-14b.json"), context=4096, tp=8))
    assert view.gpu.status == "split" and view.gpu.kv_heads_per_gpu == 1


def share(status: str, refused: tuple[str, ...] = ()) -> GpuShare:
    return GpuShare(
        status=status,
        kv_heads_per_gpu=None,
        kv_heads_how="",
        kv_bytes_per_token=None,
        kv_bytes_at_context=None,
        state_bytes_per_sequence=None,
        weights_bytes=None,
        refused=refused,
        valid_tp=(1, 2),
        unknown=(),
        arithmetic=(),
    )


@pytest.mark.parametrize(
    ("shares", "expected"),
    [
        # one engine accepts: the refusing one says so in its own row, no message
        ([("A", share("split")), ("B", share("refused", ("B: no")))], ""),
        (
            [("A", share("refused", ("A: no",))), ("B", share("unknown"))],
            "--tp 8 is refused: A: no (B: tensor-parallel rules not extracted);"
            " tp sizes every check accepts: 1, 2",
        ),
        ([("A", share("unknown"))], ""),
        (
            [("A", share("refused", ("x",))), ("B", share("refused", ("x",)))],
            "--tp 8 is refused: x; tp sizes every check accepts: 1, 2",
        ),
    ],
)
def test_tp_refusal(shares, expected):
    assert tp_refusal(8, shares) == expected


def test_moe_weights_include_every_expert_and_kv_heads_replicate(tmp_path):
    # Qwen3-30B-A3B: the index total (61,064,245,248 B) stores all 128 experts of 48 layers
    # tp 8: weights 7,633,030,656 B per GPU; 4 KV heads < 8 -> 1 per GPU:
    # 48 x 1 x (128 + 128) x 2 = 24,576 B/token; block 16 x 24,576 = 393,216 B
    # budget = 79,027,398,247 - 7,633,030,656 = 71,394,367,591
    # blocks = floor(71,394,367,591 / 393,216) = 181,565 -> 2,905,040 tokens
    # sequences = floor(71,394,367,591 / (2,048 x 393,216)) = 88
    directory = model_dir(
        tmp_path,
        "qwen3-30b-a3b.json",
        QWEN3_30B_A3B,
        {
            "model.layers.0.mlp.experts.0.down_proj.weight": "model-00001-of-00016.safetensors",
            "model.layers.0.mlp.experts.127.up_proj.weight": "model-00001-of-00016.safetensors",
        },
    )
    view = vllm(plan(directory, context=32768, tp=8, gpu_memory=GIB80))
    g, c = view.gpu, view.capacity
    assert (g.weights_bytes, g.kv_heads_per_gpu, g.kv_bytes_per_token) == (
        7_633_030_656,
        1,
        24_576,
    )
    assert (c.blocks, c.kv_tokens, c.sequences) == (181_565, 2_905_040, 88)


def test_mla_at_tp8_replicates_the_latent_and_splits_the_weights(tmp_path):
    # DeepSeek-V3: latent 61 x (512 + 64) x 2 B = 70,272 B/token on every GPU (vLLM's MLA
    # rule: 1 KV head per GPU); weights ceil(688,586,727,753 / 8) = 86,073,340,970 B per GPU
    # budget = 79,027,398,247 - 86,073,340,970 = -7,045,942,723: the weights alone do not fit
    directory = model_dir(
        tmp_path,
        "deepseek-v3.json",
        DEEPSEEK_V3,
        {"model.layers.61.shared_head.head.weight": "model-000163-of-000163.safetensors"},
    )
    view = vllm(plan(directory, context=32768, tp=8, gpu_memory=GIB80))
    assert view.mechanism == "mla_latent"
    g, c = view.gpu, view.capacity
    assert (g.status, g.kv_bytes_per_token, g.weights_bytes) == ("split", 70_272, 86_073_340_970)
    assert (c.budget_bytes, c.kv_tokens, c.sequences, c.limit) == (
        -7_045_942_723,
        0,
        0,
        "weights",
    )
    # on 141 GB GPUs: 141,000,000,000 x 0.92 = 129,720,000,000 - 86,073,340,970
    # = 43,646,659,030 B; blocks = floor(43,646,659,030 / (16 x 70,272)) = 38,819
    big = vllm(plan(directory, context=32768, tp=8, gpu_memory=141_000_000_000)).capacity
    assert (big.budget_bytes, big.blocks, big.kv_tokens) == (43_646_659_030, 38_819, 621_104)
    assert big.sequences == 18  # floor(43,646,659,030 / (2,048 x 1,124,352))
    # the block: FLASH_ATTN_MLA, first of vLLM's default CUDA MLA backends, picks 16
    assert big.block_tokens == 16 and big.block_tokens_source.startswith("FLASH_ATTN_MLA")


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_mla_holds_one_kv_head_per_gpu_at_every_tp(tp):
    # vLLM ModelConfig.get_num_kv_heads returns 1 for MLA at every tp (the extracted
    # mla_kv_heads_per_gpu rule; measured: conformance/vllm); the latent stays whole on each GPU:
    # DeepSeek-V3 61 x (512 + 64) x 2 B = 70,272 B/token, not the 128 KV heads of the config
    view = vllm(plan(CORPUS / "deepseek-v3.json", context=32768, tp=tp))
    assert (view.gpu.status, view.gpu.kv_heads_per_gpu, view.gpu.kv_bytes_per_token) == (
        "split",
        1,
        70_272,
    )


@pytest.mark.parametrize("tp", [2, 8])
def test_mla_with_unknown_bytes_splits_without_a_crash(tp):
    # DeepSeek-V4 (compress_ratios): the per-token bytes are unknown; at tp > 1 the share says
    # so (it crashed formatting None before), with 1 KV head per GPU
    config = json.loads((CORPUS / "deepseek-v3.json").read_text())
    config.update(
        model_type="deepseek_v4",
        compress_ratios=[1, 4],
        head_dim=512,
        architectures=["DeepseekV4ForCausalLM"],
    )
    view = vllm(plan(config, context=32768, tp=tp))
    assert (view.gpu.status, view.gpu.kv_heads_per_gpu, view.gpu.kv_bytes_per_token) == (
        "split",
        1,
        None,
    )
    assert "compress_ratios" in view.gpu.unknown[0]


def test_hybrid_state_is_split_per_the_engine_and_capacity_names_the_missing_rule():
    # Jamba-v0.1 at tp 2: 4 attention layers x (8 / 2) KV heads x 256 x 2 B = 8,192 B/token
    # mamba1 per GPU: intermediate 2 x 4,096 / 2 = 4,096;
    # conv (4 - 1) x 4,096 x 2 B = 24,576; ssm 4,096 x 16 x 2 B = 131,072 -> 155,648 B/layer
    # 28 Mamba layers x 155,648 = 4,358,144 B per sequence per GPU
    result = plan(load_config(CORPUS / "jamba-v0.1.json"), context=32768, tp=2, gpu_memory=GIB80)
    view = vllm(result)
    assert (view.gpu.kv_bytes_per_token, view.gpu.state_bytes_per_sequence) == (8_192, 4_358_144)
    assert result.prediction.state_bytes_per_sequence == 2 * 4_358_144
    reasons = " ".join(view.capacity.unknown)
    assert view.capacity.sequences is None
    assert "weights unknown" in reasons or "hybrid page size" in reasons


def test_gated_delta_net_state_split():
    # Qwen3-Next-80B-A3B at tp 4: GDN conv_dim = 2 x 16 x 128 + 32 x 128 = 8,192 -> 2,048;
    # conv (4 - 1) x 2,048 x 2 B = 12,288; ssm 32 / 4 = 8 v-heads x 128 x 128 x 2 B = 262,144
    # per layer 274,432 B; 36 linear-attention layers -> 9,879,552 B per GPU
    result = plan(load_config(CORPUS / "qwen3-next-80b-a3b-instruct.json"), context=4096, tp=4)
    view = vllm(result)
    assert view.gpu.state_bytes_per_sequence == 9_879_552
    assert result.prediction.state_bytes_per_sequence == 4 * 9_879_552


def test_engines_without_rules_show_unknown_not_a_borrowed_figure(llama):
    result = plan(llama, context=32768, tp=2, gpu_memory=GIB80)
    llamacpp = next(v for v in result.engines if v.engine == "llamacpp")
    trtllm = next(v for v in result.engines if v.engine == "trtllm")
    # llama.cpp's sizing rules are extracted, its tensor-parallel split is not: no per-GPU share
    assert llamacpp.capacity is None and llamacpp.gpu is None
    assert any("--split-mode" in n for n in llamacpp.notes)
    assert trtllm.capacity is None and trtllm.commit is None


def test_memory_fraction_override(llama):
    # --memory-fraction 0.5: ceil(85,899,345,920 x 0.5) - 16,060,522,496 = 26,889,150,464
    c = vllm(plan(llama, context=32768, gpu_memory=GIB80, memory_fraction=0.5)).capacity
    assert (c.memory_fraction_source, c.budget_bytes) == ("--memory-fraction", 26_889_150_464)


def test_weights_unknown_is_said(tmp_path):
    shutil.copy(CORPUS / "llama-3.1-8b.json", tmp_path / "config.json")
    result = plan(tmp_path, context=4096, gpu_memory=GIB80)
    assert result.weights.total_bytes is None
    c = vllm(result).capacity
    assert c.sequences is None and any("no safetensors" in u for u in c.unknown)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "0"], "--tp = 0; it must be 1..2,147,483,647"),
        (["--gpu-memory", "80"], "give a number and a unit"),
        (["--gpu-memory", "80GiB", "--memory-fraction", "1.5"], "at most 1"),
    ],
)
def test_bad_options(llama, args, message):
    result = runner.invoke(app, ["plan", str(llama), *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_json_carries_the_schema_version_and_capacity(llama):
    result = runner.invoke(
        app, ["plan", str(llama), "--tp", "2", "--gpu-memory", "80GiB", "-c", "32768", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema_version"] == 4 and data["tp"] == 2
    assert data["request"]["tp"] == 2  # issue 27: make_request never filled it (it said 1)
    engine = next(e for e in data["engines"] if e["engine"] == "vllm")
    assert engine["capacity"]["kv_tokens"] == 1_083_328
    assert engine["gpu"]["weights_bytes"] == 8_030_261_248


CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"


@pytest.mark.parametrize(
    ("tp", "weights", "kv_per_token", "blocks", "tokens", "sequences"),
    [
        # Devstral-Small-2507 (committed index: total_size 47,144,806,400 B, bf16):
        # tp 1: 40 layers x 8 x 256 x 2 = 163,840 B/token; budget 79,027,398,247 -
        # 47,144,806,400 = 31,882,591,847; blocks floor(. / 2,621,440) = 12,162;
        # sequences floor(. / (2,048 x 2,621,440)) = 5
        (1, 47_144_806_400, 163_840, 12_162, 194_592, 5),
        # tp 2: 23,572,403,200 B weights; 4 KV heads -> 81,920 B/token; budget
        # 55,454,995,047; blocks floor(. / 1,310,720) = 42,308; sequences 20
        (2, 23_572_403_200, 81_920, 42_308, 676_928, 20),
    ],
)
def test_dense_committed_index(tp, weights, kv_per_token, blocks, tokens, sequences):
    result = plan(CHECKPOINTS / "devstral-small-2507", context=32768, tp=tp, gpu_memory=GIB80)
    g, c = vllm(result).gpu, vllm(result).capacity
    assert (g.weights_bytes, g.kv_bytes_per_token) == (weights, kv_per_token)
    assert (c.blocks, c.kv_tokens, c.sequences) == (blocks, tokens, sequences)


def test_moe_committed_index_at_tp8():
    # WizardLM-2-8x22B (committed index: 281,241,268,224 B, every expert of 56 layers stored)
    # weights ceil(/ 8) = 35,155,158,528; KV 8 heads / 8 = 1: 56 x 1 x (128 + 128) x 2 =
    # 28,672 B/token (head_dim = 6,144 / 48 = 128); budget 79,027,398,247 - 35,155,158,528
    # = 43,872,239,719; blocks floor(. / 458,752) = 95,633 -> 1,530,128 tokens;
    # sequences floor(. / (2,048 x 458,752)) = 46
    result = plan(CHECKPOINTS / "wizardlm-2-8x22b", context=32768, tp=8, gpu_memory=GIB80)
    g, c = vllm(result).gpu, vllm(result).capacity
    assert result.weights.total_bytes == 281_241_268_224
    assert (g.weights_bytes, g.kv_heads_per_gpu, g.kv_bytes_per_token) == (
        35_155_158_528,
        1,
        28_672,
    )
    assert (c.budget_bytes, c.blocks, c.kv_tokens, c.sequences) == (
        43_872_239_719,
        95_633,
        1_530_128,
        46,
    )


@pytest.mark.parametrize(
    ("dims", "expected"),
    [
        (("mamba1.intermediate_size",), ""),
        # the engine would split mamba1 along another dimension than apron's reading
        (("mamba1.conv_dim",), "apron's reading divides intermediate_size"),
        # only another calculator's split is extracted
        (("mamba2.conv_dim",), "not among its extracted ssm_tp_splits"),
        ((), "not among its extracted ssm_tp_splits"),
    ],
)
def test_state_split_must_match_the_engine(dims, expected):
    from apron.mechanisms.per_gpu import _state_split_mismatch
    from apron.serving_rules import ServingRules

    rules = ServingRules(
        engine="x",
        block_tokens=16,
        block_tokens_source="",
        memory_fraction=0.9,
        memory_fraction_source="",
        kv_heads_split="split",
        mla_latent_replicated=True,
        tp_must_divide=(),
        ssm_split_dims=dims,
        hybrid_page_rule=None,
        citations=(),
        unknown=(),
    )
    found = _state_split_mismatch(rules, "mamba1")
    assert (found == "") if not expected else (expected in found)


def test_hybrid_capacity_with_mamba_prefix_caching_aligns_the_block_to_the_chunk():
    # Jamba-v0.1 supports mamba prefix caching, so with prefix caching on vLLM sets
    # mamba_cache_mode 'all' and aligns the block to the mamba chunk: Jamba has no chunk_size,
    # so get_mamba_chunk_size gives 2,048; chunk = lcm(2,048, 16) and the block 2,048 x
    # ceil(ceil(311,296 B state page / 4,096 B per token per layer) / 2,048) = 2,048 tokens
    # (vLLM measured 2,048: conformance/vllm). A request takes one state page per block:
    # 8 groups (4 full, 28 mamba layers in groups of 4) x 32,768 / 2,048 = 128 blocks;
    # 20 GiB / (4 x 2,048 x 4,096 B) = 640 blocks -> 5 sequences (vLLM's own figures)
    from apron.deployment import Deployment

    result = plan(
        load_config(CORPUS / "jamba-v0.1.json"),
        context=32768,
        gpu_memory=20 * 2**30 + 1,
        memory_fraction=1.0,
        weights_bytes=1,
        deployment=Deployment(prefix_caching=True, async_scheduling=False),
    )
    c = vllm(result).capacity
    assert (c.block_tokens, c.blocks, c.blocks_per_sequence, c.sequences) == (2048, 640, 128, 5)
    assert any("mamba_cache_mode 'all'" in line for line in c.arithmetic)
    # vllm serve leaves prefix caching off for a hybrid: mamba_cache_mode 'none', one state page
    serve = vllm(
        plan(
            load_config(CORPUS / "jamba-v0.1.json"),
            context=32768,
            gpu_memory=GIB80,
            weights_bytes=1,
        )
    )
    assert serve.capacity.block_tokens != 2048
    assert any("mamba_cache_mode 'none'" in line for line in serve.capacity.arithmetic)


def test_hybrid_capacity_is_unknown_without_the_kernel_block_size():
    from apron.constraints import load_constraints
    from apron.engines.vllm.hybrid_page import hybrid_block
    from apron.mechanisms.per_gpu import HYBRID_PAGE_UNKNOWN, engine_capacity, gpu_share
    from apron.mechanisms.select import Selection
    from apron.planning.engine_registry import ENGINE_RULES
    from apron.serving_rules import serving_rules

    model = load_config(CORPUS / "jamba-v0.1.json")
    result = plan(model, context=32768)
    rules = serving_rules(load_constraints().get("vllm"), "vllm")
    rules = rules._replace(
        hybrid_page_rule=rules.hybrid_page_rule._replace(kernel_min_block=None),
        hybrid_page_rule_all=rules.hybrid_page_rule_all._replace(kernel_min_block=None),
    )
    share = gpu_share(
        model,
        result.request,
        1,
        rules,
        Selection(None, ""),
        result.kv_heads,
        result.prediction,
        0,
        engine=ENGINE_RULES["vllm"],
    )
    for mode in (("align", "prefix caching"), ("all", "prefix caching")):
        block, why = hybrid_block(model, share, rules, [], mode)
        assert block is None and "kernel block sizes" in why
    # the shared block fit applies no engine's page rule: unknown, not a guess
    shared = engine_capacity(model, "hybrid_ssm", share, rules, GIB80, None, 32768, "")
    assert shared.sequences is None and HYBRID_PAGE_UNKNOWN in shared.unknown


def test_hybrid_committed_index_at_tp2():
    # Qwen3.5-18B-REAP-A3B (committed index: 37,087,995,136 B): 10 full-attention layers,
    # 30 gated-delta-net layers. tp 2: weights 18,543,997,568 B; 2 KV heads / 2 = 1:
    # 10 x 1 x (256 + 256) x 2 B = 10,240 B/token (1,024 B per layer).
    # GDN per GPU: conv (4 - 1) x 8,192 / 2 x 2 B (float16) = 24,576; ssm 32 / 2 x 128 x 128
    # x 4 B (mamba_ssm_dtype float32) = 1,048,576 -> 1,073,152 B per layer.
    # vLLM align_ceil, kernel block 16: block = 16 x ceil(1,073,152 / (16 x 1,024)) = 1,056;
    # page 1,056 x 1,024 = 1,081,344 B.
    # budget 79,027,398,247 - 18,543,997,568 = 60,483,400,679; block bytes 10,813,440;
    # blocks 5,593; per sequence ceil(32,768 / 1,056) = 32 blocks + state = 378,470,400 B
    # The class does not support mamba prefix caching, so vLLM's default prefix caching sets
    # mamba_cache_mode 'align': 2 state pages per GDN layer per sequence
    # (MambaSpec.max_memory_usage_bytes): state 2 x 30 x 1,081,344 = 64,880,640 B;
    # per sequence 32 blocks + 6 state pages (vLLM's 10-layer groups, 1 attention + 3 GDN,
    # 2 pages each) = 38 x 10,813,440 = 410,910,720 B -> floor(60,483,400,679 / 410,910,720)
    # = 147 sequences (measured by vLLM itself for Qwen3.5 at tp 1: conformance/vllm)
    result = plan(CHECKPOINTS / "qwen3.5-18b-reap-a3b", context=32768, tp=2, gpu_memory=GIB80)
    g, c = vllm(result).gpu, vllm(result).capacity
    assert (g.weights_bytes, g.kv_bytes_per_token) == (18_543_997_568, 10_240)
    assert g.state_bytes_per_sequence == 30 * 1_073_152
    # KV tokens: vLLM's "GPU KV cache size", max concurrency x max_model_len =
    # int(5,593 / 35 x 32,768) = 5,236,326 (state pages are not tokens)
    assert (c.block_tokens, c.blocks, c.kv_tokens) == (1_056, 5_593, 5_236_326)
    assert (c.sequence_bytes, c.sequences, c.limit) == (378_470_400, 159, "kv")


def test_a_tp_the_mamba2_mixer_refuses_is_refused():
    # Zamba2-7B: mamba_ngroups 2; vLLM's MambaMixer2 asserts n_groups % tp == 0 or
    # n_groups == 1 (mamba_mixer2.py), so tp 4 and 8 do not start (vLLM measured the refusal at
    # tp 8: conformance/vllm); tp 2 splits
    assert vllm(plan(CORPUS / "zamba2-7b.json", context=4096, tp=2)).gpu.status == "split"
    with pytest.raises(ApronInputError, match=r"n_groups 2 at tp 8; tp sizes every check accepts"):
        plan(CORPUS / "zamba2-7b.json", context=4096, tp=8)
