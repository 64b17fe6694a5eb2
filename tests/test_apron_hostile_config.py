"""Issue 26: configs the engine would refuse, numbers out of range, deep JSON, non-regular files
and hostile safetensors headers are exit 2 with one message, never exit 0 or 70 or a hang."""

from __future__ import annotations

import json
import os
import re
import struct
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from apron.command_line.cli import app

SAMPLE = Path(__file__).resolve().parent.parent / "apron" / "samples" / "llama-3.1-8b.json"
runner = CliRunner()


def base() -> dict:
    return json.loads(SAMPLE.read_text())


def plan_dir(tmp_path: Path, text: str, *args: str):
    (tmp_path / "config.json").write_text(text)
    return runner.invoke(app, ["plan", str(tmp_path), *args])


def refused(result, *words: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "error:" in result.output
    for word in words:
        assert word in result.output.replace("\n", " "), result.output


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ({"head_dim": -128}, ("head_dim = -128", "must be positive")),
        ({"num_hidden_layers": -5}, ("num_hidden_layers = -5",)),
        ({"num_hidden_layers": 100_000_000}, ("at most 100,000",)),
        ({"num_key_value_heads": 7}, ("num_heads % num_kv_heads == 0",)),
        ({"num_key_value_heads": 64}, ("num_heads % num_kv_heads == 0",)),
        ({"max_position_embeddings": -5, "rope_scaling": None}, ("max_position_embeddings = -5",)),
        ({"rope_scaling": {"rope_type": "yarn", "factor": -4.0}}, ("positive, finite",)),
        ({"rope_scaling": {"rope_type": "yarn", "factor": 1e308}}, ("contexts up to",)),
    ],
)
def test_values_the_engine_refuses_exit_2(tmp_path, edit, words):
    refused(plan_dir(tmp_path, json.dumps({**base(), **edit})), *words)


@pytest.mark.parametrize("factor", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_non_finite_rope_factor_exits_2(tmp_path, factor):
    config = json.dumps({**base(), "rope_scaling": {"rope_type": "yarn", "factor": 0}})
    refused(plan_dir(tmp_path, config.replace('"factor": 0', f'"factor": {factor}')), "factor")


@pytest.mark.parametrize("digits", [30, 4001, 5000])
def test_huge_integers_exit_2(tmp_path, digits):
    config = json.dumps({**base(), "num_attention_heads": 0}).replace(
        '"num_attention_heads": 0', '"num_attention_heads": ' + "9" * digits
    )
    refused(plan_dir(tmp_path, config), "out of range", "2**63-1")


@pytest.mark.parametrize("command", ["plan", "plot"])
def test_deep_nesting_exits_2_in_plan_and_plot(tmp_path, command):
    (tmp_path / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    result = runner.invoke(app, [command, str(tmp_path / "config.json")])
    refused(result, "nests deeper than 64 levels")


def test_a_fifo_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    refused(runner.invoke(app, ["plan", str(fifo)]), "not a regular file")


def test_a_symlink_to_dev_zero_is_refused(tmp_path):
    (tmp_path / "config.json").symlink_to("/dev/zero")
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "not a regular file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 directory")
def test_an_unreadable_model_dir_exits_2(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(base()))
    model.chmod(0)
    try:
        refused(runner.invoke(app, ["plan", str(model)]), "cannot read")
    finally:
        model.chmod(0o700)


def _safetensors(path: Path, header: bytes) -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header)


def test_a_shape_of_ten_to_the_400_exits_2(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(base()))
    header = b'{"w": {"dtype": "BF16", "shape": [1' + b"0" * 400 + b'], "data_offsets": [0, 2]}}'
    _safetensors(tmp_path / "model.safetensors", header)
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "out of range")


def test_a_shape_product_past_u64_exits_2(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(base()))
    dims = ", ".join(["4294967296"] * 400)
    header = f'{{"w": {{"dtype": "BF16", "shape": [{dims}], "data_offsets": [0, 2]}}}}'
    _safetensors(tmp_path / "model.safetensors", header.encode())
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "elements")


def test_a_header_of_4000_digit_numbers_is_refused_quickly(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(base()))
    dims = ", ".join(["7" * 4000] * 400)
    header = f'{{"w": {{"dtype": "BF16", "shape": [{dims}], "data_offsets": [0, 2]}}}}'
    _safetensors(tmp_path / "model.safetensors", header.encode())
    start = time.monotonic()
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "out of range")
    assert time.monotonic() - start < 5


FIGURE_NEGATIVE = re.compile(r"-\d[\d.]*\s*(B|KiB|MiB|GiB|TiB|tokens|seqs)\b")
NUMBERS = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)
FIELDS = ("num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size")
FIELDS += ("num_hidden_layers", "max_position_embeddings")


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=st.dictionaries(st.sampled_from(FIELDS), NUMBERS, max_size=4), factor=NUMBERS)
def test_fuzzed_configs_exit_0_or_2_and_print_no_negative_figure(tmp_path, edits, factor):
    config = {**base(), **edits, "rope_scaling": {"rope_type": "yarn", "factor": factor}}
    result = plan_dir(tmp_path, json.dumps(config), "--gpu-memory", "80GiB")
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    if result.exit_code == 0:  # a figure is a number with a unit; config echoes may be negative
        assert not FIGURE_NEGATIVE.search(result.output.replace(",", "")), result.output


