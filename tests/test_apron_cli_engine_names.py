"""`apron plan` takes vLLM's and SGLang's own flag names and vLLM's KV dtype spellings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import ApronInputError, plan
from apron.command_line.cli import app

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def plan_json(*args: str) -> dict:
    result = runner.invoke(app, ["plan", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def llama_dir(tmp_path):
    (tmp_path / "config.json").write_text((REPO / "apron/samples/llama-3.1-8b.json").read_text())
    return tmp_path


def test_vllm_flag_names(llama_dir):
    data = plan_json(
        str(llama_dir), "--max-model-len", "8192", "--kv-cache-dtype", "fp8",
        "--tensor-parallel-size", "2", "--max-num-seqs", "4",
    )  # fmt: skip
    assert data["request"]["context"] == 8192
    assert data["request"]["context_source"] == "--context"
    assert (data["request"]["kv_dtype"], data["request"]["kv_dtype_bytes"]) == ("fp8", 1)
    assert data["request"]["batch"] == 4
    assert data["tp"] == 2
    # 32 layers x 8 KV heads x (128 + 128) x 1 B = 65,536 B/token; 4 KV heads per GPU at tp 2
    assert data["prediction"]["kv_bytes_per_token"] == 65_536
    vllm = next(e for e in data["engines"] if e["engine"] == "vllm")
    assert vllm["gpu"]["kv_bytes_per_token"] == 32_768
    assert vllm["gpu"]["kv_bytes_at_context"] == 32_768 * 8192


def test_short_tp_flag_and_sglang_names():
    data = plan_json(
        "--sample", "llama-3.1-8b", "-tp", "4", "--context-length", "1000",
        "--gpu-memory", "80GiB", "--mem-fraction-static", "0.5",
    )  # fmt: skip
    assert (data["tp"], data["request"]["context"]) == (4, 1000)
    vllm = next(e for e in data["engines"] if e["engine"] == "vllm")
    assert vllm["capacity"]["memory_fraction"] == 0.5
    assert vllm["capacity"]["memory_fraction_source"] == "--memory-fraction"


@pytest.mark.parametrize(
    ("given", "dtype", "per_token"),
    [
        ("bfloat16", "bf16", 131_072),
        ("fp8", "fp8", 65_536),
        ("fp8_e4m3", "fp8", 65_536),
        ("fp8_e5m2", "fp8", 65_536),
    ],
)
def test_vllm_kv_dtype_names(given, dtype, per_token):
    data = plan_json("--sample", "llama-3.1-8b", "--context", "10", "--kv-cache-dtype", given)
    assert (data["request"]["kv_dtype"], data["prediction"]["kv_bytes_per_token"]) == (
        dtype,
        per_token,
    )


def test_vllm_auto_is_apron_auto():
    data = plan_json("--sample", "llama-3.1-8b", "--context", "10", "--kv-cache-dtype", "auto")
    # llama-3.1-8b's torch_dtype is bfloat16: every engine's auto takes the model dtype
    assert data["request"]["kv_dtype"] == "bf16"
    assert data["prediction"]["kv_bytes_per_token"] == 131_072


def test_library_takes_vllm_kv_dtype_names():
    result = plan({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "hidden_size": 256}, context=4,
                  kv_dtype="fp8_e4m3")  # fmt: skip
    # 2 layers x 2 KV heads x (64 + 64) x 1 B = 512 B/token
    assert result.prediction.kv_bytes_per_token == 512


def test_unknown_vllm_style_dtype_names_the_spellings():
    result = runner.invoke(app, ["plan", "--sample", "llama-3.1-8b", "--kv-cache-dtype", "int4"])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "unknown KV dtype 'int4'" in message
    assert "bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc" in message
    with pytest.raises(ApronInputError, match="unknown KV dtype 'fp4'"):
        plan({"model_type": "llama"}, kv_dtype="fp4")


def test_an_option_and_its_engine_name_must_agree():
    result = runner.invoke(app, ["plan", "--sample", "llama-3.1-8b", "--tp", "2", "-tp", "4"])
    assert result.exit_code == 2
    assert "--tp 2 and --tensor-parallel-size 4 disagree; give one" in result.stderr
    same = plan_json("--sample", "llama-3.1-8b", "--context", "64", "--max-model-len", "64")
    assert same["request"]["context"] == 64


def test_plot_takes_the_engine_names_too(tmp_path):
    args = ["plot", "--sample", "llama-3.1-8b", "--max-model-len", "4096"]
    args += ["--kv-cache-dtype", "fp8_e4m3", "-tp", "2", "--out", str(tmp_path / "kv.jpg")]
    result = runner.invoke(app, args)  # parsed; then the format is refused (no matplotlib needed)
    assert result.exit_code == 2
    assert "give a .png or .svg" in " ".join(result.stderr.split())
    clash = runner.invoke(
        app, ["plot", "--sample", "llama-3.1-8b", "-c", "10", "--max-model-len", "20"]
    )
    assert clash.exit_code == 2
    assert "--context 10 and --max-model-len 20 disagree; give one" in clash.stderr
