"""Issue 27 item 1: `apron plan ORG/NAME` not in the cache reads the model's metadata from the Hub
when HF_HUB_OFFLINE is not set: config.json, the safetensors index and hf_quant_config.json with
hf_hub_download (JSON only), the safetensors headers with HfApi.get_safetensors_metadata (range
requests) when there is no index, with HF_TOKEN. The network is mocked: no test reaches the Hub."""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub.utils import (
    EntryNotFoundError,
    GatedRepoError,
    NotASafetensorsRepoError,
    SafetensorsFileMetadata,
    SafetensorsRepoMetadata,
    TensorInfo,
)
from typer.testing import CliRunner

from apron import hf_cache
from apron.command_line.cli import app

SAMPLE = Path(__file__).resolve().parent.parent / "apron/samples/llama-3.1-8b.json"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
LLAMA_31_8B_TOTAL = 16_060_522_496  # meta-llama/Llama-3.1-8B index metadata.total_size
runner = CliRunner()


class FakeHub:
    """hf_hub_download and get_safetensors_metadata over a dict of the repo's files; records
    every file asked for and every token given."""

    def __init__(self, hub: Path, files: dict[str, str], headers=None, error=None):
        self.hub, self.files, self.headers, self.error = hub, files, headers, error
        self.downloads: list[str] = []
        self.tokens: list[str | None] = []
        self.header_reads = 0

    def download(self, repo_id, filename, *, revision=None, cache_dir=None, token=None, **kw):
        assert kw == {}, kw
        self.downloads.append(filename)
        self.tokens.append(token)
        if self.error is not None:
            raise self.error
        if filename not in self.files:
            raise EntryNotFoundError(f"{filename} not in {repo_id}")
        org, name = repo_id.split("/")
        snapshot = Path(cache_dir) / f"models--{org}--{name}" / "snapshots" / COMMIT
        snapshot.mkdir(parents=True, exist_ok=True)
        (snapshot / filename).write_text(self.files[filename])
        (snapshot.parent.parent / "refs").mkdir(exist_ok=True)  # as hf_hub_download lays it out
        (snapshot.parent.parent / "refs" / (revision or "main")).write_text(COMMIT)
        return str(snapshot / filename)

    def safetensors_metadata(self, api, repo_id, *, revision=None, **kw):
        self.header_reads += 1
        self.tokens.append(api.token)
        if self.headers is None:
            raise NotASafetensorsRepoError("no safetensors")
        return self.headers


@pytest.fixture
def online(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.setattr(hf_cache, "_FROM_HUB", {})

    def install(files, headers=None, error=None) -> FakeHub:
        fake = FakeHub(tmp_path / "hf" / "hub", files, headers, error)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake.download)
        monkeypatch.setattr(
            huggingface_hub.HfApi,
            "get_safetensors_metadata",
            lambda api, repo_id, **kw: fake.safetensors_metadata(api, repo_id, **kw),
        )
        return fake

    return install


