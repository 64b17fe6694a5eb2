"""The engines' own flags and values (#33 items 4, 5, 8): each flag is tested for what it
changes. vLLM: --kv-cache-dtype with every CacheDType value apron sizes, --max-model-len 32k /
32K / auto (human_readable_int_or_auto), --block-size, --kv-cache-memory-bytes,
--pipeline-parallel-size. llama.cpp: -c -np -ctk -ctv -fa -kvu --swa-full -b -ub on `apron gguf`
and `apron plan`. A GGUF file on `apron plan`; `apron gguf --json`; the first run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron.command_line.cli import app
from apron.config import load_sample
from apron.constraints import load_constraints
from apron.deployment import Deployment, LlamaCppFlags
from apron.engine_flags import kv_cache_dtype, max_model_len
from apron.errors import ApronInputError
from apron.planning.planner import plan
from tests.test_apron_llamacpp_gguf import LLAMA_31_8B, write_header

runner = CliRunner()
VLLM = load_constraints().get("vllm")
GIB = 2**30
CORPUS = Path(__file__).resolve().parent / "corpus"


def run(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def engine(data: dict, name: str) -> dict:
    return next(e for e in data["engines"] if e["engine"] == name)


def refused(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


# ------------------------------------------------------------------ vLLM


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("32768", 32_768), ("32k", 32_000), ("32K", 32_768), ("25.6k", 25_600), ("1m", 1_000_000)],
)
def test_max_model_len_reads_like_vllms_human_readable_int(text, tokens):
    assert max_model_len(text, "--max-model-len", VLLM) == tokens


def test_max_model_len_auto_and_its_refusals():
    assert max_model_len("auto", "--max-model-len", VLLM) is None
    assert max_model_len("-1", "--max-model-len", VLLM) is None
    with pytest.raises(ApronInputError, match="decimals are not allowed"):
        max_model_len("1.5K", "--max-model-len", VLLM)
    with pytest.raises(ApronInputError, match="32k is 32,000"):
        max_model_len("lots", "--max-model-len", VLLM)


def test_max_model_len_32k_is_the_context_on_the_command_line():
    data = run("plan", "--sample", "llama-3.1-8b", "--max-model-len", "32k")
    assert data["request"]["context"] == 32_000


def test_max_model_len_auto_fits_vllms_length_to_memory():
    data = run("plan", "--sample", "llama-3.1-8b", "--max-model-len", "auto", "--gpu", "RTX 4090")
    verdict = engine(data, "vllm")["capacity"]["verdict"]
    # 131,072 does not fit: budget ceil(25,757,220,864 x 0.92) - 16,060,522,496 = 7,636,120,700 B
    # holds 3,641 blocks of 2,097,152 B; vLLM's binary search keeps the largest length whose
    # cdiv(length, 16) blocks fit: 3,641 x 16 = 58,256
    assert verdict["context"] == 58_256 and verdict["fits"] is True


@pytest.mark.parametrize(
    ("value", "dtype"),
    [("auto", "auto"), ("bfloat16", "bf16"), ("float16", "fp16"), ("fp8", "fp8"),
     ("fp8_e4m3", "fp8"), ("fp8_e5m2", "fp8"), ("fp8_inc", "fp8")],
)  # fmt: skip
def test_every_cache_dtype_vllm_sizes_is_accepted(value, dtype):
    assert kv_cache_dtype(value, VLLM) == dtype


def test_float16_and_fp8_inc_change_the_bytes():
    f16 = run("plan", "--sample", "llama-3.1-8b", "-c", "8192", "--kv-cache-dtype", "float16")
    inc = run("plan", "--sample", "llama-3.1-8b", "-c", "8192", "--kv-cache-dtype", "fp8_inc")
    assert f16["prediction"]["kv_bytes_per_token"] == 32 * 8 * 256 * 2
    assert inc["prediction"]["kv_bytes_per_token"] == 32 * 8 * 256 * 1


def test_a_cache_dtype_vllm_accepts_but_apron_does_not_size_is_refused_saying_so():
    message = refused("plan", "--sample", "llama-3.1-8b", "--kv-cache-dtype", "turboquant_k8v4")
    assert "vLLM accepts it (CacheDType), but apron does not model its cache" in message
    message = refused("plan", "--sample", "llama-3.1-8b", "--kv-cache-dtype", "fp7")
    assert "unknown KV dtype 'fp7': not one of vLLM's CacheDType values" in message


def test_block_size_changes_vllms_blocks():
    base = ["plan", "--sample", "llama-3.1-8b", "-c", "32768", "--gpu", "H100"]
    c16 = engine(run(*base), "vllm")["capacity"]
    c32 = engine(run(*base, "--block-size", "32"), "vllm")["capacity"]
    assert (c16["block_tokens"], c32["block_tokens"]) == (16, 32)
    assert c32["block_bytes"] == 2 * c16["block_bytes"]
    assert c32["blocks"] == c16["budget_bytes"] // c32["block_bytes"]
    assert c32["blocks_per_sequence"] == 32_768 // 32


def test_kv_cache_memory_bytes_is_vllms_kv_budget_itself():
    data = run(
        "plan", "--sample", "llama-3.1-8b", "-c", "32768", "--gpu", "H100",
        "--kv-cache-memory-bytes", "8G",
    )  # fmt: skip
    c = engine(data, "vllm")["capacity"]
    # 8G = 8 x 2**30 (vLLM's binary suffix); blocks of 32 x 16 x 4,096 B
    assert c["budget_bytes"] == 8 * GIB
    assert c["blocks"] == 8 * GIB // (32 * 16 * 4096) == 4_096
    assert c["sequences"] == 2


def test_pipeline_parallel_splits_the_layers_and_the_busiest_stage_decides():
    data = run("plan", "--sample", "llama-3.1-8b", "-c", "32768", "--gpu", "H100", "-pp", "2")
    c = engine(data, "vllm")["capacity"]
    # 32 layers, 16 per stage: a block takes 16 pages of 65,536 B; each stage holds half the
    # weights: ceil(85,520,809,984 x 0.92) - ceil(16,060,522,496 / 2)
    assert c["block_bytes"] == 16 * 65_536
    assert c["budget_bytes"] == 78_679_145_186 - 8_030_261_248
    assert c["blocks"] == c["budget_bytes"] // c["block_bytes"]
    assert data["pp"] == 2
    assert "pipeline parallel 2" in " ".join(engine(data, "sglang")["capacity"]["unknown"])


# ------------------------------------------------------------------ llama.cpp


@pytest.fixture
def gguf_file(tmp_path):
    return write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B)


def gguf(*args: str) -> dict:
    return run("gguf", *args)


def test_gguf_json_and_its_flags(gguf_file):
    data = gguf(str(gguf_file), "-c", "8192")
    # 32 layers x 8,192 cells x (1,024 + 1,024) x 2 B (f16)
    assert data["figures"]["kv_bytes"] == 32 * 8192 * 2048 * 2 == 1_073_741_824
    assert data["n_seq_max"] == 1 and data["schema_version"] == 1


def test_gguf_np_splits_n_ctx_and_kvu_shares_it(gguf_file):
    split = gguf(str(gguf_file), "-c", "8192", "-np", "4")
    unified = gguf(str(gguf_file), "-c", "8192", "-np", "4", "-kvu")
    # -np 4: 4 streams of 2,048 cells (GGML_PAD(8192 / 4, 256)); -kvu: one stream of 8,192
    assert split["figures"]["kv_cells"] == {"base": 2048}
    assert unified["figures"]["kv_cells"] == {"base": 8192}
    assert split["figures"]["kv_bytes"] == unified["figures"]["kv_bytes"] == 1_073_741_824


def test_gguf_cache_types_and_flash_attention(gguf_file):
    q8 = gguf(str(gguf_file), "-c", "8192", "-ctk", "q8_0", "-ctv", "q8_0")
    # q8_0: 34 bytes per 32 values
    assert q8["figures"]["kv_bytes"] == 32 * 8192 * 2 * (1024 // 32 * 34)
    message = refused("gguf", str(gguf_file), "-ctv", "q8_0", "-fa", "off")
    assert "V cache quantization requires flash_attn" in message
    assert "takes on, off or auto" in refused("gguf", str(gguf_file), "-fa", "maybe")


def test_b_is_llamas_logical_batch_not_sequences(gguf_file, tmp_path):
    swa = write_header(
        tmp_path / "gemma.gguf",
        "gemma3",
        {
            "block_count": 6,
            "embedding_length": 2560,
            "feed_forward_length": 10240,
            "attention.head_count": 8,
            "attention.head_count_kv": 4,
            "attention.key_length": 256,
            "attention.value_length": 256,
            "attention.sliding_window": 1024,
            "attention.layer_norm_rms_epsilon": 1e-6,  # llama.cpp's loader requires it
            "context_length": 131072,
        },
    )
    default = gguf(str(swa), "-c", "8192")
    ub = gguf(str(swa), "-c", "8192", "-ub", "2048")
    small_b = gguf(str(swa), "-c", "8192", "-b", "256", "-ub", "2048")
    full = gguf(str(swa), "-c", "8192", "--swa-full")
    # SWA cells GGML_PAD(min(8192, 1024 + n_ubatch), 256), n_ubatch = min(n_batch, n_ubatch):
    # 512 -> 1,536; 2,048 -> 3,072; -b 256 caps it: 1,280; --swa-full: the whole 8,192
    assert default["figures"]["kv_cells"]["swa"] == 1536
    assert ub["figures"]["kv_cells"]["swa"] == 3072
    assert small_b["figures"]["kv_cells"]["swa"] == 1280
    assert full["figures"]["kv_cells"]["swa"] == 8192
    assert default["n_seq_max"] == 1  # -b is not sequences


def test_plan_takes_a_gguf_file(gguf_file):
    result = runner.invoke(app, ["plan", str(gguf_file), "-c", "4096", "--batch", "2"])
    assert result.exit_code == 0, result.output
    # plan's meaning: 2 sequences of 4,096 = n_ctx 8,192 split across n_seq_max 2
    assert "KV cache: 1,073,741,824 B for 2 sequence(s)" in result.output


def test_plan_ctk_is_a_cache_type_not_c_tk():
    data = run("plan", "--sample", "llama-3.1-8b", "-c", "8192", "-ctk", "q8_0", "-ctv", "q8_0")
    view = engine(data, "llamacpp")
    assert view["kv_bytes_at_context"] == 32 * 8192 * 2 * (1024 // 32 * 34)
    assert data["request"]["context"] == 8192


def test_plan_llamacpp_flags_reach_its_column():
    result = plan(
        load_sample("gemma-3-27b"),
        context=8192,
        batch=4,
        deployment=Deployment(llamacpp=LlamaCppFlags(kv_unified=True)),
    )
    view = next(v for v in result.engines if v.engine == "llamacpp")
    assert view.llamacpp_context.kv_unified is True
    assert view.llamacpp_context.n_ctx_seq == 32768
    assert "-kvu" in view.llamacpp_context.words


def test_plan_without_context_gives_every_sequence_llamas_default_context():
    # no --context: llama.cpp's own default, n_ctx 0 = the context_length the converter writes
    # (131,072 for Llama 3.1). One sequence is -c 0; four sequences of it are -c 524288 -np 4.
    # Either way one sequence holds 131,072 tokens x 131,072 B (32 layers x 8 KV heads x 128
    # x 2 (K, V) x 2 B f16)
    views = [
        next(
            v for v in plan(load_sample("llama-3.1-8b"), batch=n).engines if v.engine == "llamacpp"
        )
        for n in (1, 4)
    ]
    one, four = views
    assert one.context == four.context == 131072
    assert (one.llamacpp_context.n_ctx, one.llamacpp_context.n_seq_max) == (131072, 1)
    assert "-c 0 -np 1" in one.llamacpp_context.words
    assert (four.llamacpp_context.n_ctx, four.llamacpp_context.n_seq_max) == (524288, 4)
    assert four.llamacpp_context.n_ctx_seq == 131072
    assert one.kv_bytes_at_context == four.kv_bytes_at_context == 131072 * 131072


# ------------------------------------------------------------------ the first run


def test_the_readmes_first_example_shows_capacity_and_a_verdict():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert ".venv/bin/apron plan --sample llama-3.1-8b --gpu H100" in readme
    data = run("plan", "--sample", "llama-3.1-8b", "--gpu", "H100")
    vllm = engine(data, "vllm")["capacity"]
    # the sample carries its checkpoint's weights: 16,060,522,496 B (index metadata.total_size)
    assert data["weights"]["total_bytes"] == 16_060_522_496
    assert vllm["verdict"]["fits"] is True and vllm["sequences"] == 3


def test_without_weights_the_message_says_how_to_give_them():
    result = runner.invoke(app, ["plan", "--sample", "deepseek-v3", "--gpu", "H100"])
    assert "give --params N or --weights-bytes N" in " ".join(result.output.split())


def test_params_takes_the_dtype_from_the_config():
    data = run("plan", "--sample", "llama-7b", "--params", "7B")
    assert data["weights"]["total_bytes"] == 14_000_000_000  # torch_dtype float16: 2 B each
    assert "the config's float16" in data["weights"]["source"]