# -- item 6: an index with an empty weight_map -------------------------------------------------

LLAMA_31_8B_TOTAL = 16_060_522_496  # meta-llama/Llama-3.1-8B index metadata.total_size


def test_an_empty_weight_map_uses_the_index_total(tmp_path):
    # vLLM at the pin, as apron applies it: gpu_memory_utilization 0.92, block_size 16
    # requested = ceil(85,899,345,920 x 0.92) = 79,027,398,247 B
    # budget = 79,027,398,247 - 16,060,522,496 = 62,966,875,751 B
    # KV/token = 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B; block = 2,097,152 B
    # blocks = floor(62,966,875,751 / 2,097,152) = 30,024 -> 30,024 x 16 = 480,384 tokens
    # (with 0 B weights it would be floor(79,027,398,247 / 2,097,152) = 37,683 -> 602,928)
    (tmp_path / "config.json").write_text(json.dumps(base()))
    index = {"metadata": {"total_size": LLAMA_31_8B_TOTAL}, "weight_map": {}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    result = runner.invoke(app, ["plan", str(tmp_path), "--gpu-memory", "80GiB", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["weights"]["total_bytes"] == LLAMA_31_8B_TOTAL
    assert "metadata.total_size" in data["weights"]["source"]
    vllm = next(e for e in data["engines"] if e["engine"] == "vllm")
    assert vllm["capacity"]["kv_tokens"] == 480_384
    text = runner.invoke(app, ["plan", str(tmp_path)]).output
    assert "0 B from" not in text and "0 .safetensors files" not in text


def test_an_empty_weight_map_without_a_total_is_unknown(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(base()))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    result = runner.invoke(app, ["plan", str(tmp_path), "--gpu-memory", "80GiB", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["weights"]["total_bytes"] is None
    assert "empty weight_map" in data["weights"]["unknown"]
    assert "no metadata.total_size" in data["weights"]["unknown"]
    vllm = next(e for e in data["engines"] if e["engine"] == "vllm")
    assert vllm["capacity"]["kv_tokens"] is None


# -- item 7: a config that names no model --------------------------------------------------------

GEMMA_3N = Path(__file__).resolve().parent / "corpus" / "gemma-3n-e4b.json"


def test_a_bare_text_config_exits_2_naming_what_is_missing(tmp_path):
    # the reproduction: Gemma-3n-E4B's text_config alone, without the top level
    text_config = json.loads(GEMMA_3N.read_text())["text_config"]
    text_config.pop("model_type")
    result = plan_dir(tmp_path, json.dumps({"text_config": text_config}))
    refused(result, "neither model_type nor architectures", "holds only a text_config")


def test_no_model_type_and_no_architectures_exits_2(tmp_path):
    config = {k: v for k, v in base().items() if k not in ("model_type", "architectures")}
    refused(plan_dir(tmp_path, json.dumps(config)), "neither model_type nor architectures")


@pytest.mark.parametrize("keep", ["model_type", "architectures"])
def test_either_one_names_the_model(tmp_path, keep):
    drop = {"model_type", "architectures"} - {keep}
    config = {k: v for k, v in base().items() if k not in drop}
    result = plan_dir(tmp_path, json.dumps(config))
    assert result.exit_code == 0, result.output


def test_the_whole_gemma_3n_config_plans_at_its_own_context():
    # max_position_embeddings 32,768 in the text_config: the default context is 32,768 (the bare
    # text_config gave 1,048,576 in the issue); registered in vLLM under its architecture
    result = runner.invoke(app, ["plan", str(GEMMA_3N), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["architecture"], data["model_type"]) == (
        "Gemma3nForConditionalGeneration",
        "gemma3n",
    )
    assert data["request"]["context"] == 32_768
    assert data["prediction"]["kv_bytes_per_token"] == 40_960


# -- adapter_config.json and shards are read with the same limits ------------------------------


def test_a_deep_adapter_config_exits_2_as_an_adapter(tmp_path):
    # no config.json, an adapter_config.json nested 100,000 deep: json.loads raised
    # RecursionError (exit 70); now the limits apply and the adapter message stands
    (tmp_path / "adapter_config.json").write_text("[" * 100_000 + "]" * 100_000)
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "LoRA/PEFT adapter")


def test_an_oversized_adapter_config_is_not_read(tmp_path):
    adapter = tmp_path / "adapter_config.json"
    with adapter.open("wb") as handle:  # sparse: 2 GB that are never written
        handle.truncate(2_000_000_000)
    start = time.monotonic()
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "LoRA/PEFT adapter")
    assert time.monotonic() - start < 5


def test_the_adapter_hint_still_names_the_base_model(tmp_path):
    adapter = {"peft_type": "LORA", "base_model_name_or_path": "meta-llama/Llama-3.1-8B"}
    (tmp_path / "adapter_config.json").write_text(json.dumps(adapter))
    refused(runner.invoke(app, ["plan", str(tmp_path)]), "'meta-llama/Llama-3.1-8B'")


def test_a_fifo_shard_is_refused_without_blocking(tmp_path):
    import threading

    from apron.errors import ApronInputError
    from apron.weights import read_header

    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_header(fifo)
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 - the outcome is asserted below
            outcome.append(err)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():  # blocked in open(): a writer end releases it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail("read_header blocked opening a FIFO")
    assert isinstance(outcome[0], ApronInputError)
    assert "not a regular file" in str(outcome[0])
