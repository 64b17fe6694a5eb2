"""`apron plan ORG/NAME[@REV]` and cache folders, read from a local Hugging Face cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import ApronInputError, load_config
from apron.command_line.cli import app
from apron.hf_cache import cache_dir

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "apron/samples/llama-3.1-8b.json"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
OLDER = "d04e592bb4f6aa9cfee91e2e20afa771667e1d4b"
runner = CliRunner()


def fake_cache(hub: Path) -> Path:
    """models--meta-llama--Llama-3.1-8B with refs/main -> COMMIT, and an OLDER snapshot whose
    config.json has 16 layers; files are symlinks into blobs/ as huggingface_hub lays them."""
    repo = hub / "models--meta-llama--Llama-3.1-8B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    (repo / "blobs").mkdir()
    config = json.loads(SAMPLE.read_text())
    for commit, layers, blob in ((COMMIT, 32, "a" * 40), (OLDER, 16, "b" * 40)):
        (repo / "blobs" / blob).write_text(json.dumps({**config, "num_hidden_layers": layers}))
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").symlink_to(Path("../../blobs") / blob)
    return repo


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fake_cache(tmp_path / "hf" / "hub")
    return tmp_path / "hf"


def kv_per_token(*args: str) -> int:
    result = runner.invoke(app, ["plan", *args, "--context", "8192", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["prediction"]["kv_bytes_per_token"]


def test_model_id_from_hf_home(hf_home):
    # 32 layers x 8 KV heads x (128 + 128) x 2 B
    assert kv_per_token("meta-llama/Llama-3.1-8B") == 131_072
    source = load_config("meta-llama/Llama-3.1-8B").source
    assert source == str(
        hf_home / f"hub/models--meta-llama--Llama-3.1-8B/snapshots/{COMMIT}/config.json"
    )


def test_model_id_at_a_revision(hf_home):
    assert kv_per_token(f"meta-llama/Llama-3.1-8B@{OLDER}") == 65_536  # 16 layers
    assert kv_per_token("meta-llama/Llama-3.1-8B@main") == 131_072


def test_hf_hub_cache_wins_over_hf_home(tmp_path, monkeypatch):
    fake_cache(tmp_path / "elsewhere")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert cache_dir() == tmp_path / "elsewhere"
    assert kv_per_token("meta-llama/Llama-3.1-8B") == 131_072


def test_cache_folders_are_model_directories(hf_home):
    repo = hf_home / "hub" / "models--meta-llama--Llama-3.1-8B"
    assert kv_per_token(str(repo)) == 131_072  # refs/main
    assert kv_per_token(str(repo / "snapshots" / OLDER)) == 65_536


def test_cache_folder_without_refs_and_two_snapshots(hf_home):
    repo = hf_home / "hub" / "models--meta-llama--Llama-3.1-8B"
    (repo / "refs" / "main").unlink()
    with pytest.raises(ApronInputError, match="without refs/main and with 2 snapshots"):
        load_config(repo)


def test_model_id_not_in_the_cache(hf_home):
    result = runner.invoke(app, ["plan", "meta-llama/Llama-3.1-70B"])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert f"the Hugging Face cache {hf_home / 'hub'} holds no config.json for it at main" in (
        message
    )
    assert "hf download meta-llama/Llama-3.1-70B config.json" in message
    with pytest.raises(ApronInputError, match="no config.json for it at revision v2"):
        load_config("meta-llama/Llama-3.1-8B@v2")


def test_done_when_in_a_fresh_process(tmp_path):
    """The issue's check: HF_HOME at a cache, HF_HUB_OFFLINE=1, `apron plan ORG/NAME`."""
    fake_cache(tmp_path / "hf" / "hub")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-c", "from apron.command_line.cli import main; main()", "plan",
         "meta-llama/Llama-3.1-8B", "--context", "8192", "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["prediction"]["kv_bytes_per_token"] == 131_072
