"""`apron plan`: bad input gets one clear message and exit 2; good input prints or emits JSON.
Also: importing apron pulls in no extractor or parser code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import ApronInputError, load_config, plan
from apron.command_line.cli import app

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["plan", *args])


def test_sample_prints_a_labelled_prediction():
    result = run("--sample", "deepseek-v3", "--context", "32768")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "PREDICTION" in out and "MLA latent cache" in out
    # 61 layers x (512 + 64) x 2 B = 70,272 B/token = 68.6 KiB; x 32,768 = 2.14 GiB
    assert "KV 68.6 KiB/token, 2.14 GiB at 32,768 tokens" in out
    assert "vLLM 0231dd5467c6" in out  # the vLLM commit it used
    assert "DeepseekV3ForCausalLM: registered in vLLM" in out


def test_verbose_adds_the_arithmetic_and_citations():
    result = run("--sample", "deepseek-v3", "--context", "32768", "--verbose")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "70,272 B" in out and "2,302,672,896 B" in out
    assert "0231dd5467c61dca76f66269b6298a43772b3519" in out
    assert "is_deepseek_mla" in out


@pytest.mark.parametrize(
    "name",
    [
        "llama-3.1-8b",
        "deepseek-v3",
        "gemma-3-27b",
        "jamba-v0.1",
        "mamba-codestral-7b",
        "falcon-7b",
        "mpt-7b",
        "llama-7b",
    ],
)
def test_every_sample_plans(name):
    result = run("--sample", name)
    assert result.exit_code == 0, result.output


def test_json_output_is_the_plan_model():
    result = run("--sample", "jamba-v0.1", "--context", "4096", "--batch", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["label"] == "prediction"
    assert data["request"] == {
        "context": 4096,
        "context_source": "--context",
        "kv_dtype": "bf16",
        "kv_dtype_bytes": 2,
        "batch": 3,
        "max_model_len": 262144,
        "max_model_len_source": "max_position_embeddings = 262,144",
        "context_warnings": [],
        "ssm_dtype": "",
        "ssm_dtype_source": "",
        "kv_dtype_source": "",
        "tp": 1,
    }
    assert data["schema_version"] == 4
    assert data["prediction"]["mechanism"] == "hybrid_ssm"
    assert data["state_bytes_for_batch"] == 3 * 8_716_288
    assert {e["engine"] for e in data["engines"]} >= {"vllm"}
    assert data["constraints"][0]["commit"]


def test_config_file_and_directory(tmp_path):
    config = json.loads((REPO / "apron/samples/llama-3.1-8b.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    by_dir = run(str(tmp_path), "--context", "100", "--json")
    by_file = run(str(tmp_path / "config.json"), "--context", "100", "--json")
    assert by_dir.exit_code == by_file.exit_code == 0
    assert json.loads(by_dir.stdout)["prediction"]["kv_bytes_at_context"] == 131_072 * 100


def test_missing_fields_are_not_an_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"architectures": ["MysteryForCausalLM"], "model_type": "mystery"}')
    result = run(str(path), "--context", "10")
    assert result.exit_code == 0, result.output
    assert "unknown" in result.stdout and "missing fields" in result.stdout


def bad(*args: str) -> str:
    result = run(*args)
    assert result.exit_code == 2, result.output
    return " ".join(result.stderr.split())


def test_not_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("architectures: [Llama]\n")
    assert "is not valid JSON" in bad(str(path))


def test_not_utf8(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert "is not a JSON file" in bad(str(path))


def test_json_not_an_object(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('[{"model_type": "llama"}]')
    assert "JSON but not an object (found list)" in bad(str(path))


def test_gguf_file(tmp_path):
    # #33 item 4: a GGUF on `apron plan` gives llama.cpp's figures, as `apron gguf` does
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 32)
    # (one with no architecture: read as llama.cpp reads it, which refuses it)
    message = bad(str(path))
    assert "llama.cpp at 0253fb21f595 refuses it: unknown model architecture" in message


def test_directory_of_gguf_files(tmp_path):
    (tmp_path / "model-Q4_K_M.gguf").write_bytes(b"GGUF\x03\x00")
    assert "holds GGUF files and no config.json" in bad(str(tmp_path))


def test_adapter_only_directory(tmp_path):
    (tmp_path / "adapter_config.json").write_text(
        json.dumps(
            {"peft_type": "LORA", "base_model_name_or_path": "meta-llama/Llama-3.1-8B", "r": 16}
        )
    )
    (tmp_path / "adapter_model.safetensors").write_bytes(b"\x00")
    message = bad(str(tmp_path))
    assert "LoRA/PEFT adapter" in message and "base model" in message
    assert "meta-llama/Llama-3.1-8B" in message


def test_adapter_config_given_directly(tmp_path):
    path = tmp_path / "adapter_config.json"
    path.write_text(json.dumps({"peft_type": "LORA", "base_model_name_or_path": "x/y"}))
    assert "give apron the base model" in bad(str(path)).lower()


def test_directory_without_config(tmp_path):
    assert "without a config.json" in bad(str(tmp_path))


def test_missing_path(tmp_path):
    assert "does not exist" in bad(str(tmp_path / "nope.json"))


@pytest.mark.parametrize("value", ["0", "-5"])
def test_context_must_be_positive(value):
    message = bad("--sample", "llama-3.1-8b", "--context", value)
    assert f"--context = {value}; it must be 1..2,147,483,647" in " ".join(message.split())


def test_unknown_dtype():
    message = bad("--sample", "llama-3.1-8b", "--kv-dtype", "int3")
    assert "unknown KV dtype 'int3'" in message and "bf16" in message


def test_batch_must_be_positive():
    message = " ".join(bad("--sample", "llama-3.1-8b", "--batch", "0").split())
    assert "--batch = 0; it must be 1..2,147,483,647" in message


def test_unknown_sample():
    message = bad("--sample", "gpt-9")
    assert "no sample named 'gpt-9'" in message and "deepseek-v3" in message


def test_config_and_sample_together_or_neither():
    assert "give a CONFIG path or --sample NAME" in bad()
    assert "give a CONFIG path or --sample NAME" in bad("x.json", "--sample", "deepseek-v3")


def test_library_raises_the_same_errors():
    with pytest.raises(ApronInputError, match="unknown KV dtype"):
        plan({"model_type": "llama"}, kv_dtype="e4m3")
    with pytest.raises(ApronInputError, match="LoRA/PEFT adapter"):
        load_config({"peft_type": "LORA", "base_model_name_or_path": "a/b"})


def test_console_script_exit_code(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    script = Path(sys.executable).parent / "apron"
    assert script.exists(), "the apron console script is installed with the project"
    done = subprocess.run(
        [str(script), "plan", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "error:" in done.stderr and "not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr


def test_importing_apron_imports_only_generated():
    code = (
        "import sys, apron; p = apron.plan(apron.load_sample('deepseek-v3')); "
        "bad = sorted(m for m in sys.modules if m.startswith('apron.extractors') "
        "or m.split('.')[0] in ('libcst', 'tree_sitter', 'tree_sitter_python', "
        "'tree_sitter_cpp', 'git', 'markdown_it', 'pydantic', 'typer', 'rich', 'gguf', "
        "'numpy')); "
        "assert [s.status for s in p.support if s.engine == 'vllm'] == ['registered']; "
        "print(bad)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    # no extractor or parser code, and not even pydantic/typer/rich: the CLI and --json add those;
    # nor gguf-py and numpy (about 150 ms): only reading a .gguf file needs them
    assert done.stdout.strip() == "[]"