def plan_json(*args: str) -> dict:
    result = runner.invoke(app, ["plan", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_config_and_index_are_read_from_the_hub(online):
    index = {"metadata": {"total_size": LLAMA_31_8B_TOTAL}, "weight_map": {
        "lm_head.weight": "model-00004-of-00004.safetensors"}}  # fmt: skip
    fake = online(
        {"config.json": SAMPLE.read_text(), "model.safetensors.index.json": json.dumps(index)}
    )
    data = plan_json("meta-llama/Llama-3.1-8B", "--context", "8192")
    # 32 layers x 8 KV heads x (128 + 128) x 2 B
    assert data["prediction"]["kv_bytes_per_token"] == 131_072
    assert data["weights"]["total_bytes"] == LLAMA_31_8B_TOTAL  # the index total, no shard read
    assert fake.downloads == ["config.json", "model.safetensors.index.json", "hf_quant_config.json"]
    assert all(name.endswith(".json") for name in fake.downloads)  # never a weight file
    assert fake.header_reads == 0  # the index gives the total: no range request
    assert set(fake.tokens) == {"hf_test_token"}


def test_without_an_index_the_headers_are_read_by_range_request(online):
    # one model.safetensors: embed 128,256 x 4,096 BF16 = 1,050,673,152 B; norm 4,096 F32 =
    # 16,384 B; total 1,050,689,536 B
    embed = TensorInfo(dtype="BF16", shape=[128_256, 4_096], data_offsets=(0, 1_050_673_152))
    norm = TensorInfo(dtype="F32", shape=[4_096], data_offsets=(1_050_673_152, 1_050_689_536))
    headers = SafetensorsRepoMetadata(
        metadata=None,
        sharded=False,
        weight_map={"embed": "model.safetensors", "norm": "model.safetensors"},
        files_metadata={
            "model.safetensors": SafetensorsFileMetadata(
                metadata={}, tensors={"embed": embed, "norm": norm}
            )
        },
    )
    fake = online({"config.json": SAMPLE.read_text()}, headers)
    data = plan_json("meta-llama/Llama-3.1-8B", "--context", "8192")
    assert data["weights"]["total_bytes"] == 1_050_689_536
    assert "the Hub" in data["weights"]["source"]
    assert fake.header_reads == 1
    assert all(name.endswith(".json") for name in fake.downloads)


def test_a_header_from_the_hub_is_checked_like_a_local_one(online):
    bad = TensorInfo(dtype="BF16", shape=[10], data_offsets=(0, 4))  # 10 x 2 B is not 4 B
    headers = SafetensorsRepoMetadata(
        metadata=None,
        sharded=False,
        weight_map={"w": "model.safetensors"},
        files_metadata={
            "model.safetensors": SafetensorsFileMetadata(metadata={}, tensors={"w": bad})
        },
    )
    online({"config.json": SAMPLE.read_text()}, headers)
    result = runner.invoke(app, ["plan", "meta-llama/Llama-3.1-8B"])
    assert result.exit_code == 2
    assert "data_offsets [0, 4] span 4 B" in " ".join(result.output.split())


def test_a_gated_model_names_hf_token(online):
    error = GatedRepoError.__new__(GatedRepoError)  # its __init__ wants an HTTP response
    Exception.__init__(error, "401 Client Error: gated repo")
    online({}, error=error)
    result = runner.invoke(app, ["plan", "meta-llama/Llama-3.1-8B"])
    assert result.exit_code == 2, result.output
    assert "is gated: accept its terms on the Hub and set HF_TOKEN" in " ".join(
        result.output.split()
    )


def test_a_network_failure_is_exit_2_naming_hf_hub_offline(online):
    online({}, error=OSError("connection refused"))
    result = runner.invoke(app, ["plan", "meta-llama/Llama-3.1-8B"])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "could not be read from the Hub (OSError: connection refused)" in message
    assert "HF_HUB_OFFLINE=1" in message


def test_hf_hub_offline_never_reaches_the_hub(online, monkeypatch):
    fake = online({"config.json": SAMPLE.read_text()})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = runner.invoke(app, ["plan", "meta-llama/Llama-3.1-8B"])
    assert result.exit_code == 2
    assert "with HF_HUB_OFFLINE set apron reads only the cache" in " ".join(result.output.split())
    assert fake.downloads == [] and fake.header_reads == 0


def test_a_model_in_the_cache_is_not_read_from_the_hub(online):
    fake = online({"config.json": SAMPLE.read_text()})
    plan_json("meta-llama/Llama-3.1-8B")  # the first run fills the cache
    fake.downloads.clear()
    plan_json("meta-llama/Llama-3.1-8B")
    assert fake.downloads == []


def test_no_answer_from_the_hub_is_a_network_failure_not_a_missing_file(online):
    # huggingface_hub raises LocalEntryNotFoundError (a subclass of EntryNotFoundError) when the
    # Hub cannot be reached and the cache does not hold the file: that is not "no config.json"
    from huggingface_hub.utils import LocalEntryNotFoundError

    online({}, error=LocalEntryNotFoundError("cannot reach the Hub and not in the cache"))
    result = runner.invoke(app, ["plan", "Qwen/Qwen3-8B"])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "has no config.json" not in message
    assert "could not be reached (a network failure: LocalEntryNotFoundError)" in message
    assert "set HF_HUB_OFFLINE=1" in message and "hf download Qwen/Qwen3-8B config.json" in message


def test_a_missing_file_is_said_only_when_the_hub_said_so(online):
    online({})  # the fake Hub answers EntryNotFoundError (its 404) for config.json
    result = runner.invoke(app, ["plan", "Qwen/Qwen3-8B"])
    assert result.exit_code == 2
    assert "is on the Hub but has no config.json" in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("given", "revision"),
    [
        ("https://huggingface.co/meta-llama/Llama-3.1-8B", "main"),
        ("https://huggingface.co/meta-llama/Llama-3.1-8B/tree/v1.0", "v1.0"),
        ("https://hf.co/meta-llama/Llama-3.1-8B/blob/abc123/config.json", "abc123"),
    ],
)
def test_a_model_url_is_read_like_its_id(online, given, revision):
    fake = online({"config.json": SAMPLE.read_text()})
    asked = []
    download = huggingface_hub.hf_hub_download

    def spy(repo_id, filename, **kw):
        asked.append((repo_id, kw.get("revision")))
        return download(repo_id, filename, **kw)

    huggingface_hub.hf_hub_download = spy
    try:
        data = plan_json(given)
    finally:
        huggingface_hub.hf_hub_download = fake.download
    assert data["architecture"] == "LlamaForCausalLM"
    assert asked[0] == ("meta-llama/Llama-3.1-8B", revision)


def test_revision_reads_that_revision_and_must_agree_with_one_named(online):
    fake = online({"config.json": SAMPLE.read_text()})
    seen = []
    download = fake.download

    def spy(repo_id, filename, **kw):
        seen.append(kw.get("revision"))
        return download(repo_id, filename, **kw)

    huggingface_hub.hf_hub_download = spy
    try:
        plan_json("meta-llama/Llama-3.1-8B", "--revision", "v1.2")
    finally:
        huggingface_hub.hf_hub_download = fake.download
    assert seen[0] == "v1.2"
    result = runner.invoke(app, ["plan", "meta-llama/Llama-3.1-8B@v2", "--revision", "v3"])
    assert result.exit_code == 2
    assert "names revision v2, --revision v3; give one" in result.output
