"""GPUs by name (#33 item 6): --gpu gives the memory nvidia-smi reports for the part, from one
table that cites its source; an unknown or ambiguous name is one message, exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from apron.command_line.cli import app
from apron.gpus import GPUS, gpu

runner = CliRunner()


@pytest.mark.parametrize(
    ("name", "mib"),
    [
        ("H100", 81_559),
        ("h100-sxm", 81_559),
        ("A100-80GB", 81_920),
        ("a100 40gb", 40_960),
        ("H200", 143_771),
        ("L40S", 46_068),
        ("L4", 23_034),
        ("T4", 15_360),
        ("RTX 4090", 24_564),
        ("NVIDIA GeForce RTX 3090", 24_576),
        ("5090", 32_607),
    ],
)
def test_a_part_by_name_gives_its_nvml_memory(name, mib):
    assert gpu(name).memory_bytes == mib * 2**20


def test_every_row_cites_a_source():
    assert all(part.source.startswith(("https://", "nvidia-smi in https://")) for part in GPUS)


def test_an_ambiguous_or_unknown_name_is_one_message_naming_what_works():
    result = runner.invoke(app, ["plan", "--sample", "llama-3.1-8b", "--gpu", "A100"])
    assert result.exit_code == 2
    assert "names more than one part: A100-80GB or A100-40GB" in result.output
    result = runner.invoke(app, ["plan", "--sample", "llama-3.1-8b", "--gpu", "B200"])
    assert result.exit_code == 2
    assert "not in apron's GPU table" in " ".join(result.output.split())


def test_gpu_and_gpu_memory_are_one_or_the_other():
    result = runner.invoke(
        app, ["plan", "--sample", "llama-3.1-8b", "--gpu", "H100", "--gpu-memory", "80GiB"]
    )
    assert result.exit_code == 2 and "not both" in result.output


def test_the_gpu_name_reaches_vllms_batch_default():
    # vLLM's get_batch_defaults: >= 70 GiB and "a100" not in the device name -> 8,192 batched
    # tokens for vllm serve, else 2,048; the name decides it for an A100-80GB
    args = ["plan", "--sample", "gemma-3-27b", "-c", "32768", "--params", "27B"]
    args += ["--weights-dtype", "bf16", "--json"]
    h100 = json.loads(runner.invoke(app, [*args, "--gpu", "H100"]).stdout)
    a100 = json.loads(runner.invoke(app, [*args, "--gpu", "A100-80GB"]).stdout)

    def windowed_blocks(data):
        capacity = data["engines"][0]["capacity"]
        return capacity["blocks_per_sequence"] - 2_048  # the global group's 32,768 / 16

    # 6 windowed groups x (cdiv(min(1,023 + 2 x batched, 32,768), 16) + 1)
    assert windowed_blocks(h100) == 6 * (-(-(1_023 + 16_384) // 16) + 1)
    assert windowed_blocks(a100) == 6 * (-(-(1_023 + 4_096) // 16) + 1)
    assert h100["gpu_memory_bytes"] == 81_559 * 2**20
