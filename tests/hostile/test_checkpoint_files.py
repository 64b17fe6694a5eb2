"""Issue 35, checkpoint files and the Hugging Face cache: every file is read through
apron.input_files (regular files only, capped before reading), an index's total_size is a byte
count, a long string from a file is cut in the message, JSON costs bounded time and memory; a
cache ref is capped and never followed out of snapshots/."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from apron.json_files import MAX_JSON_ITEMS
from tests.hostile.apron_run import answered, apron, apron_measured, refused

SAMPLES = Path(__file__).resolve().parents[2] / "apron" / "samples"
LLAMA = json.loads((SAMPLES / "llama-3.1-8b.json").read_text())


@pytest.fixture
def model(tmp_path) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    return tmp_path


def index(model: Path, text: str) -> None:
    (model / "model.safetensors.index.json").write_text(text)


def safetensors(path: Path, header: dict | bytes, data: bytes = b"") -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


SHARDS = '"weight_map": {"a": "model-00001-of-00002.safetensors"}'


@pytest.mark.parametrize(
    ("total", "words"),
    [
        ("1e308", "metadata.total_size is a float (1e+308), not an integer"),
        ("16060522496.0", "metadata.total_size is a float (16060522496.0)"),
        ("-1", "metadata.total_size = -1; it must be 0.."),
        ("true", "metadata.total_size is true"),
        ("0", "metadata.total_size (the weights figure) = 0; it must be 1.."),
        ("9" * 19, "out of range; apron reads integers up to 2**63-1"),
    ],
)
def test_index_total_size_is_a_byte_count(model, total, words):
    index(model, f'{{"metadata": {{"total_size": {total}}}, {SHARDS}}}')
    refused(apron("plan", model, "--gpu-memory", "80GiB"), words)


def test_a_zero_total_with_an_empty_weight_map_is_no_figure(model):
    index(model, '{"metadata": {"total_size": 0}, "weight_map": {}}')
    refused(apron("plan", model), "metadata.total_size (the weights figure) = 0")


def test_an_index_total_is_used_when_shards_are_missing(model):
    index(model, f'{{"metadata": {{"total_size": 16060522496}}, {SHARDS}}}')
    data = json.loads(answered(apron("plan", model, "--json")))
    assert data["weights"]["total_bytes"] == 16_060_522_496


@pytest.mark.parametrize("name", ["hf_quant_config.json", "model.safetensors.index.json"])
def test_a_fifo_in_place_of_a_metadata_file_is_refused_not_absent(model, name):
    os.mkfifo(model / name)
    refused(apron("plan", model, "--kv-dtype", "auto"), f"{name} is not a regular file (a FIFO)")


def test_a_dangling_symlink_for_the_quant_config_is_refused(model):
    (model / "hf_quant_config.json").symlink_to(model / "nowhere.json")
    refused(apron("plan", model, "--kv-dtype", "auto"), "hf_quant_config.json: No such file")


def test_a_fifo_shard_is_refused_not_skipped(model):
    os.mkfifo(model / "model.safetensors")
    refused(apron("plan", model), "model.safetensors is not a regular file (a FIFO)")


def test_a_5_mb_dtype_is_cut_in_the_message(model):
    dtype = "\x1b[31m" + "X" * 5_000_000
    safetensors(model / "model.safetensors", {"w": {"dtype": dtype, "shape": [1], "data_offsets": [0, 2]}}, b"\0\0")  # fmt: skip
    line = refused(apron("plan", model), "characters), not a safetensors dtype")
    assert len(line) < 2_000 and "\\x1b[31m" in line


def test_too_many_json_values_are_refused_before_parsing(model):
    (model / "config.json").write_text(json.dumps({**LLAMA, "x": [0] * (MAX_JSON_ITEMS + 1)}))
    refused(apron("plan", model), f"apron reads at most {MAX_JSON_ITEMS:,}")


@pytest.mark.parametrize(
    "filler",
    [
        "\\" * 7_900_000,  # 15.8 MB of escapes in one string: the old depth regex's worst
        '"\\' * 3_900_000,  # quotes and escapes
        "a" * 15_800_000,
    ],
)
def test_a_config_near_its_cap_costs_seconds_and_megabytes(model, filler):
    text = json.dumps({**LLAMA, "x": filler})
    assert 15_000_000 < len(text) < 16_000_000
    (model / "config.json").write_text(text)
    run = apron_measured(["plan", model, "-c", "8192"], model)
    assert run.exit_code == 0, run.stderr
    assert run.peak_rss_mb < 300 and run.cpu_seconds < 15, (run.peak_rss_mb, run.cpu_seconds)


def test_a_config_of_a_million_lists_costs_seconds_and_megabytes(model):
    (model / "config.json").write_text(json.dumps({**LLAMA, "x": [[0]] * 900_000}))
    run = apron_measured(["plan", model, "-c", "8192"], model)
    assert run.exit_code == 0, run.stderr
    assert run.peak_rss_mb < 300 and run.cpu_seconds < 15, (run.peak_rss_mb, run.cpu_seconds)


def test_a_safetensors_header_at_its_100_mb_cap_costs_seconds_and_megabytes(model):
    header = {"__metadata__": {"x": "a" * 99_000_000}}
    header["w"] = {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}
    safetensors(model / "model.safetensors", header, b"\0" * 4)
    run = apron_measured(["plan", model, "-c", "8192"], model)
    assert run.exit_code == 0, run.stderr
    assert "weights 4 B" in run.stdout
    assert run.peak_rss_mb < 400 and run.cpu_seconds < 15, (run.peak_rss_mb, run.cpu_seconds)


def test_a_sparse_3_gb_config_is_refused_before_reading(model):
    with (model / "config.json").open("wb") as handle:
        handle.truncate(3_000_000_000)
    run = apron_measured(["plan", model], model)
    assert run.exit_code == 2 and "apron reads at most 16,000,000 B" in run.stderr
    assert run.peak_rss_mb < 300, run.peak_rss_mb


def test_a_name_the_system_refuses_is_one_line(model):
    long = "a" * 5000
    refused(apron("plan", model / long), "cannot read")
    refused(apron("plan", "--sample", "llama-3.1-8b", "--weights", model / long), "cannot read")
    refused(apron("gguf", model / long), "cannot read")


def test_thousands_of_shards_are_refused_before_reading_them(model):
    from apron.weights import MAX_SHARDS

    header = {"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}
    for i in range(MAX_SHARDS + 1):
        safetensors(model / f"x{i}.safetensors", header, b"\0\0")
    refused(apron("plan", model), f"{MAX_SHARDS + 1:,} .safetensors files; apron reads")


# -- the Hugging Face cache ---------------------------------------------------------------------

COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = tmp_path / "hf" / "hub" / "models--meta-llama--Llama-3.1-8B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / "snapshots" / COMMIT / "config.json").write_text(json.dumps(LLAMA))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": 1}))
    return repo


def test_a_ref_naming_a_path_out_of_snapshots_is_not_followed(cache):
    (cache / "refs" / "main").write_text("../../../elsewhere")
    refused(apron("plan", cache), "refs/main names '../../../elsewhere', which is not a snapshot")
    # by model id, huggingface_hub's own lookup finds no such snapshot: not in the cache
    refused(apron("plan", "meta-llama/Llama-3.1-8B"), "holds no config.json for it")


def test_a_3_gb_ref_is_refused_before_reading(cache):
    with (cache / "refs" / "main").open("wb") as handle:
        handle.truncate(3_000_000_000)
    run = apron_measured(["plan", cache], cache)
    assert run.exit_code == 2 and "apron reads at most 1,024 B" in run.stderr, run.stderr
    assert run.peak_rss_mb < 300, run.peak_rss_mb
    refused(apron("plan", "meta-llama/Llama-3.1-8B"), "refs/main is 3,000,000,000 B")


def test_a_fifo_ref_is_refused_without_blocking(cache):
    (cache / "refs" / "main").unlink()
    os.mkfifo(cache / "refs" / "main")
    refused(apron("plan", cache), "refs/main is not a regular file (a FIFO)")
    refused(apron("plan", "meta-llama/Llama-3.1-8B"), "refs/main is not a regular file (a FIFO)")


def test_a_revision_with_dot_dot_is_refused(cache):
    refused(apron("plan", "meta-llama/Llama-3.1-8B@../../x"), "climbs out of the cache's refs/")


def test_a_good_ref_still_resolves(cache):
    data = json.loads(answered(apron("plan", "meta-llama/Llama-3.1-8B", "-c", "8192", "--json")))
    assert data["prediction"]["kv_bytes_per_token"] == 131_072
