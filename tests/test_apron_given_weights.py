"""Capacity without a checkpoint: --weights-bytes, or --params with --weights-dtype."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from apron import ApronInputError, load_sample, plan
from apron.command_line.cli import app

runner = CliRunner()
# 80 GiB x 0.92 (vLLM's default fraction at the pin), rounded up as vLLM's request_memory does
BUDGET = 79_027_398_247
LLAMA_BLOCK = 16 * 131_072  # 16 tokens x 131,072 B/token (Llama 3.1 8B, bf16)


def vllm_capacity(*args: str) -> dict:
    result = runner.invoke(
        app, ["plan", "--sample", "llama-3.1-8b", "--context", "8192", "--gpu-memory", "80GiB",
              *args, "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data, next(e for e in data["engines"] if e["engine"] == "vllm")["capacity"]


def test_weights_bytes_gives_a_capacity():
    data, capacity = vllm_capacity("--weights-bytes", "16060522496")
    assert (data["weights"]["total_bytes"], data["weights"]["source"]) == (
        16_060_522_496,
        "--weights-bytes",
    )
    assert capacity["budget_bytes"] == BUDGET - 16_060_522_496 == 62_966_875_751
    # floor(62,966,875,751 / 2,097,152) = 30,024 blocks = 480,384 tokens; 8,192 tokens = 512
    # blocks, so 58 sequences
    assert (capacity["kv_tokens"], capacity["sequences"]) == (480_384, 58)


def test_weights_bytes_with_a_unit():
    data, capacity = vllm_capacity("--weights-bytes", "15GiB")
    assert data["weights"]["total_bytes"] == 16_106_127_360
    assert capacity["budget_bytes"] == BUDGET - 16_106_127_360


@pytest.mark.parametrize(
    ("params", "dtype", "total"),
    [
        ("8030261248", "bf16", 16_060_522_496),
        ("8.03B", "fp8", 8_030_000_000),
        ("70b", "int4", 35_000_000_000),
        ("7", "int4", 4),  # ceil(7 x 4 / 8)
    ],
)
def test_params_times_the_dtype(params, dtype, total):
    data, capacity = vllm_capacity("--params", params, "--weights-dtype", dtype)
    assert data["weights"]["total_bytes"] == total
    assert capacity["budget_bytes"] == BUDGET - total


def test_weights_per_gpu_at_tp():
    data, _ = vllm_capacity("--weights-bytes", "16060522496", "--tp", "2")
    vllm = next(e for e in data["engines"] if e["engine"] == "vllm")
    assert vllm["gpu"]["weights_bytes"] == 8_030_261_248


def bad(*args: str) -> str:
    result = runner.invoke(app, ["plan", "--sample", "llama-3.1-8b", *args])
    assert result.exit_code == 2, result.output
    return " ".join(result.stderr.split())


def bad_config(config: dict, *args: str) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/config.json"
        with open(path, "w") as handle:
            json.dump(config, handle)
        result = runner.invoke(app, ["plan", path, *args])
    assert result.exit_code == 2, result.output
    return " ".join(result.stderr.split())


def test_bad_weights_input():
    assert "give --weights-bytes or --params, not both" in bad(
        "--weights-bytes", "10", "--params", "8B", "--weights-dtype", "bf16"
    )
    # the sample's torch_dtype (bfloat16) stands in for --weights-dtype; a config without one
    # still needs it
    assert "--params needs --weights-dtype (got none" in bad_config(
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "--params", "8B"
    )
    assert "--params needs --weights-dtype (got 'q4'" in bad(
        "--params", "8B", "--weights-dtype", "q4"
    )
    assert "--weights-dtype goes with --params" in bad("--weights-dtype", "bf16")
    assert "--weights-bytes 'lots': give a number of bytes" in bad("--weights-bytes", "lots")
    assert "--params '8.5': give a whole number of parameters" in bad(
        "--params", "8.5", "--weights-dtype", "bf16"
    )
    assert "--weights-bytes = 0; it must be 1.." in bad("--weights-bytes", "0")
    assert "give --weights DIR or --weights-bytes / --params, not both" in bad(
        "--weights", ".", "--weights-bytes", "10"
    )


def test_library_takes_the_figures():
    model = load_sample("llama-3.1-8b")
    result = plan(model, context=8192, params=1000, weights_dtype="fp32")
    assert (result.weights.total_bytes, result.weights.unknown) == (4000, "")
    with pytest.raises(ApronInputError, match="--params = -1; it must be 1.."):
        plan(model, params=-1, weights_dtype="bf16")
