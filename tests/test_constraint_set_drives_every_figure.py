"""plan(constraints=X) evaluates X and nothing else: a copy of generated/ with one rule changed,
passed in, moves the figure that rule decides (the bump's impact check depends on it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apron.constraints import default_directory, load_constraints
from apron.planning.planner import plan

QWEN3_NO_HEAD_DIM = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 36,
    "max_position_embeddings": 40960,
    "torch_dtype": "bfloat16",
}


@pytest.fixture
def edited(tmp_path):
    """edited(path, old, new): a copy of the installed generated/ with one text replaced."""

    def make(relative: str, old: str, new: str):
        root = tmp_path / f"generated-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(default_directory(), root, ignore=shutil.ignore_patterns("__pycache__"))
        path = root / relative
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} is not once in {relative}"
        path.write_text(text.replace(old, new), encoding="utf-8")
        return load_constraints(root)

    return make


def test_the_configuration_classes_come_from_the_set(edited):
    # Qwen3Config's class default head_dim 128 fills the config; 256 in the copy doubles KV
    before = plan(QWEN3_NO_HEAD_DIM, context=1024)
    changed = edited(
        "transformers/config_classes.py",
        '("Qwen3Config", "head_dim", 128, True)',
        '("Qwen3Config", "head_dim", 256, True)',
    )
    after = plan(QWEN3_NO_HEAD_DIM, context=1024, constraints=changed)
    # 36 layers x 8 KV heads x (128 + 128) x 2 B = 147,456 B/token
    assert before.prediction.kv_bytes_per_token == 147_456
    assert after.prediction.kv_bytes_per_token == 2 * 147_456


def test_the_kv_head_alias_scan_comes_from_the_set(edited):
    changed = edited(
        "vllm/kv_head_aliases.py",
        'KvHeadAlias(position=2, key="num_key_value_heads"',
        'KvHeadAlias(position=2, key="num_key_value_heads_renamed"',
    )
    before = plan(QWEN3_NO_HEAD_DIM, context=1024)
    after = plan(QWEN3_NO_HEAD_DIM, context=1024, constraints=changed)
    old = next(v for v in before.engines if v.engine == "vllm")
    new = next(v for v in after.engines if v.engine == "vllm")
    # 8 KV heads found under num_key_value_heads: 36 x 8 x (128 + 128) x 2 = 147,456 B/token;
    # with that key gone from vLLM's scan, vLLM falls back to the 32 attention heads
    assert old.kv_bytes_per_token == 147_456
    assert new.kv_bytes_per_token == 36 * 32 * 256 * 2


def test_the_state_calculators_come_from_the_set(edited):
    config = json.loads(Path("apron/samples/mamba-codestral-7b.json").read_text(encoding="utf-8"))
    before = plan(config, context=1024)
    changed = edited(
        "vllm/mamba_state_calculators.py",
        '(("call", "divide", "num_heads", "tp_world_size"), "head_dim", "state_size")',
        '(("call", "divide", "num_heads", "tp_world_size"), ("*", "head_dim", 2), "state_size")',
    )
    after = plan(config, context=1024, constraints=changed)
    old = next(v for v in before.engines if v.engine == "vllm").state_bytes_per_sequence
    new = next(v for v in after.engines if v.engine == "vllm").state_bytes_per_sequence
    assert old and new and new > old


def test_the_kv_dtype_literals_come_from_the_set(edited, tmp_path):
    config = dict(
        QWEN3_NO_HEAD_DIM,
        head_dim=128,
        quantization_config={"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"},
    )
    before = plan(config, context=1024, kv_dtype="auto")
    assert next(v for v in before.engines if v.engine == "vllm").kv_bytes_per_token == 73_728
    changed = edited(
        "vllm/kv_dtype_literals.py",
        'key="fp8", value="fp8_e4m3"',
        'key="fp8", value="nvfp4"',
    )
    after = plan(config, context=1024, kv_dtype="auto", constraints=changed)
    vllm = next(v for v in after.engines if v.engine == "vllm")
    assert vllm.kv_bytes_per_token is None and any("nvfp4" in n for n in vllm.notes)


def test_the_memory_fraction_comes_from_the_set(edited):
    config = dict(QWEN3_NO_HEAD_DIM, head_dim=128)
    options = {"context": 4096, "gpu_memory": 80 * 2**30, "weights_bytes": 16 * 10**9}
    before = plan(config, **options)
    changed = edited(
        "vllm/serving_defaults.py",
        'setting="gpu_memory_utilization", role="memory_fraction", kind="literal", value="0.92"',
        'setting="gpu_memory_utilization", role="memory_fraction", kind="literal", value="0.5"',
    )
    after = plan(config, **options, constraints=changed)
    old = next(v for v in before.engines if v.engine == "vllm").capacity
    new = next(v for v in after.engines if v.engine == "vllm").capacity
    assert old.memory_fraction == 0.92 and new.memory_fraction == 0.5
    assert new.kv_tokens < old.kv_tokens


# the loader itself, and the entry points that take the installed generated/ when the caller
# gives no set
DEFAULT_SET_AT = {"constraints.py", "planner.py", "config.py", "cli.py", "impact.py"}


def test_no_calculator_module_loads_generated_on_its_own():
    import ast

    package = Path(__file__).resolve().parent.parent / "apron"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "apron.generated"
            ):
                offenders.append(f"{path.name}: imports {node.module}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("load_constraints", "load_engine")
                and path.name not in DEFAULT_SET_AT
            ):
                offenders.append(f"{path.name}: calls {node.func.id}()")
    assert offenders == []
